package copier

import (
	"fmt"
	"strings"
	"time"

	"github.com/vplayer/vplayer/workflow"
)

// What the copier reports while it runs: its counts for metrics and what it is doing for the
// stall watchdog (each read in O(1), from any goroutine), and its copy state, whether that is
// done, and the record's message for it.

// Work is what the copier is doing at one instant, for the stall watchdog: zero times mean "not
// at all".
type Work struct {
	// ProgressSince is when the copier, holding work (a chunk it reads or writes), last made
	// progress: read a batch of rows or completed a round trip.
	ProgressSince time.Time
	// Statement is the shape of the statement in flight (never values), StatementSince when it
	// started.
	Statement      string
	StatementSince time.Time
}

// RowsCopied counts the rows this copier committed.
func (c *Copier) RowsCopied() int64 { return c.rows.Load() }

// TablesRemaining counts the tables whose copy is not done, as last committed. O(1).
func (c *Copier) TablesRemaining() int64 { return c.remaining.Load() }

// Elapsed is how long Run has run at now (until it returned, once it has). O(1).
func (c *Copier) Elapsed(now time.Time) time.Duration {
	b := c.beganAt.Load()
	if b == 0 {
		return 0
	}
	if e := c.endedAt.Load(); e != 0 {
		return time.Duration(e - b)
	}
	return max(now.Sub(time.Unix(0, b)), 0)
}

func (c *Copier) setState(state []workflow.TableCopy) {
	c.mu.Lock()
	c.state = state
	c.mu.Unlock()
	n := 0
	for _, t := range state {
		if t.Pending() {
			n++
		}
	}
	c.remaining.Store(int64(n))
}

// State returns the copy state as last committed (or read at the start).
func (c *Copier) State() []workflow.TableCopy {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]workflow.TableCopy(nil), c.state...)
}

// Work reports what the copier is doing now. O(1).
// A round trip in flight for longer than any other progress is what the copy waits on.
func (c *Copier) Work() Work {
	w := Work{ProgressSince: unixNano(c.progressSince.Load()), StatementSince: unixNano(c.statementSince.Load())}
	if p := c.statement.Load(); p != nil {
		w.Statement = *p
	}
	if ws := c.writers.Load(); ws != nil {
		var oldest int64
		var shape *string
		for _, wr := range *ws {
			if since := wr.statementSince.Load(); since != 0 && (oldest == 0 || since < oldest) {
				if p := wr.statement.Load(); p != nil {
					oldest, shape = since, p
				}
			}
		}
		if oldest != 0 {
			w.ProgressSince, w.StatementSince, w.Statement = time.Unix(0, oldest), time.Unix(0, oldest), *shape
		}
	}
	return w
}

func unixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func (c *Copier) progressed() { c.progressSince.Store(c.cfg.Now().UnixNano()) }

func (c *Copier) running(shape string) {
	c.statement.Store(&shape)
	c.statementSince.Store(c.cfg.Now().UnixNano())
}

func (c *Copier) idle() {
	c.progressSince.Store(0)
	c.statement.Store(nil)
	c.statementSince.Store(0)
}

// Done reports whether every table of state is copied, its deferred keys built.
func Done(state []workflow.TableCopy) bool {
	for _, t := range state {
		if t.Pending() {
			return false
		}
	}
	return true
}

// rowsDone reports whether every table of state has its rows copied.
func rowsDone(state []workflow.TableCopy) bool {
	for _, t := range state {
		if !t.Done {
			return false
		}
	}
	return true
}

// Message is the record's message for a copy in progress: per table, rows copied of those
// estimated, and the tables done.
func Message(state []workflow.TableCopy) string {
	var b strings.Builder
	done := 0
	for _, t := range state {
		if t.Done {
			done++
		}
	}
	fmt.Fprintf(&b, "copying: %d of %d tables done", done, len(state))
	for _, t := range state {
		if t.Done {
			continue
		}
		fmt.Fprintf(&b, "; %s %d/~%d rows", t.Table, t.Rows, t.Estimated)
	}
	return b.String()
}
