package applier

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/go-sql-driver/mysql"

	"github.com/vplayer/vplayer/applier/plan"
	"github.com/vplayer/vplayer/workflow"
)

// flush sends the statements of b on s (see sendAll) and empties b.
func (a *Applier) flush(ctx context.Context, s *session, b *plan.Batch) error {
	defer b.Reset()
	return a.sendAll(ctx, s, b)
}

// sendAll sends the statements of b on s: in one round trip when they fit the target's
// max_allowed_packet, else in as many as they need, cut between statements. A statement that
// does not fit alone is a terminal error naming the variable. b is kept, for a batch that may run
// again.
func (a *Applier) sendAll(ctx context.Context, s *session, b *plan.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	for first := 0; first < b.Len(); {
		last := b.Len() // statements [first, last) go in this round trip
		start := b.Start(first)
		for last > first+1 && b.End(last-1)-start > a.maxPacket {
			last--
		}
		if size := b.End(last-1) - start; size > a.maxPacket {
			return &PacketError{Shape: b.ShapeOf(first), Size: size + packetOverhead, MaxAllowed: a.maxPacket + packetOverhead}
		}
		if err := a.send(ctx, s, b, first, last); err != nil {
			return err
		}
		first = last
	}
	return nil
}

// send runs statements [first, last) of b on s in one round trip and checks what they affected.
func (a *Applier) send(ctx context.Context, s *session, b *plan.Batch, first, last int) error {
	shape := b.Shape()
	s.tr.start(shape, a.cfg.Now())
	sql := b.SQL(first, last)
	if n := len(sql); n > 0 && sql[n-1] == ';' {
		sql = sql[:n-1]
	}
	// The driver copies the text into its packet before ExecContext returns, and b is not
	// written meanwhile: no copy of the round trip's SQL (up to max_allowed_packet) is needed.
	q := unsafe.String(unsafe.SliceData(sql), len(sql))
	var affected []int64
	err := s.conn.Raw(func(dc any) error {
		res, err := dc.(driver.ExecerContext).ExecContext(ctx, q, nil)
		if err != nil {
			return err
		}
		if r, ok := res.(mysql.Result); ok {
			affected = r.AllRowsAffected()
		}
		return nil
	})
	s.tr.stop()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if workflow.IsFenceViolation(err) {
			return &workflow.FenceError{Err: err}
		}
		if retryable(err) {
			return &lockError{shape: shape, err: err}
		}
		if pe := a.deleteHistoryDenied(ctx, s, err, b, first, last); pe != nil {
			return pe
		}
		if me := a.duplicateKey(s, err, shape, b); me != nil {
			return me
		}
		return fmt.Errorf("apply %s: %w", shape, err)
	}
	a.progressed()
	return a.verify(ctx, s, b.ChecksIn(first, last), first, affected)
}

// duplicateKey describes a duplicate-key error as a row mismatch (an INSERT of a key that exists)
// when the round trip held only one table's changes, and so names it; else nil.
func (a *Applier) duplicateKey(s *session, err error, shape string, b *plan.Batch) error {
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1062 {
		return nil
	}
	var t *plan.Table
	for _, c := range b.Checks() {
		if t != nil && c.Table != t {
			return nil
		}
		t = c.Table
	}
	name := shape
	if t != nil {
		name = t.Quoted()
	}
	gtid, from := a.where(s)
	return &plan.MismatchError{Kind: plan.InsertExists, Table: name, Key: t.KeyColumns(), GTID: gtid, Pos: from, Cause: err}
}

// PacketError is a statement larger than the target's max_allowed_packet: terminal, since every
// retry would send it again.
type PacketError struct {
	Shape      string // the statement's kind and table
	Size       int    // bytes the statement's packet needs
	MaxAllowed int    // the target's max_allowed_packet, in bytes
}

func (e *PacketError) Error() string {
	return fmt.Sprintf("statement %s is %d bytes, over the target's max_allowed_packet of %d bytes: "+
		"raise it on the target to at least %d (SET GLOBAL max_allowed_packet = %d, and in its configuration file)",
		e.Shape, e.Size, e.MaxAllowed, e.Size, roundUpMiB(e.Size))
}

// roundUpMiB rounds n bytes up to a whole number of MiB, in bytes.
func roundUpMiB(n int) int { return (n + 1<<20 - 1) &^ (1<<20 - 1) }

// commit runs a commit step on the main session, or an XA transaction's: its checked
// statements, then its statements (and its late ones) with the position and COMMIT.
func (a *Applier) commit(ctx context.Context, s *plan.Step) error {
	conn := a.session(s.XID)
	if s.Check != nil {
		if err := a.flush(ctx, conn, s.Check); err != nil {
			return err
		}
	}
	body := s.Stmts
	if s.Late != nil {
		// Planned to run after jobs then in flight (see plan.Config.Split), which the
		// dispatcher drained before running it here.
		if err := a.flush(ctx, conn, s.Stmts); err != nil {
			return err
		}
		body = s.Late
		if a.checksFirst(s.Late) {
			if err := a.flush(ctx, conn, s.Late); err != nil {
				return err
			}
			body = s.Stmts // emptied by its flush
		}
	}
	err := a.commitTx(ctx, conn, nil, body, &a.b, s.End)
	body.Reset()
	if err != nil {
		return err
	}
	a.txOpen = false
	a.lastSave = a.cfg.Now()
	a.txnSince.Store(0)
	return nil
}

// commitTx commits a batch on s: body, then the position of its end (fenced by the lease), the
// BeforeCommit hook and COMMIT. It is the one place that writes a batch's position and COMMIT, on
// the main session (j nil, end in the planner's step) and on the workers (j the job) alike, and
// the one place that checks the source order: the COMMIT goes only when every batch before this
// one committed (scheduler.inTurn), so that the record's pos is always the end of a prefix of
// the source's history. When the batch's turn has come already and no hook runs, all of it goes
// in one round trip; otherwise body goes first, its rows holding their locks, and the rest once
// the job before it committed. body is left as it was, for a job that may run again; tail is
// scratch space.
func (a *Applier) commitTx(ctx context.Context, s *session, j *job, body, tail *plan.Batch, end plan.Saved) error {
	if a.sched.inTurn(j) && a.cfg.BeforeCommit == nil {
		if j != nil {
			j.state.Store(jobCommitting)
		}
		n := body.Len()
		body.Add("", a.positionSQL(end, a.cfg.Now()))
		body.Add("", "COMMIT")
		err := a.sendAll(ctx, s, body)
		body.Truncate(n)
		if err != nil {
			return err
		}
		return a.committedAt(s, j, end)
	}
	if err := a.sendAll(ctx, s, body); err != nil {
		return err
	}
	if j != nil {
		if err := a.holdFor(ctx, j, j.prev); err != nil {
			return err
		}
		j.state.Store(jobCommitting)
	}
	if !a.sched.inTurn(j) {
		return errOutOfOrder
	}
	tail.Reset()
	tail.Add("", a.positionSQL(end, a.cfg.Now()))
	if a.cfg.BeforeCommit != nil {
		if err := a.flush(ctx, s, tail); err != nil {
			return err
		}
		if err := a.cfg.BeforeCommit(); err != nil {
			return fmt.Errorf("before commit: %w", err)
		}
	}
	tail.Add("", "COMMIT")
	if err := a.flush(ctx, s, tail); err != nil {
		return err
	}
	return a.committedAt(s, j, end)
}

// checksFirst reports whether b's statements must come back before the COMMIT is sent: in
// strict mode a mismatch they find must fail the batch while it can still be rolled back (see
// plan.Planner.checked).
func (a *Applier) checksFirst(b *plan.Batch) bool {
	return a.cfg.ExecMode == plan.ExecModeStrict && len(b.Checks()) > 0
}

// committedAt does the bookkeeping of the target transaction that has just committed on s and
// saved end: j's, when a worker ran it (nil for the main session's), in source order.
func (a *Applier) committedAt(s *session, j *job, end plan.Saved) error {
	a.countCommitted(s)
	if j == nil {
		a.committedBatch(end)
		return nil
	}
	err := a.sched.committed(j, func(oldest int64) {
		// Under the scheduler's lock, before the next job can be in its turn: the position and
		// lag's start move forward only, in source order.
		a.committed = end.Pos
		a.oldestPending.Store(oldest)
	})
	if err != nil {
		return err
	}
	a.countSaved(end)
	// Later jobs keep j for its done channel only: drop what j holds, or every job ever
	// dispatched would stay reachable through the chain of prev pointers.
	j.prev, j.dep, j.ws, j.check, j.stmts, j.late = nil, nil, nil, nil, nil, nil
	close(j.done)
	return nil
}

// committedBatch does the bookkeeping of a target transaction committed on the main session, or
// an XA transaction's, that saved s.
func (a *Applier) committedBatch(s plan.Saved) {
	a.committed = s.Pos
	a.countSaved(s)
	if !s.InTxn {
		a.oldestPending.Store(0)
	}
}

// countSaved counts a commit that saved s.
func (a *Applier) countSaved(s plan.Saved) {
	a.stats.Saves.Add(1)
	if s.Commits > 0 {
		a.stats.Commits.Add(1)
		a.stats.Transactions.Add(int64(s.Commits))
		a.stats.LastCommitted.Store(s.TxTime)
		a.stats.observePerCommit(s.Commits)
	}
	a.stats.Rows.Add(int64(s.Rows))
	a.progressed() // the fetch may still hold work: idle clears the clock once it holds none
}

// positionSQL is the statement that records s's position, fenced by the lease.
func (a *Applier) positionSQL(s plan.Saved, now time.Time) string {
	return a.cfg.Record.PositionSQL(s.Pos, now.Unix(), s.TxTime)
}

// setState records a state change, fenced by the lease.
func (a *Applier) setState(ctx context.Context, state, msg string) error {
	return a.cfg.Record.SetState(ctx, state, msg)
}
