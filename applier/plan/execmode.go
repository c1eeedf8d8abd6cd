package plan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vplayer/vplayer/event"
)

// Exec modes: what a row change that does not match the target does (--exec-mode, named after
// replica_exec_mode).
const (
	// ExecModeStrict: an UPDATE or DELETE whose row is absent, or an INSERT of a key that exists,
	// is a terminal error.
	ExecModeStrict = "strict"
	// ExecModeIdempotent: the after image is written, a delete of an absent row is skipped, and
	// each one is counted and logged.
	ExecModeIdempotent = "idempotent"
)

// Mismatch is the kind of a row change that does not match the target. Its values are stable
// and used as the value of a metrics label.
type Mismatch string

const (
	// UpdateMissing: an UPDATE whose row is absent on the target.
	UpdateMissing Mismatch = "update_missing"
	// DeleteMissing: a DELETE whose row is absent on the target.
	DeleteMissing Mismatch = "delete_missing"
	// InsertExists: an INSERT of a key that already exists on the target.
	InsertExists Mismatch = "insert_exists"
)

func (m Mismatch) describe() string {
	switch m {
	case UpdateMissing:
		return "UPDATE of a row that is absent on the target"
	case DeleteMissing:
		return "DELETE of a row that is absent on the target"
	case InsertExists:
		return "INSERT of a key that already exists on the target"
	}
	return string(m)
}

// MismatchError is a row change that does not match the target, in strict mode: terminal. It
// names the table, the key values of the rows (never other columns), the source transaction and
// the position the target transaction started from.
type MismatchError struct {
	Kind  Mismatch
	Table string   // `schema`.`name` on the target
	Key   string   // the key columns, `id` or (`a`,`b`)
	Keys  []string // key values of the mismatched rows, as SQL literals; candidates when Exact is false
	Exact bool     // Keys are the mismatched rows themselves, not the statement's candidates
	GTID  string   // the source transaction (or first..last of those that the statement holds)
	Pos   string   // the committed position the target transaction started from
	// Cause is the target's own error, for an INSERT of an existing key (its duplicate-key error).
	Cause error
	// Partial says the change came as a partial row image (binlog_row_image MINIMAL or NOBLOB):
	// no mode can write the row it misses, the image lacking columns.
	Partial bool
}

func (e *MismatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "row mismatch: %s: table %s", e.Kind.describe(), e.Table)
	if len(e.Keys) > 0 {
		if e.Exact {
			fmt.Fprintf(&b, ", key %s=%s", e.Key, strings.Join(e.Keys, ","))
		} else {
			fmt.Fprintf(&b, ", key %s one of %s", e.Key, strings.Join(e.Keys, ","))
		}
	}
	if e.Cause != nil {
		fmt.Fprintf(&b, " (%v)", e.Cause)
	}
	if e.GTID != "" {
		fmt.Fprintf(&b, ", source transaction %s", e.GTID)
	}
	if e.Partial {
		fmt.Fprintf(&b, ", after position %s; the source logged a partial row image (binlog_row_image MINIMAL or NOBLOB), which lacks columns of the row: no exec mode can write it, so the stream stops here: re-sync the table (re-create the workflow so that it copies it again), and log FULL images if rows can go missing on the target", e.Pos)
		return b.String()
	}
	fmt.Fprintf(&b, ", after position %s; --exec-mode strict stops here: correct the target's row, or run with --exec-mode idempotent to write the source's image", e.Pos)
	return b.String()
}

// Is makes errors.Is(err, ErrRowMismatch) true.
func (e *MismatchError) Is(target error) bool { return target == ErrRowMismatch }

// Unwrap returns the target's error, if any.
func (e *MismatchError) Unwrap() error { return e.Cause }

// ErrRowMismatch is matched by every *MismatchError.
var ErrRowMismatch = errors.New("row mismatch")

// Check is what one statement of a batch must affect: Want rows (rows matched, the target pool
// running with clientFoundRows). A shortfall (or, for Want 0, any row) is a mismatch of Kind.
type Check struct {
	Stmt int   // the statement's index in the batch
	Want int64 // rows the statement must match: a shortfall, or for 0 any row, is a mismatch
	// Counted marks the check of a counted upsert (appendCountedUpsert): Want is 1, and 0 means
	// that at least one of its keys was absent, in this transaction: a mismatch, whose keys are
	// then looked up.
	Counted bool
	Kind    Mismatch
	Table   *Table
	Keys    []string    // key literals of the statement's rows; nil when rows or row holds them
	rows    []event.Row // the rows of a multi-row statement, when Keys is nil
	row     event.Row   // the row of a one-row statement, when Keys and rows are nil
	// before says whether rows' key is in the before image (update, delete) or the after image.
	before bool
	GTID   string // the source transaction, or first..last of those the statement holds
	// Partial marks the check of an UPDATE from a partial after image: the row it misses cannot
	// be written through in idempotent mode, whose mismatch is then terminal as in strict mode.
	Partial bool
}

// expect makes the statement just begun in b carry c.
func (b *Batch) expect(c Check) {
	c.Stmt = b.n - 1
	b.checks = append(b.checks, c)
}

// KeyLiterals returns c's key literals, computing them from its rows if need be.
func (c *Check) KeyLiterals() []string {
	if c.Keys != nil {
		return c.Keys
	}
	rows := c.rows
	if rows == nil {
		rows = []event.Row{c.row}
	}
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		img := r.After
		if c.before {
			img = r.Before
		}
		if k, err := keyOf(c.Table, img); err == nil {
			out = append(out, k)
		}
	}
	return out
}

// appendTouch appends UPDATE t SET k=k WHERE key IN (keys): it changes nothing and, counted in
// rows matched, says how many of keys exist.
func appendTouch(b *Batch, t *Table, keys []string) { appendTouchShape(b, t, keys, t.updateShape) }

// appendTouchShape is appendTouch under another shape.
func appendTouchShape(b *Batch, t *Table, keys []string, shape string) {
	b.begin(shape)
	c := t.cols[t.key[0]].quoted
	b.buf = append(b.buf, "UPDATE "...)
	b.buf = append(b.buf, t.quoted...)
	b.buf = append(b.buf, " SET "...)
	b.buf = append(b.buf, c...)
	b.buf = append(b.buf, '=')
	b.buf = append(b.buf, c...)
	appendKeyIn(b, t, keys)
}
