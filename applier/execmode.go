package applier

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

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

// MismatchKey identifies a counter of mismatches: a target table and a kind.
type MismatchKey struct {
	Table string // schema.name, unquoted
	Kind  Mismatch
}

// mismatchCounts counts the mismatches idempotent mode let through. Written by the applier,
// read by metrics.
type mismatchCounts struct {
	mu sync.Mutex
	n  map[MismatchKey]int64
}

func (c *mismatchCounts) add(k MismatchKey, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[MismatchKey]int64{}
	}
	c.n[k] += n
}

// Mismatches returns the number of row mismatches written through in idempotent mode, by table
// and kind, since the applier started.
func (s *Stats) Mismatches() map[MismatchKey]int64 {
	s.mismatches.mu.Lock()
	defer s.mismatches.mu.Unlock()
	out := make(map[MismatchKey]int64, len(s.mismatches.n))
	for k, v := range s.mismatches.n {
		out[k] = v
	}
	return out
}

// check is what one statement of a batch must affect: want rows (rows matched, the target pool
// running with clientFoundRows). A shortfall (or, for want 0, any row) is a mismatch of kind.
type check struct {
	stmt int // the statement's index in the batch
	want int64
	// counted marks the check of a counted upsert (appendCountedUpsert): want is 1, and 0 means
	// that at least one of keys was absent, in this transaction: a mismatch, whose keys are then
	// looked up.
	counted bool
	kind    Mismatch
	t       *table
	keys    []string    // key literals of the statement's rows; nil when rows or row holds them
	rows    []event.Row // the rows of a multi-row statement, when keys is nil
	row     event.Row   // the row of a one-row statement, when keys and rows are nil
	// before says whether rows' key is in the before image (update, delete) or the after image.
	before bool
	gtid   string
	// partial marks the check of an UPDATE from a partial after image: the row it misses cannot
	// be written through in idempotent mode, whose mismatch is then terminal as in strict mode.
	partial bool
}

// expect makes the statement just begun in b carry c.
func (b *batch) expect(c check) {
	c.stmt = b.n - 1
	b.checks = append(b.checks, c)
}

// keyLiterals returns c's key literals, computing them from its rows if need be.
func (c *check) keyLiterals() []string {
	if c.keys != nil {
		return c.keys
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
		if k, err := keyOf(c.t, img); err == nil {
			out = append(out, k)
		}
	}
	return out
}

// verify compares the rows each checked statement affected with what it had to. affected[i] is
// statement first+i's count. In strict mode the first mismatch is returned as a *MismatchError;
// in idempotent mode every one is counted and logged.
func (a *Applier) verify(ctx context.Context, s *session, checks []check, first int, affected []int64) error {
	for i := range checks {
		c := &checks[i]
		idx := c.stmt - first
		if idx < 0 || idx >= len(affected) {
			continue
		}
		got := affected[idx]
		var n int64
		if c.want == 0 {
			n = got
		} else {
			n = c.want - got
		}
		if n <= 0 {
			continue
		}
		if c.counted {
			return a.countedMismatch(ctx, s, c)
		}
		if a.cfg.ExecMode == ExecModeIdempotent && !c.partial {
			// A copy: the batch's checks are emptied once sent, before its commit.
			m := writtenThrough{c: *c, n: n}
			if s != nil {
				// Counted once the transaction committed (see session.unsaved).
				s.unsaved = append(s.unsaved, m)
				continue
			}
			a.countMismatch(m)
			continue
		}
		return a.mismatchError(ctx, s, c, n)
	}
	return nil
}

// writtenThrough is a mismatch idempotent mode let through: n rows of c's statement.
type writtenThrough struct {
	c check
	n int64
}

// countCommitted counts the mismatches of s's transaction, which has just committed.
func (a *Applier) countCommitted(s *session) {
	for _, m := range s.unsaved {
		a.countMismatch(m)
	}
	s.dropUnsaved()
}

// countMismatch counts and logs m, written through.
func (a *Applier) countMismatch(m writtenThrough) {
	c := &m.c
	a.stats.mismatches.add(MismatchKey{Table: c.t.schema + "." + c.t.name, Kind: c.kind}, m.n)
	if a.cfg.Copying {
		return
	}
	keys := c.keyLiterals()
	if len(keys) > 5 {
		keys = keys[:5]
	}
	a.cfg.Logger.Warn("row mismatch written through (--exec-mode idempotent)", "table", c.t.quoted, "kind", string(c.kind),
		"rows", m.n, "key", string(c.t.keyTuple), "candidates", strings.Join(keys, ","), "gtid", c.gtid)
}

// countedMismatch describes the mismatch a counted upsert found (strict mode only): the keys
// of its rows that the target lacks, looked up as committed; all of them as candidates when the
// lookup cannot tell (a key an earlier statement of this transaction removed).
func (a *Applier) countedMismatch(ctx context.Context, s *session, c *check) error {
	_, from := a.where(s)
	e := &MismatchError{Kind: c.kind, Table: c.t.quoted, Key: string(c.t.keyTuple), GTID: c.gtid, Pos: from}
	keys := c.keyLiterals()
	found, err := a.presentKeys(ctx, c.t, keys)
	if err != nil {
		a.cfg.Logger.Warn("could not tell which rows of the statement mismatched", "table", c.t.quoted, "error", err)
	}
	for _, k := range keys {
		if err == nil && !found[k] {
			e.Keys = append(e.Keys, k)
		}
	}
	if e.Exact = len(e.Keys) > 0; !e.Exact {
		e.Keys = keys[:min(len(keys), 5)]
	}
	return e
}

// mismatchError describes c's mismatch of n rows. When the statement held several keys, it
// asks the target (over another connection, so outside this transaction) which of them are
// absent, or present for an INSERT: the committed state, which is what the statement met unless
// an earlier statement of this same transaction had changed the key.
func (a *Applier) mismatchError(ctx context.Context, s *session, c *check, n int64) error {
	_, from := a.where(s)
	e := &MismatchError{Kind: c.kind, Table: c.t.quoted, Key: string(c.t.keyTuple), GTID: c.gtid, Pos: from, Partial: c.partial}
	keys := c.keyLiterals()
	if e.Key == "" {
		e.Key = "(every column)"
	}
	if len(keys) == 1 || int64(len(keys)) == n {
		e.Keys, e.Exact = keys, true
		return e
	}
	found, err := a.presentKeys(ctx, c.t, keys)
	if err != nil {
		a.cfg.Logger.Warn("could not tell which rows of the statement mismatched", "table", c.t.quoted, "error", err)
	} else {
		var exact []string
		for _, k := range keys {
			if found[k] == (c.kind == InsertExists) {
				exact = append(exact, k)
			}
		}
		if int64(len(exact)) == n {
			e.Keys, e.Exact = exact, true
			return e
		}
	}
	if len(keys) > 5 {
		keys = keys[:5]
	}
	e.Keys = keys
	return e
}

// presentKeys returns which of keys (literals of t's key, at most a few hundred) exist on the
// target, as committed: one query, one EXISTS per key.
func (a *Applier) presentKeys(ctx context.Context, t *table, keys []string) (map[string]bool, error) {
	if len(t.keyTuple) == 0 || len(keys) == 0 || len(keys) > foldChunk {
		return nil, errors.New("no keys to look up")
	}
	var q strings.Builder
	q.WriteString("SELECT ")
	for i, k := range keys {
		if i > 0 {
			q.WriteByte(',')
		}
		fmt.Fprintf(&q, "EXISTS(SELECT 1 FROM %s WHERE %s IN (%s))", t.quoted, t.keyTuple, k)
	}
	present := make([]bool, len(keys))
	ptrs := make([]any, len(keys))
	for i := range ptrs {
		ptrs[i] = &present[i]
	}
	if err := a.cfg.DB.QueryRowContext(ctx, q.String()).Scan(ptrs...); err != nil {
		return nil, err
	}
	found := map[string]bool{}
	for i, k := range keys {
		found[k] = present[i]
	}
	return found, nil
}

// appendTouch appends UPDATE t SET k=k WHERE key IN (keys): it changes nothing and, counted in
// rows matched, says how many of keys exist.
func appendTouch(b *batch, t *table, keys []string) { appendTouchShape(b, t, keys, t.updateShape) }

// appendTouchShape is appendTouch under another shape.
func appendTouchShape(b *batch, t *table, keys []string, shape string) {
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
