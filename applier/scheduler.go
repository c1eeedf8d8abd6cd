package applier

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vplayer/vplayer/applier/plan"
)

// The scheduler decides where and when each planned step runs (see parallel.go for the rules it
// keeps). It alone holds the jobs in flight, their writesets, and the links that order them: a
// job's dep (the latest earlier job it overlaps, which it starts after) and prev (the job before
// it, which it commits after). It runs no SQL and waits for nothing: the dispatcher gives it the
// steps the planner made and the state of the fetch, and it answers with a decision (put a
// commit on a worker, run a step on the main session, hold the batch open, cut it before its
// fetch ends, or wait for a job first), which the dispatcher carries out; the workers give it
// their commits. Serial apply is the scheduler with no worker: every step is placed on the main
// session.
//
// Only the dispatcher (the goroutine that runs Run's loop) calls its methods, except committed,
// inTurn, headAndLater and busy, which the workers and the lock watcher call too: what those
// touch is under mu.
type scheduler struct {
	workers int // worker sessions; 0 when apply is serial

	mu       sync.Mutex
	inflight []*job        // dispatched and not committed, in source order
	lastPos  string        // where the last job dispatched (or batch run on the main session) ends
	done     []*plan.Batch // statements of committed jobs, for the planner to reuse
	// pendingFirst is the source commit time of the first transaction planned and not yet
	// dispatched; set and cleared by the dispatcher, read by committing workers.
	pendingFirst int64
	// wake, when set, is called once no job is in flight: the dispatcher holds a batch for that
	// moment (see holdOpen).
	wake func()
	// sets are the writesets of inflight, published anew (never written) when it changes.
	sets atomic.Pointer[[]*plan.Writeset]

	// Owned by the dispatcher.
	inlineTx bool // a batch runs on the main session: it was sent before its commit
	// grow is set when the batch being planned overlapped a job in flight: it is then not cut
	// before the fetch ends (see cut). It is cleared when a batch leaves the planner, and at each
	// fetch's start.
	grow bool
	// hot is set to hotFetches when a batch grew, and counts down at each fetch's start; while it
	// is above 0 no batch is cut before its fetch ends, and each goes whole on the main session.
	// Where every batch overlaps the one before (a few hot rows), the job in flight has often
	// committed by the time the next fetch reaches cutTxns: that fetch would be cut, and its
	// rest, overlapping the cut part, would wait for it, so each fetch became two jobs run one
	// after the other (twice the commits of one session). Once a fetch grew, the next ones go
	// whole, as one session commits them, and one fetch in hotFetches tries cutting again, so
	// that a workload that cools down gets its workers back.
	hot int
	// last is the writeset of the batch last run on the main session, nil once a job was
	// dispatched since. The fetch that tries cutting again, with nothing in flight, compares its
	// batch with it (see plan.StillHot) rather than cutting it into a job that the rest of the fetch
	// would wait for.
	last *plan.Writeset
	// held is set when the batch planned so far stays open past its fetch's end (see holdOpen),
	// since heldSince.
	held      bool
	heldSince time.Time
}

// errOutOfOrder is a commit about to be sent while a batch before it has not committed: a bug of
// the scheduler's, which the commit path checks rather than trusts.
var errOutOfOrder = errors.New("internal error: a batch was about to commit before an earlier one")

// newScheduler returns a scheduler for n workers (0 or 1: serial apply) that starts at pos.
func newScheduler(n int, pos string) *scheduler {
	if n < 2 {
		n = 0
	}
	return &scheduler{workers: n, lastPos: pos}
}

// parallel reports whether batches run on workers.
func (s *scheduler) parallel() bool { return s.workers > 0 }

// placement says where the scheduler puts a step.
type placement uint8

const (
	// onMain: on the main session, once every job in flight committed.
	onMain placement = iota + 1
	// onWorker: as a job for a free worker, beside the jobs in flight.
	onWorker
	// afterDep: not yet; wait until the job returned committed, then ask again.
	afterDep
)

func (p placement) String() string {
	switch p {
	case onMain:
		return "main"
	case onWorker:
		return "worker"
	case afterDep:
		return "after dep"
	}
	return fmt.Sprintf("placement(%d)", uint8(p))
}

// place decides where step st runs. A commit of a batch held until its commit goes to a worker,
// after the job it overlaps when it is small (onWorker with that job, or afterDep with it: the
// transactions arriving meanwhile then join the next batch rather than many small ones queued
// behind each other). Everything else (XA, DDL, a stop, a transaction sent before its commit, a
// batch of hot mode, which would wait for the jobs before it and run alone anyway) runs on the
// main session, as one session runs it, without the hand-offs to a worker and back.
func (s *scheduler) place(st *plan.Step) (placement, *job) {
	if !s.parallel() || st.Kind != plan.StepCommit || st.XID != "" || s.inlineTx || s.hot > 0 {
		return onMain, nil
	}
	dep := s.overlapping(st.Writeset)
	if dep != nil && st.End.Commits < cutTxns && st.Stmts.Size() < cutBytes {
		return afterDep, dep
	}
	return onWorker, dep
}

// lastInFlight returns the job dispatched last that has not committed, nil when none: once it
// committed, every job did.
func (s *scheduler) lastInFlight() *job {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.inflight); n > 0 {
		return s.inflight[n-1]
	}
	return nil
}

// runningOnMain notes that st is about to run on the main session, every job having committed,
// and reports whether it opens the main session's target transaction.
func (s *scheduler) runningOnMain(st *plan.Step) (opens bool) {
	if st.XID != "" {
		return false
	}
	opens = (st.Kind == plan.StepSend || st.Kind == plan.StepCommit) && !s.inlineTx
	switch st.Kind {
	case plan.StepSend:
		s.inlineTx = true
	case plan.StepCommit:
		s.inlineTx = false
	}
	return opens
}

// ranOnMain notes that st ran on the main session: the main session's transaction now starts
// from committed, and the planner holds an open target transaction when txOpen.
func (s *scheduler) ranOnMain(st *plan.Step, committed string, txOpen bool) {
	if st.Kind == plan.StepCommit && st.XID == "" {
		s.last = st.Writeset
	}
	s.grow = false
	s.mu.Lock()
	s.lastPos = committed
	if !txOpen {
		s.pendingFirst = 0
	}
	s.mu.Unlock()
}

// dispatch makes the batch that st commits a job, after dep (the latest job in flight it
// overlaps, nil for none) and after every job in flight, and returns it with the batches of
// committed jobs that the planner may reuse. gtid names its last source transaction.
func (s *scheduler) dispatch(st *plan.Step, dep *job, gtid string) (*job, []*plan.Batch) {
	j := &job{check: st.Check, stmts: st.Stmts, late: st.Late, end: st.End, ws: st.Writeset, gtid: gtid,
		dep: dep, done: make(chan struct{}), abort: make(chan struct{}, 1)}
	s.mu.Lock()
	j.from, j.first = s.lastPos, s.pendingFirst
	if n := len(s.inflight); n > 0 {
		j.prev = s.inflight[n-1]
	}
	s.inflight = append(s.inflight, j)
	s.setsChanged()
	s.lastPos, s.pendingFirst = j.end.Pos, 0
	reuse := s.done
	s.done = nil
	s.mu.Unlock()
	s.grow = false // the batch that overlapped is gone; the next one starts afresh
	s.last = nil
	return j, reuse
}

// setsChanged publishes the writesets of inflight, under mu: a new slice (nil when none is in
// flight), so that the one handed out before stays as it was.
func (s *scheduler) setsChanged() {
	var sets []*plan.Writeset
	if len(s.inflight) > 0 {
		sets = make([]*plan.Writeset, len(s.inflight))
		for i, j := range s.inflight {
			sets[i] = j.ws
		}
	}
	s.sets.Store(&sets)
}

// inFlightSets returns the writesets of the jobs in flight (nil for a job that has none: it
// overlaps everything); nil when none is. The slice is never written once returned. One atomic
// load: the dispatcher reads it before planning each event.
func (s *scheduler) inFlightSets() []*plan.Writeset {
	if p := s.sets.Load(); p != nil {
		return *p
	}
	return nil
}

// inTurn reports whether every batch before j committed, so that j may commit: j is the oldest
// job in flight, or, for the main session (j nil), no job is in flight. It is the check of
// source order the commit path makes before every COMMIT.
func (s *scheduler) inTurn(j *job) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j == nil {
		return len(s.inflight) == 0
	}
	return len(s.inflight) > 0 && s.inflight[0] == j
}

// committed takes j, the oldest job in flight, which has just committed, out of flight, and calls
// note with the source commit time of the oldest transaction not committed now (0: none), before
// any later job can be in its turn: what note records moves in source order. It is an error for
// j not to be the oldest: inTurn was checked before its COMMIT.
func (s *scheduler) committed(j *job, note func(oldest int64)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.inflight) == 0 || s.inflight[0] != j {
		return errOutOfOrder
	}
	copy(s.inflight, s.inflight[1:])
	s.inflight[len(s.inflight)-1] = nil
	s.inflight = s.inflight[:len(s.inflight)-1]
	s.setsChanged()
	if j.check != nil {
		s.done = append(s.done, j.check)
	}
	if j.late != nil {
		s.done = append(s.done, j.late)
	}
	s.done = append(s.done, j.stmts)
	// Lag counts from the oldest transaction not committed: the next job's first, else the
	// first one planned and not dispatched.
	oldest := s.pendingFirst
	if len(s.inflight) > 0 && s.inflight[0].first != 0 {
		oldest = s.inflight[0].first
	}
	note(oldest)
	if len(s.inflight) == 0 && s.wake != nil {
		s.wake()
		s.wake = nil
	}
	return nil
}

// begun notes the source commit time of a transaction planned, and reports whether it is the
// first planned and not dispatched.
func (s *scheduler) begun(ts int64) bool {
	if s.pendingFirst != 0 {
		return false
	}
	s.mu.Lock()
	s.pendingFirst = ts
	s.mu.Unlock()
	return true
}

// busy reports whether a dispatched job has not committed yet.
func (s *scheduler) busy() bool {
	if !s.parallel() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.inflight) > 0
}

// headAndLater returns the oldest job in flight and the ones after it, for the lock watcher.
func (s *scheduler) headAndLater() (*job, []*job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.inflight) == 0 {
		return nil, nil
	}
	return s.inflight[0], append([]*job(nil), s.inflight[1:]...)
}

// fetchStarting notes that a fetch's events are about to be planned.
func (s *scheduler) fetchStarting() {
	s.grow = false
	if s.hot > 0 {
		s.hot--
	}
}

// drainsBeforeFetch reports whether the dispatcher waits for the jobs in flight before it
// fetches: in hot mode a fetch waits until they committed, as one session's would, so that the
// relay log fills meanwhile and the fetch, which goes whole, is as large as one session's, not a
// sliver of what arrived during the commit.
func (s *scheduler) drainsBeforeFetch() bool { return s.hot > 0 }

// batch is what the scheduler is told about the open target transaction the planner holds.
type openBatch struct {
	inTxn      bool           // a source transaction is open in it
	txOpen     bool           // it holds anything
	onXA       bool           // it runs on an XA transaction's session
	stopped    bool           // the planner reached the stop position
	commits    int            // source transactions it holds
	bytes      int            // bytes of statements planned
	ws         *plan.Writeset // its writeset so far
	splittable bool           // its rows all folded (see planner.Splittable)
}

// cutVerdict is what the scheduler decides for an open batch at a transaction boundary.
type cutVerdict uint8

const (
	keepPlanning cutVerdict = iota // go on planning into it
	cutNow                         // commit it now, for a free worker, and plan the rest of the fetch meanwhile
	growToEnd                      // it overlaps a job in flight, or rows still hot: keep it to its fetch's end, and start hot mode
)

// cut decides, at a transaction boundary, whether the batch planned so far goes now to a free
// worker (freeWorker says one is): when it is large enough. A batch found overlapping a job in
// flight is not cut before the fetch ends, even once that job committed (unless few of its keys
// overlap and it can be split, see plan.Config.Split). Where every batch overlaps the one before (a
// few hot rows), cutting it when its dependency commits would only split each fetch into two
// batches that run one after the other: twice the round trips and commits of one session, and
// less folding. Grown to the fetch's end, each batch is what one session would have committed.
// The fetches after it are not cut either, for a while (see hot).
func (s *scheduler) cut(b openBatch, freeWorker bool) cutVerdict {
	if !s.parallel() || s.grow || s.hot > 0 || s.inlineTx || b.inTxn || !b.txOpen || !freeWorker {
		return keepPlanning
	}
	if b.commits < cutTxns && b.bytes < cutBytes {
		return keepPlanning
	}
	if s.overlapping(b.ws) != nil && !(b.splittable && s.lightOverlap(b.ws)) || plan.StillHot(s.last, b.ws) {
		s.grow, s.hot = true, hotFetches
		return growToEnd
	}
	return cutNow
}

// holdOpen reports whether the batch planned so far stays open when its fetch ends, rather
// than being dispatched: it is small (see cut), each of its source transactions committed, and
// jobs are in flight. Dispatched now, it would only wait for their commits, and its own flush to
// disk after theirs; on a live source each fetch holds a transaction or two, so the jobs queued
// up behind one another, one commit each, where one session takes everything that arrived during
// its commit in one. Held, the batch takes the next fetches' transactions too, and goes once the
// jobs in flight committed (the dispatcher's fetch is woken for it, see wakeWhenCommitted) or it
// is large enough for a free worker (cut), as the serial applier's next batch would. A batch is
// held for idleWait at most: while it is, the dispatcher does no idle work (the heartbeat's write
// among it), and a job in flight may wait that long on a lock. It notes the hold when it holds.
func (s *scheduler) holdOpen(b openBatch, now time.Time, idleWait time.Duration) bool {
	if !s.parallel() || s.hot > 0 || s.inlineTx || b.stopped || b.inTxn || !b.txOpen || b.onXA {
		return false
	}
	if s.held && now.Sub(s.heldSince) >= idleWait {
		return false
	}
	if b.commits >= cutTxns || b.bytes >= cutBytes {
		return false
	}
	if !s.busy() {
		return false
	}
	if !s.held {
		s.held, s.heldSince = true, now
	}
	return true
}

// released notes that a held batch is held no longer: its fetch's end is planned now.
func (s *scheduler) released() {
	if !s.held {
		return
	}
	s.held = false
	s.mu.Lock()
	s.wake = nil // nothing waits for the jobs in flight now
	s.mu.Unlock()
}
