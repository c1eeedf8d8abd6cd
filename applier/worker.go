package applier

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"

	"github.com/vplayer/vplayer/applier/plan"
	"github.com/vplayer/vplayer/workflow"
)

// A worker's side of parallel apply (see parallel.go): running a job, its ordered commit, and
// running it again after a retryable failure.

// work runs the jobs handed to w until ctx ends or one fails.
func (a *Applier) work(ctx context.Context, w *worker) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case j := <-w.jobs:
			w.job.Store(j)
			j.worker.Store(w)
			if err := a.runJob(ctx, w, j); err != nil {
				return err
			}
			w.job.Store(nil)
			a.pool.free <- w
		}
	}
}

// runJob runs j on w until it committed, again after a retryable failure.
func (a *Applier) runJob(ctx context.Context, w *worker, j *job) error {
	if j.dep != nil && j.late == nil {
		if err := waitFor(ctx, j.dep.done); err != nil {
			return err
		}
	}
	for tries := 0; ; tries++ {
		// Whether j was the oldest job when it began, not when it failed: a job that ran ahead
		// of a batch that committed while it failed may have failed for that batch's rows.
		head := a.sched.inTurn(j)
		err := a.tryJob(ctx, w, j)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !a.retryable(w, err, head) || (head && tries >= maxHeadRetries) {
			return err
		}
		a.stats.Retries.Add(1)
		a.cfg.Logger.Debug("batch rolled back, to run again after the batches before it", "worker", w.n, "gtid", j.gtid, "reason", err)
		if err := a.rollback(ctx, w); err != nil {
			return err
		}
		if j.prev != nil {
			if err := waitFor(ctx, j.prev.done); err != nil {
				return err
			}
		}
		w.killed.Store(false)
		select {
		case <-j.abort:
		default:
		}
	}
}

// retryable reports whether a job that failed with err on w can roll back and run again after
// the jobs before it. A job that is not the oldest (head false) ran ahead of batches that have
// not committed, so whatever the target refused may be their doing: a row or parent key they
// write, a lock they hold. As MariaDB's optimistic parallel replica does, it runs again once
// they committed, and only an error it meets as the oldest is the batch's own. The oldest job
// runs again only when the server chose it as a deadlock's victim or the lock watcher killed
// its statement (when it was not the oldest yet).
func (a *Applier) retryable(w *worker, err error, head bool) bool {
	if errors.Is(err, errAborted) {
		return true
	}
	var fe *workflow.FenceError
	if errors.As(err, &fe) {
		return false
	}
	if !head {
		var me *mysql.MySQLError
		var mm *plan.MismatchError
		return errors.As(err, &me) || errors.As(err, &mm)
	}
	var le *lockError
	if !errors.As(err, &le) {
		return false
	}
	switch le.number() {
	case errDeadlock:
		return true
	case errInterrupted:
		return w.killed.Load()
	}
	return false
}

// tryJob runs j once: its statements, then, in its turn, its position and COMMIT (see commitTx).
func (a *Applier) tryJob(ctx context.Context, w *worker, j *job) error {
	w.s.dropUnsaved()
	w.txOpen = true
	w.txnSince.Store(a.cfg.Now().UnixNano())
	j.state.Store(jobRunning)
	if j.check != nil {
		if err := a.sendAll(ctx, w.s, j.check); err != nil {
			return err
		}
	}
	// body is what goes with the position and COMMIT when the job's turn has come: its
	// statements, or, with a late part, that part, sent once the job it depends on committed.
	body := j.stmts
	if j.late != nil {
		if err := a.sendAll(ctx, w.s, j.stmts); err != nil {
			return err
		}
		if err := a.holdFor(ctx, j, j.dep); err != nil {
			return err
		}
		j.state.Store(jobRunning)
		body = j.late
		if a.checksFirst(j.late) {
			if err := a.sendAll(ctx, w.s, j.late); err != nil {
				return err
			}
			w.tail.Reset()
			body = &w.tail
		}
	}
	if err := a.commitTx(ctx, w.s, j, body, &w.tail, j.end); err != nil {
		return err
	}
	w.txOpen = false
	w.txnSince.Store(0)
	return nil
}

// holdFor waits, its statements sent so far holding their locks, until dep (nil: none) committed,
// or the lock watcher rolls j back (errAborted).
func (a *Applier) holdFor(ctx context.Context, j, dep *job) error {
	if dep == nil {
		return nil
	}
	j.state.Store(jobHolding)
	select {
	case <-dep.done:
		return nil
	case <-j.abort:
		return errAborted
	case <-ctx.Done():
		return ctx.Err()
	}
}

// rollback ends w's open transaction.
func (a *Applier) rollback(ctx context.Context, w *worker) error {
	if _, err := w.s.conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		return fmt.Errorf("roll back a batch to run it again: %w", err)
	}
	w.txOpen = false
	w.txnSince.Store(0)
	return nil
}
