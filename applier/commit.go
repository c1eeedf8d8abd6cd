package applier

import (
	"context"
	"fmt"
	"time"

	"github.com/vplayer/vplayer/workflow"
)

// flush sends the batch in one round trip.
func (a *Applier) flush(ctx context.Context) error {
	if a.b.n == 0 {
		return nil
	}
	shape := a.b.shape()
	a.statement.Store(&shape)
	a.statementSince.Store(a.cfg.Now().UnixNano())
	_, err := a.conn.ExecContext(ctx, string(a.b.buf))
	a.statementSince.Store(0)
	a.statement.Store(nil)
	a.b.reset()
	if err == nil {
		a.progressed()
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if workflow.IsFenceViolation(err) {
			return &workflow.FenceError{Err: err}
		}
		return fmt.Errorf("apply %s: %w", shape, err)
	}
	return nil
}

// commit writes the position and commits the open target transaction, if any.
func (a *Applier) commit(ctx context.Context) error {
	if !a.txOpen {
		return nil
	}
	if err := a.flushPending(); err != nil {
		return err
	}
	now := a.cfg.Now()
	a.b.add("", a.positionSQL(now))
	if a.cfg.BeforeCommit != nil {
		if err := a.flush(ctx); err != nil {
			return err
		}
		if err := a.cfg.BeforeCommit(); err != nil {
			return fmt.Errorf("before commit: %w", err)
		}
	}
	a.b.add("", "COMMIT")
	if err := a.flush(ctx); err != nil {
		return err
	}
	a.txOpen = false
	a.lastSave = now
	a.skipPos = ""
	a.stats.Saves.Add(1)
	if a.commits > 0 {
		a.stats.Commits.Add(1)
		a.stats.Transactions.Add(int64(a.commits))
		a.stats.LastCommitted.Store(a.txTime)
		a.stats.observePerCommit(a.commits)
	}
	a.stats.Rows.Add(int64(a.rows))
	a.commits, a.rows = 0, 0
	a.progressed() // the fetch may still hold work: idle clears the clock once it holds none
	a.txnSince.Store(0)
	if !a.inTxn {
		a.oldestPending.Store(0)
	}
	return nil
}

func (a *Applier) reachedStop(pos string) bool {
	return a.cfg.StopAt != nil && a.cfg.StopAt(pos)
}

// commitAndStop commits everything up to the stop position and records the stop.
func (a *Applier) commitAndStop(ctx context.Context) error {
	if a.skipPos != "" && !a.txOpen {
		a.pos, a.txTime = a.skipPos, a.skipTime
		if err := a.openTx(); err != nil {
			return err
		}
	}
	if err := a.commit(ctx); err != nil {
		return err
	}
	if err := a.setState(ctx, workflow.StateStopped, "Stopped at position "+a.pos); err != nil {
		return err
	}
	a.stopped = true
	return nil
}

// savePos records a.pos in a transaction of its own.
func (a *Applier) savePos(ctx context.Context) error {
	if err := a.openTx(); err != nil {
		return err
	}
	return a.commit(ctx)
}

// positionSQL is the statement that records a.pos, fenced by the lease when there is one.
func (a *Applier) positionSQL(now time.Time) string {
	if a.cfg.Lease != nil {
		return a.cfg.Lease.PositionSQL(a.pos, now.Unix(), a.txTime)
	}
	return a.cfg.Store.PositionSQL(a.cfg.ID, a.pos, now.Unix(), a.txTime)
}

// setState records a state change, fenced by the lease when there is one.
func (a *Applier) setState(ctx context.Context, state, msg string) error {
	if a.cfg.Lease != nil {
		return a.cfg.Lease.SetState(ctx, state, msg)
	}
	return a.cfg.Store.SetState(ctx, a.cfg.ID, state, msg)
}
