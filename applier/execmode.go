package applier

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/vplayer/vplayer/applier/plan"
)

// MismatchKey identifies a counter of mismatches: a target table and a kind.
type MismatchKey struct {
	Table string // schema.name, unquoted
	Kind  plan.Mismatch
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

// verify compares the rows each checked statement affected with what it had to. affected[i] is
// statement first+i's count. In strict mode the first mismatch is returned as a *MismatchError;
// in idempotent mode every one is counted and logged.
func (a *Applier) verify(ctx context.Context, s *session, checks []plan.Check, first int, affected []int64) error {
	for i := range checks {
		c := &checks[i]
		idx := c.Stmt - first
		if idx < 0 || idx >= len(affected) {
			continue
		}
		got := affected[idx]
		var n int64
		if c.Want == 0 {
			n = got
		} else {
			n = c.Want - got
		}
		if n <= 0 {
			continue
		}
		if c.Counted {
			return a.countedMismatch(ctx, s, c)
		}
		if a.cfg.ExecMode == plan.ExecModeIdempotent && !c.Partial {
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
	c plan.Check
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
	a.stats.mismatches.add(MismatchKey{Table: c.Table.Schema() + "." + c.Table.Name(), Kind: c.Kind}, m.n)
	if a.cfg.Copying {
		return
	}
	keys := c.KeyLiterals()
	if len(keys) > 5 {
		keys = keys[:5]
	}
	a.cfg.Logger.Warn("row mismatch written through (--exec-mode idempotent)", "table", c.Table.Quoted(), "kind", string(c.Kind),
		"rows", m.n, "key", c.Table.KeyColumns(), "candidates", strings.Join(keys, ","), "gtid", c.GTID)
}

// countedMismatch describes the mismatch a counted upsert found (strict mode only): the keys
// of its rows that the target lacks, looked up as committed; all of them as candidates when the
// lookup cannot tell (a key an earlier statement of this transaction removed).
func (a *Applier) countedMismatch(ctx context.Context, s *session, c *plan.Check) error {
	_, from := a.where(s)
	e := &plan.MismatchError{Kind: c.Kind, Table: c.Table.Quoted(), Key: c.Table.KeyColumns(), GTID: c.GTID, Pos: from}
	keys := c.KeyLiterals()
	found, err := a.presentKeys(ctx, c.Table, keys)
	if err != nil {
		a.cfg.Logger.Warn("could not tell which rows of the statement mismatched", "table", c.Table.Quoted(), "error", err)
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
func (a *Applier) mismatchError(ctx context.Context, s *session, c *plan.Check, n int64) error {
	_, from := a.where(s)
	e := &plan.MismatchError{Kind: c.Kind, Table: c.Table.Quoted(), Key: c.Table.KeyColumns(), GTID: c.GTID, Pos: from, Partial: c.Partial}
	keys := c.KeyLiterals()
	if e.Key == "" {
		e.Key = "(every column)"
	}
	if len(keys) == 1 || int64(len(keys)) == n {
		e.Keys, e.Exact = keys, true
		return e
	}
	found, err := a.presentKeys(ctx, c.Table, keys)
	if err != nil {
		a.cfg.Logger.Warn("could not tell which rows of the statement mismatched", "table", c.Table.Quoted(), "error", err)
	} else {
		var exact []string
		for _, k := range keys {
			if found[k] == (c.Kind == plan.InsertExists) {
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
func (a *Applier) presentKeys(ctx context.Context, t *plan.Table, keys []string) (map[string]bool, error) {
	if t.KeyColumns() == "" || len(keys) == 0 || len(keys) > plan.FoldChunk {
		return nil, errors.New("no keys to look up")
	}
	var q strings.Builder
	q.WriteString("SELECT ")
	for i, k := range keys {
		if i > 0 {
			q.WriteByte(',')
		}
		fmt.Fprintf(&q, "EXISTS(SELECT 1 FROM %s WHERE %s IN (%s))", t.Quoted(), t.KeyColumns(), k)
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
