package plan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vplayer/vplayer/event"
)

// ErrInexact means the binlog carries a change the applier cannot apply exactly: a data change
// logged as a statement, or a partial row image that does not say enough. It is terminal: the
// stream stops at that change rather than apply something else.
var ErrInexact = errors.New("change cannot be applied exactly")

// InexactError is a change the applier cannot apply exactly. It names the table, the source
// transaction, the committed position before it, why, and what the operator can do.
type InexactError struct {
	Table string // `schema`.`name`, on the source for a statement, on the target for rows
	GTID  string // the source transaction, when the source logs GTIDs
	Pos   string // the committed position the target transaction started from
	What  string // the change and why it cannot be applied exactly
	Fix   string
}

func (e *InexactError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: %s", ErrInexact, e.What)
	if e.Table != "" {
		fmt.Fprintf(&b, ", table %s", e.Table)
	}
	if e.GTID != "" {
		fmt.Fprintf(&b, ", source transaction %s", e.GTID)
	}
	if e.Pos != "" {
		fmt.Fprintf(&b, ", after position %s", e.Pos)
	}
	fmt.Fprintf(&b, ": %s", e.Fix)
	return b.String()
}

// Is makes errors.Is(err, ErrInexact) true.
func (e *InexactError) Is(target error) bool { return target == ErrInexact }

// statementError is the terminal error of a data change the source logged as a statement.
func (p *Planner) statementError(e *event.Event) error {
	return &InexactError{GTID: e.GTID,
		What: fmt.Sprintf("the source logged a data change to a replicated table as a statement, not as rows (the session that ran it had binlog_format STATEMENT or MIXED): %q, default database %q", e.Query, e.Schema),
		Fix: "vplayer applies row events only, and skipping the statement would leave the target different from the source. Set binlog_format=ROW for every session that writes the source " +
			"(SET GLOBAL binlog_format=ROW, and reconnect or fix the clients that set it per session), then re-sync the tables the statement changed: re-create the workflow so that it copies them again"}
}

// viewOf returns the table e's rows are written through. When its images carry every column
// vplayer writes (every source with binlog_row_image=FULL, and the same columns on both sides),
// that is t. Otherwise (a MINIMAL or NOBLOB image, or a target table with columns the source's
// lacks) it is a view of t that writes only the columns the after image carries: the target's
// defaults fill the others of an inserted row, as the source's did, and an update leaves them as
// they are. Rows are found by the key the before image carries; an image that lacks a column of
// t's row identity cannot be applied exactly: an *InexactError.
func (p *Planner) viewOf(e *event.Event, t *Table) (*Table, error) {
	n := e.Table.ColumnCount
	if n >= len(t.cols) && e.BeforeCols == nil && e.AfterCols == nil {
		return t, nil
	}
	has := func(cols event.Columns, i int) bool { return i < n && cols.Has(i) }
	full := true
	if e.Kind != event.Insert {
		for _, i := range t.key {
			if !has(e.BeforeCols, i) {
				return nil, p.lacksKey(e, t, i)
			}
		}
		for _, i := range t.writable {
			full = full && has(e.BeforeCols, i)
		}
	}
	present := make([]bool, len(t.cols))
	lacks := false // the after image lacks a column the source's table has
	for _, i := range t.writable {
		present[i] = e.Kind == event.Delete || has(e.AfterCols, i)
		full = full && present[i]
		lacks = lacks || (!present[i] && i < n)
	}
	if full {
		return t, nil
	}
	return t.view(present, lacks), nil
}

// lacksKey is the error of a before image without column i of t's row identity.
func (p *Planner) lacksKey(e *event.Event, t *Table, i int) error {
	what := fmt.Sprintf("the before image of %s lacks column %s, by which the target finds the row (%s)", article(e.Kind), t.cols[i].name, t.Identity())
	fix := "log full before images: set binlog_row_image=FULL on the source (or NOBLOB where no BLOB or TEXT column identifies rows), or give the table a primary key on both sides; then re-sync the table"
	if i >= e.Table.ColumnCount {
		what = fmt.Sprintf("the target table has column %s, which identifies its rows (%s), but the source's table has only %d columns", t.cols[i].name, t.Identity(), e.Table.ColumnCount)
		fix = "identify the target's rows by columns the source has: its primary key or a unique key of the source's columns"
	}
	return &InexactError{Table: t.quoted, GTID: p.gtid, What: what, Fix: fix}
}

// view returns t writing only the columns present marks: a table for the group path (never
// folded: a fold turns updates into upserts of whole rows), whose INSERT names those columns
// and whose upsert (idempotent mode) gives the others their defaults, as the source's INSERT
// did. partial says an image lacks columns the source's table has (a MINIMAL or NOBLOB image):
// an UPDATE of a row the target lacks cannot then be written through. The columns a target
// table has beyond the source's are not partial: a row the source's image describes whole is
// written with their defaults, as a native replica does. Views are kept on t, one per set of
// columns.
func (t *Table) view(present []bool, partial bool) *Table {
	key := make([]byte, len(present)+1)
	for i, ok := range present {
		if ok {
			key[i] = 1
		}
	}
	if partial {
		key[len(present)] = 1
	}
	if v := t.views[string(key)]; v != nil {
		return v
	}
	v := *t
	v.partial, v.foldable, v.views = partial, false, nil
	v.writable, v.hasEnum = nil, false
	var absent []int
	for _, i := range t.writable {
		if !present[i] {
			absent = append(absent, i)
			continue
		}
		v.writable = append(v.writable, i)
		v.hasEnum = v.hasEnum || t.cols[i].dataType == "enum"
	}
	head := []byte("INSERT INTO " + t.quoted + " (")
	for n, i := range v.writable {
		if n > 0 {
			head = append(head, ',')
		}
		head = append(head, t.cols[i].quoted...)
	}
	v.insertHead = append(head, ") VALUES "...)
	if v.keyKind != keyAll {
		v.upsertTail = withDefaults(upsertTail(&v), t, absent)
		v.countedTail = withDefaults(countedTail(&v), t, absent)
	}
	if t.views == nil {
		t.views = map[string]*Table{}
	}
	t.views[string(key)] = &v
	return &v
}

// withDefaults appends to an upsert's assignments the columns absent: an inserted row has their
// defaults, whatever the row it meets had.
func withDefaults(tail []byte, t *Table, absent []int) []byte {
	for _, i := range absent {
		if t.isKey(i) {
			continue
		}
		c := t.cols[i].quoted
		tail = append(tail, ","+c+"=DEFAULT("+c+")"...)
	}
	return tail
}

// isKey reports whether column i identifies t's rows.
func (t *Table) isKey(i int) bool {
	for _, k := range t.key {
		if k == i {
			return true
		}
	}
	return false
}

// article is the kind of a row change with its article, for a message: an UPDATE, a DELETE.
func article(k event.RowKind) string {
	if k == event.Update || k == event.Insert {
		return "an " + k.String()
	}
	return "a " + k.String()
}
