package applier

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/vplayer/vplayer/event"
)

// The property test's source: tables of a few shapes, each row held whole (the source's truth),
// and the row changes of its transactions, each with the full rows before and after it and the
// columns its binlog images carry.

// propKind is how a column's values are held by the model and decoded by the binlog reader.
type propKind uint8

const (
	propInt     propKind = iota + 1 // INT: int64 in the model, int32 in an image
	propVarchar                     // VARCHAR: string, string
	propText                        // TEXT: string, []byte
	propBlob                        // BLOB: string, []byte
	propTime                        // DATETIME: string, string
)

// propCol is one column of a property-test table.
type propCol struct {
	name string
	ddl  string // its definition in CREATE TABLE
	kind propKind
	// def is the value the column's DEFAULT gives a row an INSERT leaves it out of (nil: NULL).
	def any
	// required: NOT NULL without a default, every INSERT names it.
	required bool
	// fnDef: DEFAULT CURRENT_TIMESTAMP, which the source computes: an insert's images always
	// carry it.
	fnDef bool
	// ci: compared under utf8mb4_general_ci (case-insensitive, trailing spaces ignored).
	ci bool
	// domain holds the values the generator draws (nil for NULL).
	domain []any
}

func (c *propCol) blob() bool { return c.kind == propText || c.kind == propBlob }

// propShape is a table of the property test.
type propShape struct {
	name string
	cols []propCol
	// key identifies rows: the primary key, else a unique key over NOT NULL columns (which
	// MariaDB logs as it logs a primary key); nil for a table without one (every column).
	key []int
	// uniques are the other unique keys.
	uniques [][]int
	keys    string // the key definitions of CREATE TABLE
	// folds: a primary key and no other unique key, so that the planner folds the table's
	// changes that come with full images.
	folds bool
}

func (s *propShape) createSQL() string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE `%s` (", s.name)
	for i, c := range s.cols {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "`%s` %s", c.name, c.ddl)
	}
	if s.keys != "" {
		b.WriteString(", " + s.keys)
	}
	b.WriteString(") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci")
	return b.String()
}

func ints(from, to int) []any {
	var out []any
	for i := from; i <= to; i++ {
		out = append(out, int64(i))
	}
	return out
}

func orNull(vals ...any) []any { return append([]any{nil}, vals...) }

// propShapes are the tables: a primary key only, with a DEFAULT column, a function default and
// TEXT and BLOB columns (full images fold); a primary key and a second unique key; a composite
// primary key with a case-insensitive string (full images fold, keys that only a collation tells
// apart); a unique NOT NULL key and no primary key; no key at all (rows that only a collation
// tells apart, duplicates).
func propShapes() []*propShape {
	long := strings.Repeat("long text ", 40)
	times := []any{"2026-01-02 03:04:05", "2026-01-02 03:04:06", "2027-12-31 23:59:59"}
	return []*propShape{
		{
			name: "pk",
			cols: []propCol{
				{name: "id", ddl: "INT NOT NULL", kind: propInt, domain: ints(1, 10)},
				{name: "a", ddl: "INT NULL", kind: propInt, domain: orNull(ints(0, 4)...)},
				{name: "d", ddl: "INT NOT NULL DEFAULT 7", kind: propInt, def: int64(7), domain: ints(5, 9)},
				{name: "tx", ddl: "TEXT NULL DEFAULT 'dflt'", kind: propText, def: "dflt", domain: orNull("", "t", "T", "t ", "é", long)},
				{name: "bl", ddl: "BLOB NOT NULL", kind: propBlob, required: true, domain: []any{"", "\x00", "b\xff\x00", strings.Repeat("\x01\x02", 200)}},
				{name: "ts", ddl: "DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP", kind: propTime, fnDef: true, domain: times},
			},
			key:   []int{0},
			keys:  "PRIMARY KEY (`id`)",
			folds: true,
		},
		{
			name: "uk",
			cols: []propCol{
				{name: "id", ddl: "INT NOT NULL", kind: propInt, domain: ints(1, 8)},
				{name: "u", ddl: "INT NULL", kind: propInt, domain: orNull(ints(1, 5)...)},
				{name: "v", ddl: "INT NOT NULL DEFAULT 3", kind: propInt, def: int64(3), domain: ints(0, 4)},
				{name: "note", ddl: "TEXT NULL", kind: propText, domain: orNull("", "n", "N")},
			},
			key:     []int{0},
			uniques: [][]int{{1}},
			keys:    "PRIMARY KEY (`id`), UNIQUE KEY `u_u` (`u`)",
		},
		{
			name: "ck",
			cols: []propCol{
				{name: "g", ddl: "INT NOT NULL", kind: propInt, domain: ints(1, 2)},
				{name: "k", ddl: "VARCHAR(8) NOT NULL COLLATE utf8mb4_general_ci", kind: propVarchar, ci: true, domain: []any{"a", "A", "a ", "b", "B", "bb"}},
				{name: "v", ddl: "INT NULL DEFAULT 1", kind: propInt, def: int64(1), domain: orNull(ints(0, 3)...)},
				{name: "tx", ddl: "TEXT NULL", kind: propText, domain: orNull("x", "X", long)},
			},
			key:   []int{0, 1},
			keys:  "PRIMARY KEY (`g`, `k`)",
			folds: true,
		},
		{
			name: "un",
			cols: []propCol{
				{name: "code", ddl: "INT NOT NULL", kind: propInt, domain: ints(1, 8)},
				{name: "a", ddl: "INT NULL", kind: propInt, domain: orNull(ints(0, 3)...)},
				{name: "tx", ddl: "TEXT NULL DEFAULT 'u'", kind: propText, def: "u", domain: orNull("", "u", "U")},
			},
			key:  []int{0},
			keys: "UNIQUE KEY `code_u` (`code`)",
		},
		{
			name: "nk",
			cols: []propCol{
				{name: "a", ddl: "INT NULL", kind: propInt, domain: orNull(ints(1, 2)...)},
				{name: "s", ddl: "VARCHAR(8) NULL DEFAULT 's' COLLATE utf8mb4_general_ci", kind: propVarchar, ci: true, def: "s", domain: orNull("a", "A", "a ")},
				{name: "tx", ddl: "TEXT NULL", kind: propText, domain: orNull("t", "T")},
				{name: "d", ddl: "INT NOT NULL DEFAULT 5", kind: propInt, def: int64(5), domain: ints(5, 6)},
			},
		},
	}
}

// propRow is a row as the model holds it: per column nil, int64 or string.
type propRow []any

// propState is the source's rows of one table, in no order; at most one per key value.
type propState struct {
	shape *propShape
	rows  []propRow
}

// normal is v as the column compares it: case and trailing spaces dropped under a collation.
func (c *propCol) normal(v any) any {
	if s, ok := v.(string); ok && c.ci {
		return strings.ToLower(strings.TrimRight(s, " "))
	}
	return v
}

// sameKey reports whether a and b hold equal values of the columns cols as the server compares
// them; a NULL equals nothing.
func (s *propShape) sameKey(cols []int, a, b propRow) bool {
	for _, i := range cols {
		if a[i] == nil || b[i] == nil || s.cols[i].normal(a[i]) != s.cols[i].normal(b[i]) {
			return false
		}
	}
	return true
}

func (r propRow) equal(o propRow) bool { return slices.Equal(r, o) }

// find returns the index of the row r exactly (byte for byte), or -1.
func (st *propState) find(r propRow) int {
	for i, o := range st.rows {
		if o.equal(r) {
			return i
		}
	}
	return -1
}

// clash reports whether r, replacing the row at index self (-1: none), would collide with
// another row on the key or a unique key.
func (st *propState) clash(r propRow, self int) bool {
	s := st.shape
	for i, o := range st.rows {
		if i == self {
			continue
		}
		if s.key != nil && s.sameKey(s.key, r, o) {
			return true
		}
		for _, u := range s.uniques {
			if s.sameKey(u, r, o) {
				return true
			}
		}
	}
	return false
}

// apply makes the change c of kind on st, as the source did, or says why the source could not
// have made it.
func (st *propState) apply(kind event.RowKind, c propChange) error {
	switch kind {
	case event.Insert:
		if st.clash(c.after, -1) {
			return fmt.Errorf("insert of %s: duplicate key", c.after)
		}
		st.rows = append(st.rows, slices.Clone(c.after))
	case event.Update:
		i := st.find(c.before)
		if i < 0 {
			return fmt.Errorf("update of %s: no such row", c.before)
		}
		if st.clash(c.after, i) {
			return fmt.Errorf("update of %s to %s: duplicate key", c.before, c.after)
		}
		st.rows[i] = slices.Clone(c.after)
	case event.Delete:
		i := st.find(c.before)
		if i < 0 {
			return fmt.Errorf("delete of %s: no such row", c.before)
		}
		st.rows = slices.Delete(st.rows, i, i+1)
	}
	return nil
}

// String renders the row for a message, as the server's values.
func (r propRow) String() string {
	parts := make([]string, len(r))
	for i, v := range r {
		parts[i] = propValue(v)
	}
	return "(" + strings.Join(parts, ",") + ")"
}

// propValue is a model value as text: NULL, a number, or a quoted string.
func propValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case int64:
		return strconv.FormatInt(x, 10)
	case string:
		return strconv.Quote(x)
	}
	return fmt.Sprintf("%T(%v)", v, v)
}

// propChange is one row change: the whole rows before and after it (nil for an insert's before
// and a delete's after).
type propChange struct {
	before, after propRow
}

// propImage names a binlog_row_image setting.
type propImage string

const (
	imageFull    propImage = "FULL"
	imageMinimal propImage = "MINIMAL"
	imageNoblob  propImage = "NOBLOB"
)

// propStmt is one rows event: one statement's changes of one table.
type propStmt struct {
	table   int // index in the shapes
	kind    event.RowKind
	image   propImage
	changes []propChange
	// beforeCols and afterCols are the columns the images carry (nil: every column).
	beforeCols, afterCols []bool
	// size is the event's size in the binary log; 0 for a small one. The model's values are
	// small: a size stands for large values the model does not hold.
	size int
}

// propTxn is one source transaction.
type propTxn struct {
	stmts []propStmt
}

// columnsOf is the bitmap of present, nil when it holds every column (as the reader gives it).
func columnsOf(present []bool) event.Columns {
	if present == nil || !slices.Contains(present, false) {
		return nil
	}
	out := make(event.Columns, (len(present)+7)/8)
	for i, ok := range present {
		if ok {
			out[i>>3] |= 1 << (i & 7)
		}
	}
	return out
}

// decoded is the model value v of column c as the binlog reader decodes it.
func (c *propCol) decoded(v any) any {
	if v == nil {
		return nil
	}
	switch c.kind {
	case propInt:
		return int32(v.(int64))
	case propText, propBlob:
		return []byte(v.(string))
	}
	return v
}

// image is the row r as a binlog image carrying the columns present (nil: every column).
func (s *propShape) image(r propRow, present []bool) []any {
	if r == nil {
		return nil
	}
	out := make([]any, len(r))
	for i, v := range r {
		if present == nil || present[i] {
			out[i] = s.cols[i].decoded(v)
		}
	}
	return out
}

// event is the rows event of st, a change of the table bt.
func (st *propStmt) event(s *propShape, bt *event.Table) *event.Event {
	e := &event.Event{Type: event.Rows, Table: bt, Kind: st.kind, Size: st.size,
		BeforeCols: columnsOf(st.beforeCols), AfterCols: columnsOf(st.afterCols)}
	if e.Size == 0 {
		e.Size = 40 * len(st.changes)
	}
	for _, c := range st.changes {
		var r event.Row
		if st.kind != event.Insert {
			r.Before = s.image(c.before, st.beforeCols)
		}
		if st.kind != event.Delete {
			r.After = s.image(c.after, st.afterCols)
		}
		e.Rows = append(e.Rows, r)
	}
	return e
}

// describe renders st for a failure message: kind, table, image, columns and rows.
func (st *propStmt) describe(s *propShape) string {
	cols := func(present []bool) string {
		if present == nil || !slices.Contains(present, false) {
			return "all"
		}
		var names []string
		for i, ok := range present {
			if ok {
				names = append(names, s.cols[i].name)
			}
		}
		return strings.Join(names, ",")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", st.kind, s.name, st.image)
	if st.size > 0 {
		fmt.Fprintf(&b, " %d bytes", st.size)
	}
	if st.kind != event.Insert {
		fmt.Fprintf(&b, " before[%s]", cols(st.beforeCols))
	}
	if st.kind != event.Delete {
		fmt.Fprintf(&b, " after[%s]", cols(st.afterCols))
	}
	for _, c := range st.changes {
		switch st.kind {
		case event.Insert:
			fmt.Fprintf(&b, " %s", c.after)
		case event.Update:
			fmt.Fprintf(&b, " %s->%s", c.before, c.after)
		case event.Delete:
			fmt.Fprintf(&b, " %s", c.before)
		}
	}
	return b.String()
}
