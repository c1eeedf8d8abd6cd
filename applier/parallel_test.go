package applier

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vplayer/vplayer/applier/plan"
	"github.com/vplayer/vplayer/event"
)

// TestWork_longestStatementAndWorker: with workers, the watchdog's probe names the round trip in
// flight longest, with its worker, and the oldest open transaction of any session.
func TestWork_longestStatementAndWorker(t *testing.T) {
	a := New(Config{Workers: 2})
	t0 := time.Unix(1000, 0)
	ws := []*worker{{n: 1}, {n: 2}}
	for _, w := range ws {
		w.s = &session{tr: &tracker{}, w: w}
	}
	a.pool.list.Store(&ws)
	a.inline.start("UPDATE `db`.`main`", t0.Add(3*time.Second))
	ws[0].s.tr.start("INSERT `db`.`a`", t0.Add(2*time.Second))
	ws[1].s.tr.start("UPDATE `db`.`b`", t0.Add(time.Second))
	ws[0].txnSince.Store(t0.Add(500 * time.Millisecond).UnixNano())
	a.txnSince.Store(t0.Add(4 * time.Second).UnixNano())
	w := a.Work()
	if w.Statement != "UPDATE `db`.`b` on worker 2" || !w.StatementSince.Equal(t0.Add(time.Second)) {
		t.Errorf("Work() statement %q since %v, want worker 2's UPDATE since %v", w.Statement, w.StatementSince, t0.Add(time.Second))
	}
	if !w.TxnSince.Equal(t0.Add(500 * time.Millisecond)) {
		t.Errorf("Work() TxnSince %v, want worker 1's %v", w.TxnSince, t0.Add(500*time.Millisecond))
	}
	ws[1].s.tr.stop()
	ws[0].s.tr.stop()
	if w := a.Work(); w.Statement != "UPDATE `db`.`main`" {
		t.Errorf("with no worker in a round trip, Work() statement %q, want the main session's, unlabelled", w.Statement)
	}
}

// TestMaybeCut_overlappingBatchGrows: with workers, a batch found overlapping a job in flight is
// not cut when that job commits before the fetch ends. On a few hot rows every batch overlaps the
// one before, and a cut there would only split each fetch into two jobs run one after the other.
// The batches of the fetches after it (hot mode) run on the main session, one each, as one
// session commits them. A fetch that overlaps nothing in flight is still cut for a free worker
// at cutTxns.
func TestMaybeCut_overlappingBatchGrows(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	f := newDispatcherFixture(t, ctx)
	a, p, hot, main, taken, commit, txn := f.a, f.a.sched, f.hot, f.main, f.taken, f.commit, f.txn

	// A job in flight on a fourth worker holds the ten hot rows.
	dep := f.inFlight(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	// One fetch of 100 transactions on those rows; the job in flight commits after the 70th.
	p.grow = false
	for n := range 100 {
		for _, e := range txn(int32(n%10 + 1)) {
			steps, err := a.plan.Event(e, hot)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.run(ctx, steps); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.maybeCut(ctx); err != nil {
			t.Fatal(err)
		}
		if n == 69 {
			commit(dep)
		}
	}
	steps, err := a.plan.EndFetch()
	if err == nil {
		err = a.run(ctx, steps)
	}
	if err != nil {
		t.Fatalf("end of the hot fetch: %v", err)
	}
	if jobs, commits := taken(), main.commits(); len(jobs) != 0 || len(commits) != 1 || a.stats.Transactions.Load() != 100 {
		t.Fatalf("the hot fetch became %d jobs and main-session commits of %v round trips, %d transactions committed; want it whole on the main session, in one transaction",
			len(jobs), commits, a.stats.Transactions.Load())
	}

	// The next fetches (through apply, which starts each fetch afresh) write 100 other rows
	// each. Since a batch grew, hotFetches-1 of them go whole on the main session, as one session
	// commits them; the one after is cut at cutTxns for a free worker, the rest held at its end
	// (see holdOpen) until that job committed: a workload that cooled down gets its workers back.
	fetch := func(k int) (jobs []int, inline int) {
		var items []*event.Event
		for n := range 100 {
			items = append(items, txn(int32(100+k*100+n))...)
		}
		before := a.stats.Transactions.Load()
		if err := a.apply(ctx, items); err != nil {
			t.Fatal(err)
		}
		for _, j := range taken() {
			jobs = append(jobs, j.end.Commits)
			commit(j)
		}
		if p.held {
			if err := a.endFetch(ctx); err != nil {
				t.Fatal(err)
			}
			for _, j := range taken() {
				jobs = append(jobs, j.end.Commits)
				commit(j)
			}
		}
		return jobs, int(a.stats.Transactions.Load() - before)
	}
	for k := range hotFetches - 1 {
		if jobs, inline := fetch(k); len(jobs) != 0 || inline != 100 {
			t.Fatalf("fetch %d after the hot one became jobs of %v transactions and %d on the main session, want 100 on the main session", k+1, jobs, inline)
		}
	}
	if jobs, inline := fetch(hotFetches); !slices.Equal(jobs, []int{cutTxns, 100 - cutTxns}) || inline != 0 {
		t.Fatalf("a fetch overlapping nothing in flight, %d fetches after the hot one, became jobs of %v transactions and %d on the main session, want jobs of %d and %d",
			hotFetches, jobs, inline, cutTxns, 100-cutTxns)
	}
	if got := main.commits(); len(got) != hotFetches {
		t.Errorf("the main session committed %d times, want %d (the hot fetch and the %d after it)", len(got), hotFetches, hotFetches-1)
	}
}

// TestMaybeCut_stillHotStaysOnTheMainSession: the fetch of hot mode that tries cutting again,
// with nothing in flight, is compared with the batch that ran last on the main session: on the
// same hot rows it is not cut into a job that the rest of the fetch would wait for, but goes
// whole on the main session, and hot mode starts again. On rows the last batch did not touch it
// is cut for a free worker (TestMaybeCut_overlappingBatchGrows).
func TestMaybeCut_stillHotStaysOnTheMainSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	f := newDispatcherFixture(t, ctx)
	a, p := f.a, f.a.sched
	fetch := func() (jobs []int, inline int) {
		var items []*event.Event
		for n := range 100 {
			items = append(items, f.txn(int32(n%10+1))...)
		}
		before := a.stats.Transactions.Load()
		if err := a.apply(ctx, items); err != nil {
			t.Fatal(err)
		}
		for _, j := range f.taken() {
			jobs = append(jobs, j.end.Commits)
			f.commit(j)
		}
		return jobs, int(a.stats.Transactions.Load() - before)
	}
	// Hot mode's last fetch before the one that tries cutting, on the ten hot rows.
	p.hot = 2
	if jobs, inline := fetch(); len(jobs) != 0 || inline != 100 || p.last == nil {
		t.Fatalf("the hot fetch became jobs of %v transactions and %d on the main session (its writeset kept: %v), want 100 on the main session, kept", jobs, inline, p.last != nil)
	}
	if jobs, inline := fetch(); len(jobs) != 0 || inline != 100 {
		t.Fatalf("the fetch that tries cutting, on the same hot rows, became jobs of %v transactions and %d on the main session, want 100 on the main session", jobs, inline)
	}
	if p.hot != hotFetches {
		t.Errorf("hot mode after it: %d fetches, want %d", p.hot, hotFetches)
	}
}

// dispatcherFixture is an applier with 4 workers and no target server, for the dispatcher's
// decisions: the main session records its round trips (main), three workers are free, and the
// jobs handed to them are taken by the test (taken) and committed by it (commit) as a worker
// would. A job the test puts in p.inflight stands for a fourth worker's.
type dispatcherFixture struct {
	a    *Applier
	hot  *plan.Table // `s`.`hot` (id, v), primary key id: its rows fold
	main *recordingConn
	ws   []*worker
	seq  int
}

func newDispatcherFixture(t *testing.T, ctx context.Context) *dispatcherFixture {
	t.Helper()
	f := &dispatcherFixture{
		hot:  intTable(t, "hot", "id", "v"),
		main: &recordingConn{},
	}
	a := New(Config{Workers: 4, Record: stubRecord{}})
	a.tables.checked[hotTable] = f.hot
	a.maxPacket = 1 << 20
	db := sql.OpenDB(f.main)
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	a.main = &session{conn: conn, tr: &tracker{}}
	a.plan = plan.New(plan.Config{OnDDL: a.cfg.OnDDL, ExecMode: a.cfg.ExecMode, MaxBatch: parallelMaxBatch,
		Writesets: true, Parallel: true}, "MariaDB/0-1-0")
	a.sched = newScheduler(4, "MariaDB/0-1-0")
	a.pool.free = make(chan *worker, 4)
	for i := range 3 {
		w := &worker{n: i + 1, jobs: make(chan *job, 1)}
		f.ws = append(f.ws, w)
		a.pool.free <- w
	}
	f.a = a
	return f
}

// hotTable is the binlog's name of the fixture's table.
var hotTable = &event.Table{Schema: "s", Name: "hot", ColumnCount: 2}

// taken returns the jobs handed to the workers since the last call, and frees the workers.
func (f *dispatcherFixture) taken() []*job {
	var out []*job
	for _, w := range f.ws {
		select {
		case j := <-w.jobs:
			out = append(out, j)
			f.a.pool.free <- w
		default:
		}
	}
	return out
}

// commit does to the dispatcher's view what a worker's commit of j does.
func (f *dispatcherFixture) commit(j *job) {
	s := f.a.sched
	s.mu.Lock()
	s.inflight = slices.DeleteFunc(s.inflight, func(x *job) bool { return x == j })
	s.setsChanged()
	s.mu.Unlock()
	close(j.done)
}

// workerCommitted does what a worker does once the oldest job in flight, j, committed.
func (f *dispatcherFixture) workerCommitted(t *testing.T, j *job) {
	t.Helper()
	if err := f.a.committedAt(&session{}, j, j.end); err != nil {
		t.Fatal(err)
	}
}

// txn returns the events of the next source transaction: one update of row id.
func (f *dispatcherFixture) txn(id int32) []*event.Event {
	f.seq++
	return []*event.Event{
		{Type: event.Begin, GTID: fmt.Sprintf("0-1-%d", f.seq)},
		{Type: event.Rows, Table: hotTable, Kind: event.Update, Rows: []event.Row{{Before: []any{id, int32(f.seq - 1)}, After: []any{id, int32(f.seq)}}}},
		{Type: event.Commit, Pos: fmt.Sprintf("MariaDB/0-1-%d", f.seq)},
	}
}

// heldJob waits for the held batch to reach the first worker, once what happened (when) should
// have dispatched it, and checks that it went whole: a job of commits source transactions.
func (f *dispatcherFixture) heldJob(t *testing.T, ctx context.Context, commits int, when string) *job {
	t.Helper()
	select {
	case j := <-f.ws[0].jobs:
		if j.end.Commits != commits {
			t.Errorf("%s: the held batch went as a job of %d transactions, want %d", when, j.end.Commits, commits)
		}
		return j
	case <-ctx.Done():
		t.Fatalf("%s and the held batch was not dispatched", when)
		return nil
	}
}

// inFlight puts a job holding rows ids in flight, as a fourth worker's.
func (f *dispatcherFixture) inFlight(ids ...int32) *job {
	var held plan.Writeset
	for _, id := range ids {
		held.AddRows(f.hot, []event.Row{{After: []any{id, int32(0)}}})
	}
	j := &job{ws: &held, stmts: &plan.Batch{}, done: make(chan struct{})}
	s := f.a.sched
	s.mu.Lock()
	s.inflight = append(s.inflight, j)
	s.setsChanged()
	s.mu.Unlock()
	return j
}

// TestHoldOpen_smallBatchesWaitForTheJobInFlight: with workers, the small batch a fetch ends with
// is held open while a job is in flight, rather than queued behind it as a job of its own with a
// commit of its own: the next fetches' transactions join it, the dispatcher's fetch is woken as
// soon as no job is in flight, and the held batch then goes whole, as one session's next batch
// would. A held batch that reaches cutTxns is cut for a free worker; with no job in flight a
// fetch's batch goes at its end.
func TestHoldOpen_smallBatchesWaitForTheJobInFlight(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	f := newDispatcherFixture(t, ctx)
	a, p := f.a, f.a.sched

	// A live source: a fetch per transaction, while a job of other rows commits.
	dep := f.inFlight(1000, 1001)
	for n := range 10 {
		if err := a.apply(ctx, f.txn(int32(n+1))); err != nil {
			t.Fatal(err)
		}
		if jobs := f.taken(); len(jobs) != 0 || !p.held {
			t.Fatalf("fetch %d, a job in flight: %d jobs dispatched, held %v; want none, the batch held", n+1, len(jobs), p.held)
		}
	}
	wctx, done := p.wakeWhenCommitted(ctx)
	if wctx.Err() != nil {
		t.Fatalf("the fetch's context ended while the job was in flight: %v", context.Cause(wctx))
	}
	f.workerCommitted(t, dep)
	if !errors.Is(context.Cause(wctx), errWoken) {
		t.Fatalf("the job in flight committed and the fetch's context says %v, want %v", context.Cause(wctx), errWoken)
	}
	done()
	if err := a.endFetch(ctx); err != nil {
		t.Fatal(err)
	}
	jobs := f.taken()
	if len(jobs) != 1 || jobs[0].end.Commits != 10 || p.held {
		t.Fatalf("once the job in flight committed: %d jobs (%v), held %v; want one job of the 10 transactions", len(jobs), commitsOf(jobs), p.held)
	}
	f.commit(jobs[0])

	// Nothing in flight: the fetch's batch goes at its end, and the fetch waits for no commit.
	if err := a.apply(ctx, f.txn(11)); err != nil {
		t.Fatal(err)
	}
	jobs = f.taken()
	if len(jobs) != 1 || jobs[0].end.Commits != 1 || p.held {
		t.Fatalf("a fetch with no job in flight: %d jobs (%v), held %v; want one job of its transaction", len(jobs), commitsOf(jobs), p.held)
	}
	if wctx, done := p.wakeWhenCommitted(ctx); wctx != ctx {
		t.Fatal("with no batch held, the fetch's context is not the loop's")
	} else {
		done()
	}

	// A held batch that grows to cutTxns goes to a free worker, beside the job in flight.
	dep = jobs[0]
	for n := range cutTxns {
		if err := a.apply(ctx, f.txn(int32(100+n))); err != nil {
			t.Fatal(err)
		}
	}
	if jobs := f.taken(); len(jobs) != 1 || jobs[0].end.Commits != cutTxns || p.held {
		t.Fatalf("a held batch of %d transactions: jobs %v, held %v; want one job of %d", cutTxns, commitsOf(jobs), p.held, cutTxns)
	}
	f.commit(dep)

	// A batch is held for IdleWait at most, even while a job is in flight: the dispatcher does no
	// idle work (heartbeats) while it holds one.
	now := time.Unix(1000, 0)
	a.cfg.Now = func() time.Time { return now }
	dep = f.inFlight(2000)
	if err := a.apply(ctx, f.txn(200)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(a.cfg.IdleWait - time.Millisecond)
	if err := a.apply(ctx, f.txn(201)); err != nil {
		t.Fatal(err)
	}
	if jobs := f.taken(); len(jobs) != 0 || !p.held {
		t.Fatalf("held for just under IdleWait: jobs %v, held %v; want it still held", commitsOf(jobs), p.held)
	}
	now = now.Add(time.Millisecond)
	if err := a.apply(ctx, f.txn(202)); err != nil {
		t.Fatal(err)
	}
	if jobs := f.taken(); len(jobs) != 1 || jobs[0].end.Commits != 3 || p.held {
		t.Fatalf("held for IdleWait: jobs %v, held %v; want one job of its 3 transactions", commitsOf(jobs), p.held)
	}
	if len(f.main.trips) != 0 {
		t.Errorf("the main session ran %d round trips, want none", len(f.main.trips))
	}
	f.commit(dep)
}

// scriptedRelay hands the loop the fetches the test sends, one per Fetch; each Fetch first
// tells the test it has begun (entered), so that the test knows the fetch before it was planned.
// A fetch may be sent an error instead (errs), as a gate returns ErrSettle. With failOnWake, a
// fetch woken for a held batch fails with errGate instead.
type scriptedRelay struct {
	entered    chan struct{}
	fetches    chan []*event.Event
	errs       chan error
	failOnWake bool
}

var errGate = errors.New("gate failed")

func (r *scriptedRelay) Fetch(ctx context.Context) ([]*event.Event, error) {
	select {
	case r.entered <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case items := <-r.fetches:
		return items, nil
	case err := <-r.errs:
		return nil, err
	case <-ctx.Done():
		if r.failOnWake && errors.Is(context.Cause(ctx), errWoken) {
			return nil, errGate
		}
		return nil, ctx.Err()
	}
}

// TestLoop_heldBatchGoesWhenTheJobsCommit: the dispatcher loop, fed a fetch per transaction
// while a job is in flight, holds them in one batch; the job's commit wakes its fetch, and the
// batch goes at once, not after the idle wait (a minute here). A fetch woken that way that
// fails for another reason ends the loop with that error.
func TestLoop_heldBatchGoesWhenTheJobsCommit(t *testing.T) {
	for _, failOnWake := range []bool{false, true} {
		t.Run(fmt.Sprintf("failOnWake=%v", failOnWake), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			f := newDispatcherFixture(t, ctx)
			a := f.a
			a.cfg.IdleWait = time.Minute
			relay := &scriptedRelay{entered: make(chan struct{}), fetches: make(chan []*event.Event), failOnWake: failOnWake}
			dep := f.inFlight(1000)
			lctx, stop := context.WithCancel(ctx)
			defer stop()
			ended := make(chan error, 1)
			go func() { ended <- a.loop(lctx, relay) }()
			for id := range int32(3) {
				<-relay.entered
				relay.fetches <- f.txn(id + 1)
			}
			<-relay.entered // the third fetch was planned, and its batch held
			f.workerCommitted(t, dep)
			if failOnWake {
				if err := <-ended; !errors.Is(err, errGate) {
					t.Fatalf("a woken fetch failed with %v and the loop ended with %v, want that error", errGate, err)
				}
				return
			}
			f.heldJob(t, ctx, 3, "the job in flight committed")
			stop()
			if err := <-ended; !errors.Is(err, context.Canceled) {
				t.Errorf("loop ended with %v, want context.Canceled", err)
			}
		})
	}
}

// TestLoop_settleCommitsBeforeTheNextFetch: a gate that holds the stream at a position returns
// ErrSettle from a fetch; the loop itself then dispatches the batch it held open and waits until
// every job, that one included, committed, before it fetches again: the gate, at that next
// fetch, finds the target at the last position it handed over. The fetch is not woken for the
// held batch afterwards (nothing is held), and the loop goes on.
func TestLoop_settleCommitsBeforeTheNextFetch(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	f := newDispatcherFixture(t, ctx)
	a, p := f.a, f.a.sched
	a.cfg.IdleWait = time.Minute
	relay := &scriptedRelay{entered: make(chan struct{}), fetches: make(chan []*event.Event), errs: make(chan error)}
	dep := f.inFlight(1000)
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	ended := make(chan error, 1)
	go func() { ended <- a.loop(lctx, relay) }()
	for id := range int32(2) {
		<-relay.entered
		relay.fetches <- f.txn(id + 1)
	}
	<-relay.entered // the second fetch was planned, and its batch held
	relay.errs <- ErrSettle
	j := f.heldJob(t, ctx, 2, "the gate asked the loop to settle")
	f.workerCommitted(t, dep)
	select {
	case <-relay.entered:
		t.Fatal("the loop fetched again with the held batch's job still in flight")
	case err := <-ended:
		t.Fatalf("the loop ended while settling: %v", err)
	default:
	}
	f.workerCommitted(t, j)
	select {
	case <-relay.entered:
	case err := <-ended:
		t.Fatalf("the loop ended instead of fetching again: %v", err)
	case <-ctx.Done():
		t.Fatal("every job committed and the loop did not fetch again")
	}
	if p.held || p.busy() {
		t.Errorf("after settling: held %v, busy %v; want neither", p.held, p.busy())
	}
	stop()
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("loop ended with %v, want context.Canceled", err)
	}
}

// TestSettle_plannerErrorOfTheHeldBatch: the held batch is planned to its end when the loop
// settles (ErrSettle); a value the planner cannot write is settle's error (the loop ends with
// it), and no job goes out.
func TestSettle_plannerErrorOfTheHeldBatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	f := newDispatcherFixture(t, ctx)
	a, p := f.a, f.a.sched
	f.inFlight(1000)
	if err := a.apply(ctx, f.txn(1)); err != nil {
		t.Fatal(err)
	}
	f.seq++
	bad := []*event.Event{
		{Type: event.Begin, GTID: fmt.Sprintf("0-1-%d", f.seq)},
		{Type: event.Rows, Table: hotTable, Kind: event.Insert, Rows: []event.Row{{After: []any{int32(2), struct{}{}}}}},
		{Type: event.Commit, Pos: fmt.Sprintf("MariaDB/0-1-%d", f.seq)},
	}
	if err := a.apply(ctx, bad); err != nil {
		t.Fatalf("planning a row whose value is written at the batch's end: %v", err)
	}
	if !p.held {
		t.Fatal("the batch is not held")
	}
	if err := a.settle(ctx); !errors.Is(err, plan.ErrUnsupportedValue) {
		t.Fatalf("settle = %v, want the planner's %v", err, plan.ErrUnsupportedValue)
	}
	if jobs := f.taken(); len(jobs) != 0 {
		t.Errorf("a batch the planner failed on went out as %d jobs", len(jobs))
	}
}

// TestVerify_mismatchesWaitForTheCommit: in idempotent mode a mismatch found on any session (a
// worker's, the main one) is kept with the session, not counted, since its transaction may yet
// roll back and run again, finding it again; it is counted once the transaction committed, and
// forgotten when it will run again. What is kept outlives the batch, whose checks are emptied
// once sent.
func TestVerify_mismatchesWaitForTheCommit(t *testing.T) {
	a := New(Config{Workers: 2, ExecMode: plan.ExecModeIdempotent, Record: stubRecord{}, Logger: slog.New(slog.DiscardHandler)})
	tbl := intTable(t, "t", "id", "v")
	key := MismatchKey{Table: "s.t", Kind: plan.UpdateMissing}
	find := func(s *session) {
		t.Helper()
		checks := []plan.Check{{Stmt: 0, Want: 1, Kind: plan.UpdateMissing, Table: tbl, Keys: []string{"7"}}}
		if err := a.verify(t.Context(), s, checks, 0, []int64{0}); err != nil {
			t.Fatal(err)
		}
		clear(checks) // as flush does to the batch's, before the commit
	}
	for _, s := range []*session{{tr: &tracker{}, w: &worker{n: 1}}, {tr: &tracker{}}} {
		before := a.stats.Mismatches()[key]
		find(s)
		find(s)
		if got := a.stats.Mismatches()[key]; got != before || len(s.unsaved) != 2 {
			t.Fatalf("before the commit: %d counted, %d kept; want %d counted, 2 kept", got, len(s.unsaved), before)
		}
		s.dropUnsaved() // the transaction rolled back, to run again
		find(s)
		a.countCommitted(s)
		if got := a.stats.Mismatches()[key]; got != before+1 || len(s.unsaved) != 0 {
			t.Errorf("after the rerun committed: %d counted, %d kept; want %d counted, none kept", got, len(s.unsaved), before+1)
		}
		a.countCommitted(s) // nothing left to count twice
		if got := a.stats.Mismatches()[key]; got != before+1 {
			t.Errorf("after a second commit: %d counted, want %d", got, before+1)
		}
	}
}

// TestFetchFailed: a fetch that ends by its idle deadline or by the wake of a held batch is no
// error; anything else is, even from a fetch that was woken.
func TestFetchFailed(t *testing.T) {
	p := &scheduler{workers: 2, held: true}
	p.inflight = []*job{{}}
	wctx, done := p.wakeWhenCommitted(t.Context())
	defer done()
	p.mu.Lock()
	p.wake()
	p.mu.Unlock()
	plain, cancel := context.WithCancel(t.Context())
	cancel()
	other := errors.New("unsupported value")
	for _, tc := range []struct {
		name string
		ferr error
		ctx  context.Context
		want bool
	}{
		{"no error", nil, wctx, false},
		{"idle deadline", context.DeadlineExceeded, plain, false},
		{"woken", context.Canceled, wctx, false},
		{"cancelled, not woken", context.Canceled, plain, true},
		{"an error of a woken fetch", other, wctx, true},
		{"an error", other, plain, true},
	} {
		if got := fetchFailed(tc.ferr, tc.ctx); got != tc.want {
			t.Errorf("%s: fetchFailed = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func commitsOf(jobs []*job) []int {
	out := make([]int, len(jobs))
	for i, j := range jobs {
		out[i] = j.end.Commits
	}
	return out
}

// stubRecord writes the record with statements that change nothing.
type stubRecord struct{}

func (stubRecord) PositionSQL(string, int64, int64) string        { return "DO 'position'" }
func (stubRecord) HeartbeatSQL(int64) string                      { return "DO 'heartbeat'" }
func (stubRecord) DDLMarkSQL(string) string                       { return "DO 'ddl mark'" }
func (stubRecord) FenceCheckSQL() string                          { return "DO 'fence'" }
func (stubRecord) SetState(context.Context, string, string) error { return nil }
func (stubRecord) RecordSession(context.Context, ...int64) error  { return nil }

// recordingConn is a database/sql driver of one connection that accepts every statement and
// records the round trips: for a dispatcher test with no target server.
type recordingConn struct {
	mu    sync.Mutex
	trips []string
}

func (c *recordingConn) Connect(context.Context) (driver.Conn, error) { return c, nil }
func (c *recordingConn) Driver() driver.Driver                        { return nil }
func (c *recordingConn) Prepare(string) (driver.Stmt, error) {
	return nil, errors.New("recordingConn: prepared statements are not supported")
}
func (c *recordingConn) Close() error { return nil }
func (c *recordingConn) Begin() (driver.Tx, error) {
	return nil, errors.New("recordingConn: Begin is not supported")
}
func (c *recordingConn) ExecContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trips = append(c.trips, strings.Clone(q)) // q is the batch's buffer, written again once this returns
	return driver.RowsAffected(0), nil
}

// commits returns, for each round trip that ended in a COMMIT, how many round trips its
// transaction took.
func (c *recordingConn) commits() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int
	n := 0
	for _, q := range c.trips {
		n++
		if strings.HasSuffix(q, "COMMIT") {
			out = append(out, n)
			n = 0
		}
	}
	return out
}
