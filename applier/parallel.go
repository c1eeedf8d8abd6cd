package applier

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/vplayer/vplayer/applier/plan"
)

// Parallel apply (Config.Workers > 1, --apply-workers). The Run goroutine plans and becomes a
// dispatcher: the scheduler (scheduler.go) places each step the planner makes. Each batch that
// commits by itself (a plain target transaction, held until its commit) is a job, run by one of
// the workers, each on a target session of its own. Everything else (XA, DDL, a stop, the
// record's state, a source transaction too large to hold until its commit) is a barrier: the
// dispatcher waits until every job dispatched has committed, then runs it on the main session.
// Serial apply is the same loop with no worker: every step runs on the main session.
//
// Order. A job whose writeset overlaps an earlier job's that has not committed does not start
// before that one committed: the dispatcher holds it while it is small (the next fetch can still
// grow it), and otherwise its worker waits. A job whose rows all folded is split instead (see
// plan.Config.Split): its worker sends the statements of the keys no job in flight touches at
// once, and the others (the job's late part) once the job it depends on committed. Folded keys
// are independent of one another (a foldable table has no other unique key, no foreign key and
// no trigger), so the split changes no outcome, and a batch that shares a key or two with the one
// before it still runs beside it. Every job commits after the one before it did, its
// position written in its own transaction just before its COMMIT (commitTx, which checks the
// order before each COMMIT), so that the record's pos is always the end of a prefix of the
// source's history: after a crash, the jobs past the last one
// committed roll back with their sessions and run again from the record.
//
// Conflicts the writesets cannot see (gap and next-key locks, foreign keys and their cascades,
// triggers) must not deadlock: a job that waits for a lock a later job holds, while that one
// waits for its turn to commit, would wait until the lock wait timeout, since the server sees no
// cycle. The lock watcher looks, while the oldest job's round trip has been in flight for
// lockCheckAfter, at the target's lock waits; a later job that holds what the oldest one waits
// for is rolled back (its statement killed when one runs) and runs again once the jobs before it
// committed. A later job the server picks as a deadlock's victim, or whose lock wait times out, is
// run again the same way, and so is a later job that fails in any other way the target reports (a
// foreign key's parent that an earlier job inserts, say): only what fails in the oldest job is
// the batch's own. Each time is counted in Stats.Retries.

const (
	// lockCheckAfter is how long the oldest job's round trip runs before the lock watcher asks
	// the target what it waits for; lockCheckEvery how often it looks. The server refreshes the
	// tables it reads at most every 0.1 s, and only when they were not read in the last 0.1 s.
	lockCheckAfter = 100 * time.Millisecond
	lockCheckEvery = 150 * time.Millisecond
	// cutTxns and cutBytes are when a batch is worth a worker of its own: the dispatcher cuts one
	// at the next transaction boundary that reaches either while a worker is free.
	cutTxns  = 64
	cutBytes = 128 << 10
	// hotFetches bounds hot mode (see scheduler.hot): after a batch grew, the next hotFetches-1
	// fetches are not cut; the one after tries again.
	hotFetches = 16
	// parallelMaxBatch bounds a batch's statements with workers (MaxBatchBytes when smaller), so
	// that the batches held in flight stay within vplayer's memory bound.
	parallelMaxBatch = 1 << 20
	// maxHeadRetries bounds how often the oldest job, a deadlock's victim, runs again at once
	// before its error ends the attempt.
	maxHeadRetries = 10
)

// errAborted is how a job learns that the lock watcher rolled it back.
var errAborted = errors.New("rolled back: an earlier batch waits for one of its locks")

// Job states, read by the lock watcher.
const (
	jobRunning    int32 = iota + 1 // a round trip in flight
	jobHolding                     // statements sent, waiting for its turn to commit
	jobCommitting                  // its turn: the position and COMMIT in flight
)

// job is one batch run by a worker.
type job struct {
	check *plan.Batch // strict mode's checked statements, sent first; may be nil
	stmts *plan.Batch
	// late, when set, holds the statements of the keys that dep may touch: the rest runs at once,
	// late once dep committed (see plan.Config.Split).
	late  *plan.Batch
	end   plan.Saved
	ws    *plan.Writeset
	gtid  string // its last source transaction, for messages
	from  string // the position it starts from, for messages
	first int64  // source commit time (unix s) of its first transaction; 0 when unknown
	// dep is the latest earlier job whose writeset overlaps this one's: it starts after dep
	// committed. prev is the job before it: it commits after prev did. Either may be nil.
	dep, prev *job
	done      chan struct{} // closed once committed
	abort     chan struct{} // capacity 1: roll back and run again after prev
	state     atomic.Int32
	worker    atomic.Pointer[worker]
}

// worker runs jobs on its own target session, one at a time, for the attempt's life.
type worker struct {
	n        int // 1-based, for messages
	s        *session
	jobs     chan *job // capacity 1: the dispatcher hands a job only to a free worker
	txnSince atomic.Int64
	job      atomic.Pointer[job] // the job it runs, for messages
	killed   atomic.Bool         // the lock watcher killed the statement running on its session
	txOpen   bool                // owned by the worker's goroutine; read after it ended
	tail     plan.Batch          // the position and COMMIT of a job that waited for its turn
}

// pool is the attempt's workers, when Config.Workers > 1.
type pool struct {
	list atomic.Pointer[[]*worker]
	free chan *worker // the workers with no job
}

// workers returns the attempt's workers; nil when apply is serial. Safe from any goroutine.
func (a *Applier) workers() []*worker {
	if l := a.pool.list.Load(); l != nil {
		return *l
	}
	return nil
}

// where returns, for a message about a round trip on s, the source transaction it applies and the
// position its target transaction starts from.
func (a *Applier) where(s *session) (gtid, from string) {
	if s != nil && s.w != nil {
		if j := s.w.job.Load(); j != nil {
			return j.gtid, j.from
		}
	}
	// A worker writes the committed position under the scheduler's lock (see committedAt), and
	// this may run on the dispatcher while jobs commit (a planner error mid-fetch).
	a.sched.mu.Lock()
	from = a.committed
	a.sched.mu.Unlock()
	return a.plan.State().GTID, from
}

// runParallel runs the loop with cfg.Workers workers and the lock watcher.
func (a *Applier) runParallel(ctx context.Context, relay Fetcher) error {
	ws := make([]*worker, 0, a.cfg.Workers)
	a.pool.free = make(chan *worker, a.cfg.Workers)
	for i := range a.cfg.Workers {
		conn, id, _, err := a.openSession(ctx)
		if err != nil {
			for _, w := range ws {
				w.s.conn.Close()
			}
			return err
		}
		w := &worker{n: i + 1, jobs: make(chan *job, 1)}
		w.s = &session{conn: conn, id: id, tr: &tracker{}, w: w}
		ws = append(ws, w)
		a.pool.free <- w
	}
	a.pool.list.Store(&ws)
	if err := a.recordSessions(ctx); err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(wctx)
	for _, w := range ws {
		g.Go(func() error { return a.work(gctx, w) })
	}
	g.Go(func() error { return a.watchLocks(gctx) })
	err := a.loop(gctx, relay)
	cancel()
	if werr := g.Wait(); werr != nil && !errors.Is(werr, context.Canceled) && ctx.Err() == nil {
		err = werr // a worker's error ended the loop
	}
	return err
}

// releaseWorkers ends the workers' sessions, killed first when one may hold a transaction.
func (a *Applier) releaseWorkers(cause error) {
	for _, w := range a.workers() {
		if cause != nil && w.txOpen {
			a.kill(w.s.id)
			w.s.conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		w.s.conn.Close()
	}
	a.pool.list.Store(nil)
}

// run runs planned steps where the scheduler places them: a commit of a batch held until its
// commit on a free worker, every other step on the main session once the jobs dispatched have
// committed. Serial apply places every step on the main session.
func (a *Applier) run(ctx context.Context, steps []plan.Step) error {
	for i := range steps {
		st := &steps[i]
		if st.Kind == plan.StepBegin {
			continue // the batch's BEGIN goes with its first statements, wherever they run
		}
		where, dep := a.sched.place(st)
		if where == afterDep {
			if err := waitFor(ctx, dep.done); err != nil {
				return err
			}
			// dep was the latest job st overlaps, and jobs commit in order: none does now.
			where, dep = onWorker, nil
		}
		if where == onWorker {
			if _, err := a.dispatch(ctx, st, dep); err != nil {
				return err
			}
			continue
		}
		if err := a.drain(ctx); err != nil {
			return err
		}
		if a.sched.runningOnMain(st) {
			a.txOpen = true
			a.txnSince.Store(a.cfg.Now().UnixNano())
		}
		if err := a.runStep(ctx, st); err != nil {
			return err
		}
		a.sched.ranOnMain(st, a.committed, a.plan.State().TxOpen)
	}
	return nil
}

// begun notes the source commit time of a transaction planned, for lag.
func (a *Applier) begun(ts int64) {
	if a.sched.begun(ts) && a.oldestPending.Load() == 0 {
		a.oldestPending.Store(ts)
	}
}

// maybeCut commits the batch planned so far at a transaction boundary when the scheduler says
// it goes to a free worker now: the rest of the fetch is planned meanwhile.
func (a *Applier) maybeCut(ctx context.Context) error {
	if len(a.pool.free) == 0 {
		return nil // serial, or every worker busy: nothing to cut for
	}
	if a.sched.cut(a.openBatch(), len(a.pool.free) > 0) != cutNow {
		return nil
	}
	a.plan.InFlight(a.sched.inFlightSets())
	steps, err := a.plan.Cut()
	if rerr := a.run(ctx, steps); rerr != nil {
		return rerr
	}
	return err
}

// openBatch tells the scheduler about the target transaction the planner holds.
func (a *Applier) openBatch() openBatch {
	commits, bytes := a.plan.Pending()
	st := a.plan.State()
	return openBatch{inTxn: st.InTxn, txOpen: st.TxOpen, onXA: st.OnXA, stopped: st.Stopped,
		commits: commits, bytes: bytes, ws: a.plan.Writeset(), splittable: a.plan.Splittable()}
}

// dispatch hands the batch that st commits to a free worker, a job after dep (nil: none), and
// returns the job.
func (a *Applier) dispatch(ctx context.Context, st *plan.Step, dep *job) (*job, error) {
	var w *worker
	select {
	case w = <-a.pool.free:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for _, b := range []*plan.Batch{st.Check, st.Late, st.Stmts} {
		if b != nil {
			a.plan.Detach(b)
		}
	}
	j, reuse := a.sched.dispatch(st, dep, a.plan.State().GTID)
	for _, b := range reuse {
		a.plan.Reuse(b)
	}
	a.lastSave = a.cfg.Now()
	w.jobs <- j // the worker is free: it never blocks
	return j, nil
}

// drain waits until every job dispatched has committed.
func (a *Applier) drain(ctx context.Context) error {
	if last := a.sched.lastInFlight(); last != nil {
		return waitFor(ctx, last.done)
	}
	return nil
}

// waitFor waits until c is closed or ctx ends.
func waitFor(ctx context.Context, c <-chan struct{}) error {
	select {
	case <-c:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
