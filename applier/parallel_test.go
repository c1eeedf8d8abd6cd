package applier

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vplayer/vplayer/event"
)

// TestOverlapsIndexed: the executor's indexed overlap test agrees with the pairwise rule of
// writeset.overlaps on random writesets of values, whole keys and whole tables.
func TestOverlapsIndexed(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func() *writeset {
		var w writeset
		for range rng.IntN(6) {
			tbl := fmt.Sprintf("`s`.`t%d`", rng.IntN(3))
			switch r := rng.IntN(20); {
			case r == 0:
				w.add(wkey{table: tbl})
			case r == 1:
				w.add(wkey{table: tbl, index: fmt.Sprintf("u%d", rng.IntN(2))})
			default:
				w.add(wkey{table: tbl, index: fmt.Sprintf("u%d", rng.IntN(2)), value: fmt.Sprint(rng.IntN(8))})
			}
		}
		w.barrier = rng.IntN(40) == 0
		return &w
	}
	overlapping := 0
	for i := range 20000 {
		a, b := random(), random()
		want := a.overlaps(b)
		if got := a.overlapsIndexed(b); got != want {
			t.Fatalf("case %d: overlapsIndexed = %v, overlaps = %v\n  a %q barrier %v\n  b %q barrier %v", i, got, want, keysOf(a), a.barrier, keysOf(b), b.barrier)
		}
		if got := b.overlapsIndexed(a); got != want {
			t.Fatalf("case %d: reversed overlapsIndexed = %v, overlaps = %v", i, got, want)
		}
		if want {
			overlapping++
		}
	}
	if overlapping < 1000 || overlapping > 19000 {
		t.Fatalf("%d of 20000 cases overlap: the generator tests too little of one side", overlapping)
	}
}

// TestBatchTruncate: truncate takes back the statements added after n, their checks with them,
// and the batch grows again as before.
func TestBatchTruncate(t *testing.T) {
	var b batch
	b.add("INSERT `t`", "INSERT INTO t VALUES (1)")
	b.add("UPDATE `t`", "UPDATE t SET v=1 WHERE id=2")
	b.checks = append(b.checks, check{stmt: 1, want: 1})
	b.truncate(2) // nothing added: nothing changes
	if b.n != 2 || b.stmt(1) != "UPDATE t SET v=1 WHERE id=2" || len(b.checks) != 1 {
		t.Fatalf("truncate to its own length changed the batch: %d statements %q", b.n, b.buf)
	}
	b.add("", "UPDATE pos")
	b.add("", "COMMIT")
	b.truncate(2)
	if got, want := string(b.buf), "INSERT INTO t VALUES (1);UPDATE t SET v=1 WHERE id=2"; got != want || b.n != 2 {
		t.Fatalf("after truncate: %d statements %q, want 2 %q", b.n, got, want)
	}
	b.add("", "COMMIT")
	if got, want := string(b.buf), "INSERT INTO t VALUES (1);UPDATE t SET v=1 WHERE id=2;COMMIT"; got != want || b.stmt(2) != "COMMIT" {
		t.Fatalf("grown again: %q, want %q", got, want)
	}
	b.truncate(1)
	if len(b.checks) != 0 || string(b.buf) != "INSERT INTO t VALUES (1)" {
		t.Fatalf("truncate(1) kept %q and %d checks", b.buf, len(b.checks))
	}
	b.truncate(0)
	if b.n != 0 || len(b.buf) != 0 {
		t.Fatalf("truncate(0) kept %q", b.buf)
	}
}

// TestWork_longestStatementAndWorker: with workers, the watchdog's probe names the round trip in
// flight longest, with its worker, and the oldest open transaction of any session.
func TestWork_longestStatementAndWorker(t *testing.T) {
	a := New(Config{Workers: 2})
	t0 := time.Unix(1000, 0)
	ws := []*worker{{n: 1}, {n: 2}}
	for _, w := range ws {
		w.s = &session{tr: &tracker{}, w: w}
	}
	a.par.list.Store(&ws)
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
	hot := wsTable("hot", []column{intCol("id", true), intCol("v", true)}, pk("id"))
	bt := &event.Table{Schema: "s", Name: "hot", ColumnCount: 2}
	a := New(Config{Workers: 4, Record: stubRecord{}})
	a.tables.checked[bt] = hot
	a.maxPacket = 1 << 20
	main := &recordingConn{}
	conn, err := sql.OpenDB(main).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	a.main = &session{conn: conn, tr: &tracker{}}
	a.plan = newPlanner(planConfig{onDDL: a.cfg.OnDDL, execMode: a.cfg.ExecMode, maxBatch: parallelMaxBatch,
		writesets: true, parallel: true}, "MariaDB/0-1-0")
	p := &a.par
	p.reset(4)
	p.free = make(chan *worker, 4)
	var ws []*worker
	for i := range 3 {
		w := &worker{n: i + 1, jobs: make(chan *job, 1)}
		ws = append(ws, w)
		p.free <- w
	}
	taken := func() []*job {
		var out []*job
		for _, w := range ws {
			select {
			case j := <-w.jobs:
				out = append(out, j)
				p.free <- w
			default:
			}
		}
		return out
	}
	commit := func(j *job) { // what a worker's commit does to the dispatcher's view
		p.mu.Lock()
		p.inflight = slices.DeleteFunc(p.inflight, func(x *job) bool { return x == j })
		p.mu.Unlock()
		p.committed.Add(1)
		close(j.done)
	}
	seq := 0
	txn := func(id int32) []*event.Event {
		seq++
		return []*event.Event{
			{Type: event.Begin, GTID: fmt.Sprintf("0-1-%d", seq)},
			{Type: event.Rows, Table: bt, Kind: event.Update, Rows: []event.Row{upd(vals(id, int32(seq-1)), vals(id, int32(seq)))}},
			{Type: event.Commit, Pos: fmt.Sprintf("MariaDB/0-1-%d", seq)},
		}
	}

	// A job in flight on a fourth worker holds the ten hot rows.
	var held writeset
	for id := range int32(10) {
		held.addRows(hot, []event.Row{ins(id+1, int32(0))})
	}
	dep := &job{ws: &held, done: make(chan struct{})}
	p.inflight = []*job{dep}
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
	// commits them; the one after is cut at cutTxns for a free worker, the rest committing at its
	// end: a workload that cooled down gets its workers back.
	fetch := func(f int) (jobs []int, inline int) {
		var items []*event.Event
		for n := range 100 {
			items = append(items, txn(int32(100+f*100+n))...)
		}
		before := a.stats.Transactions.Load()
		if err := a.apply(ctx, items); err != nil {
			t.Fatal(err)
		}
		for _, j := range taken() {
			jobs = append(jobs, j.end.commits)
			commit(j)
		}
		return jobs, int(a.stats.Transactions.Load() - before)
	}
	for f := range hotFetches - 1 {
		if jobs, inline := fetch(f); len(jobs) != 0 || inline != 100 {
			t.Fatalf("fetch %d after the hot one became jobs of %v transactions and %d on the main session, want 100 on the main session", f+1, jobs, inline)
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
