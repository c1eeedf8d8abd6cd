package applier

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

// Parallel apply (Config.Workers > 1, --apply-workers). The Run goroutine plans as the serial
// executor does and becomes a dispatcher: each batch that commits by itself (a plain target
// transaction, held until its commit) is a job, run by one of the workers, each on a target
// session of its own. Everything else (XA, DDL, a stop, the record's state, a source transaction
// too large to hold until its commit) is a barrier: the dispatcher waits until every job
// dispatched has committed, then runs it on the main session as the serial executor does.
//
// Order. A job whose writeset overlaps an earlier job's that has not committed does not start
// before that one committed: the dispatcher holds it while it is small (the next fetch can still
// grow it), and otherwise its worker waits. A job whose rows all folded is split instead (see
// planConfig.late): its worker sends the statements of the keys no job in flight touches at
// once, and the others (the job's late part) once the job it depends on committed. Folded keys
// are independent of one another (a foldable table has no other unique key, no foreign key and
// no trigger), so the split changes no outcome, and a batch that shares a key or two with the one
// before it still runs beside it. Every job commits after the one before it did, its
// position written in its own transaction just before its COMMIT, so that the record's pos is
// always the end of a prefix of the source's history: after a crash, the jobs past the last one
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
	// hotFetches bounds hot mode (see parallel.hot): after a batch grew, the next hotFetches-1
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
	check *batch // strict mode's checked statements, sent first; may be nil
	stmts *batch
	// late, when set, holds the statements of the keys that dep may touch: the rest runs at once,
	// late once dep committed (see planConfig.late).
	late  *batch
	end   saved
	ws    *writeset
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
	tail     batch               // the position and COMMIT of a job that waited for its turn
}

// parallel is the dispatcher's and the workers' shared state.
type parallel struct {
	n    int // workers; 0 when apply is serial
	list atomic.Pointer[[]*worker]
	free chan *worker

	mu       sync.Mutex
	inflight []*job   // dispatched and not committed, in source order
	lastPos  string   // where the last job dispatched (or inline batch committed) ends
	done     []*batch // statements of committed jobs, for the planner to reuse
	// pendingFirst is the source commit time of the first transaction planned and not yet
	// dispatched; set and cleared by the dispatcher, read by committing workers, under mu.
	pendingFirst int64

	// Owned by the dispatcher.
	inlineTx bool // a batch runs on the main session: it was sent before its commit
	// grow is set when the batch being planned overlapped a job in flight: it is then not cut
	// before the fetch ends (see maybeCut). It is cleared when a batch leaves the planner, and at
	// each fetch's start.
	grow bool
	// hot is set to hotFetches when a batch grew, and counts down at each fetch's start; while
	// it is above 0 no batch is cut before its fetch ends. Where every batch overlaps the one
	// before (a few hot rows), the job in flight has often committed by the time the next fetch
	// reaches cutTxns: that fetch would be cut, and its rest, overlapping the cut part, would
	// wait for it, so each fetch became two jobs run one after the other (twice the commits of
	// one session). Once a fetch grew, the next ones go whole, as one session commits them, and
	// one fetch in hotFetches tries cutting again, so that a workload that cools down gets its
	// workers back.
	hot int
	// last is the writeset of the batch last run on the main session, nil once a job was
	// dispatched since. The fetch that tries cutting again, with nothing in flight, compares its
	// batch with it (see stillHot) rather than cutting it into a job that the rest of the fetch
	// would wait for.
	last *writeset
	// held is set when the batch planned so far stays open past its fetch's end (see holdOpen),
	// since heldSince; loopCtx is the dispatcher loop's context, under which Settle dispatches a
	// held batch.
	held      bool
	heldSince time.Time
	loopCtx   context.Context
	// wake, under mu, ends the dispatcher's fetch once no job is in flight; nil when it waits
	// for none (see wakeWhenCommitted).
	wake context.CancelCauseFunc

	committed atomic.Int64 // jobs committed
}

func (p *parallel) on() bool { return p.n > 1 }

// reset readies p for an attempt with n workers.
func (p *parallel) reset(n int) {
	p.n = 0
	if n > 1 {
		p.n = n
	}
	p.list.Store(nil)
	p.free = nil
	p.inflight, p.done, p.lastPos, p.pendingFirst = nil, nil, "", 0
	p.inlineTx, p.grow, p.hot, p.held, p.loopCtx, p.wake, p.last = false, false, 0, false, nil, nil, nil
	p.committed.Store(0)
}

// busy reports whether a dispatched job has not committed yet.
func (p *parallel) busy() bool {
	if !p.on() {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.inflight) > 0
}

// workers returns the attempt's workers; nil when apply is serial. Safe from any goroutine.
func (a *Applier) workers() []*worker {
	if l := a.par.list.Load(); l != nil {
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
	return a.plan.gtid, a.committed
}

// runParallel runs the loop with cfg.Workers workers and the lock watcher.
func (a *Applier) runParallel(ctx context.Context, relay Fetcher) error {
	p := &a.par
	ws := make([]*worker, 0, a.cfg.Workers)
	p.free = make(chan *worker, a.cfg.Workers)
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
		p.free <- w
	}
	p.list.Store(&ws)
	p.lastPos = a.committed
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
	p.loopCtx = gctx
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
	a.par.list.Store(nil)
	a.par.inflight, a.par.done = nil, nil
	a.par.inlineTx = false
}

// runDispatched runs planned steps with workers: a commit of a batch held until its commit is
// dispatched; every other step waits until the jobs dispatched have committed and runs on the
// main session.
func (a *Applier) runDispatched(ctx context.Context, steps []step) error {
	p := &a.par
	for i := range steps {
		s := &steps[i]
		switch {
		case s.kind == stepBegin:
			// The batch's BEGIN goes with its first statements, wherever they run.
		case s.kind == stepCommit && s.xid == "" && !p.inlineTx && p.hot == 0:
			if err := a.dispatch(ctx, s); err != nil {
				return err
			}
		default:
			// Also a batch of hot mode (see parallel.hot): it would wait for the jobs before it
			// and run alone anyway, so it runs here, as one session runs it, without the hand-offs
			// to a worker and back that cost two wake-ups of busy goroutines per batch.
			if err := a.drain(ctx); err != nil {
				return err
			}
			if (s.kind == stepSend || s.kind == stepCommit) && s.xid == "" && !p.inlineTx {
				a.txOpen = true
				a.txnSince.Store(a.cfg.Now().UnixNano())
			}
			if s.kind == stepSend && s.xid == "" {
				p.inlineTx = true
			}
			if s.kind == stepCommit && s.xid == "" {
				p.inlineTx = false
			}
			if err := a.runStep(ctx, s); err != nil {
				return err
			}
			if s.kind == stepCommit && s.xid == "" {
				p.last = s.ws
			}
			p.grow = false
			p.mu.Lock()
			p.lastPos = a.committed
			if !a.plan.txOpen {
				p.pendingFirst = 0
			}
			p.mu.Unlock()
		}
	}
	return nil
}

// begun notes the source commit time of a transaction the dispatcher planned, for lag.
func (a *Applier) begun(ts int64) {
	p := &a.par
	if p.pendingFirst != 0 {
		return
	}
	p.mu.Lock()
	p.pendingFirst = ts
	if a.oldestPending.Load() == 0 {
		a.oldestPending.Store(ts)
	}
	p.mu.Unlock()
}

// maybeCut dispatches the batch planned so far at a transaction boundary when it is large enough
// and a worker is free to run it now: the rest of the fetch is planned meanwhile.
//
// A batch found overlapping a job in flight is not cut before the fetch ends, even once that job
// committed. Where every batch overlaps the one before (a few hot rows), cutting it when its
// dependency commits would only split each fetch into two batches that run one after the other:
// twice the round trips and commits of one session, and less folding. Grown to the fetch's end,
// each batch is what one session would have committed. The fetches after it are not cut either,
// for a while (see parallel.hot).
func (a *Applier) maybeCut(ctx context.Context) error {
	p := &a.par
	if p.grow || p.hot > 0 || p.inlineTx || a.plan.inTxn || !a.plan.txOpen || len(p.free) == 0 {
		return nil
	}
	if commits, bytes := a.plan.Pending(); commits < cutTxns && bytes < cutBytes {
		return nil
	}
	if a.overlapping(&a.plan.ws) != nil && !(a.plan.Splittable() && a.lightOverlap(&a.plan.ws)) ||
		stillHot(p.last, &a.plan.ws) {
		p.grow, p.hot = true, hotFetches
		return nil
	}
	steps, err := a.plan.Cut()
	if rerr := a.run(ctx, steps); rerr != nil {
		return rerr
	}
	return err
}

// dispatch hands the batch that step s commits to a free worker. A small batch that overlaps a
// job in flight waits here until that job committed, so that the transactions arriving meanwhile
// join the next batch rather than many small ones queued behind each other.
func (a *Applier) dispatch(ctx context.Context, s *step) error {
	p := &a.par
	// Only the dispatcher adds jobs: the ones in flight can only commit meanwhile, and a job that
	// committed since is a dependency already met.
	dep := a.overlapping(s.ws)
	if dep != nil && s.end.commits < cutTxns && s.stmts.size() < cutBytes {
		if err := waitFor(ctx, dep.done); err != nil {
			return err
		}
		dep = a.overlapping(s.ws)
	}
	var w *worker
	select {
	case w = <-p.free:
	case <-ctx.Done():
		return ctx.Err()
	}
	j := &job{check: s.check, stmts: s.stmts, late: s.late, end: s.end, ws: s.ws, gtid: a.plan.gtid,
		done: make(chan struct{}), abort: make(chan struct{}, 1)}
	if j.check != nil {
		a.plan.detach(j.check)
	}
	if j.late != nil {
		a.plan.detach(j.late)
	}
	a.plan.detach(j.stmts)
	p.mu.Lock()
	j.dep, j.from, j.first = dep, p.lastPos, p.pendingFirst
	if n := len(p.inflight); n > 0 {
		j.prev = p.inflight[n-1]
	}
	p.inflight = append(p.inflight, j)
	p.lastPos, p.pendingFirst = j.end.pos, 0
	reuse := p.done
	p.done = nil
	p.mu.Unlock()
	for _, b := range reuse {
		a.plan.reuse(b)
	}
	a.lastSave = a.cfg.Now()
	w.jobs <- j    // the worker is free: it never blocks
	p.grow = false // the batch that overlapped is gone; the next one starts afresh
	p.last = nil
	return nil
}

// Settle waits until every batch planned from the events fetched so far has committed, or ctx
// ends: with workers, a batch held open (see holdOpen) and the jobs in flight. It must be called
// from the goroutine that runs Fetch for Run (a gate in front of the relay log, which holds the
// stream at a position).
func (a *Applier) Settle(ctx context.Context) error {
	if !a.par.on() {
		return nil
	}
	if a.par.held {
		// Under the loop's context: ctx may be the fetch's, which the jobs' commits wake.
		if err := a.endFetch(a.par.loopCtx); err != nil {
			return err
		}
	}
	return a.drain(ctx)
}

// drain waits until every job dispatched has committed.
func (a *Applier) drain(ctx context.Context) error {
	p := &a.par
	p.mu.Lock()
	var last *job
	if n := len(p.inflight); n > 0 {
		last = p.inflight[n-1]
	}
	p.mu.Unlock()
	if last != nil {
		select {
		case <-last.done:
		case <-ctx.Done():
			return ctx.Err()
		}
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

// closed reports whether c is closed.
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
