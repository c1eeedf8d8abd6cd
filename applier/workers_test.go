package applier

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/vplayer/vplayer/applier/plan"
)

// The workers' side of parallel apply, without a target server: each worker's session is a
// scriptConn that appends its round trips to one shared log, in the order the target would have
// run them, and whose hook can hold a round trip back or fail it.

// tripLog is the round trips of every session, in order.
type tripLog struct {
	mu    sync.Mutex
	trips []string // "w<n>: <sql>"
}

func (l *tripLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.trips = append(l.trips, s)
}

// commits returns the positions committed, in the order their COMMITs ran, and the sessions
// that ran them.
func (l *tripLog) commits() (pos, by []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range l.trips {
		if !strings.HasSuffix(t, "COMMIT") {
			continue
		}
		i := strings.Index(t, "DO 'pos ")
		if i < 0 {
			pos = append(pos, "?")
		} else {
			pos = append(pos, t[i+8:i+8+strings.Index(t[i+8:], "'")])
		}
		by = append(by, t[:strings.Index(t, ":")])
	}
	return pos, by
}

func (l *tripLog) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, t := range l.trips {
		n += strings.Count(t, substr)
	}
	return n
}

// scriptConn is one session's connection. hook, when set, runs before each round trip is logged
// and may block it (until ctx ends) or fail it.
type scriptConn struct {
	name string
	log  *tripLog
	hook func(ctx context.Context, q string) error
}

func (c *scriptConn) Connect(context.Context) (driver.Conn, error) { return c, nil }
func (c *scriptConn) Driver() driver.Driver                        { return nil }
func (c *scriptConn) Prepare(string) (driver.Stmt, error)          { return nil, errors.New("not supported") }
func (c *scriptConn) Close() error                                 { return nil }
func (c *scriptConn) Begin() (driver.Tx, error)                    { return nil, errors.New("not supported") }
func (c *scriptConn) ExecContext(ctx context.Context, q string, _ []driver.NamedValue) (driver.Result, error) {
	if c.hook != nil {
		if err := c.hook(ctx, q); err != nil {
			return nil, err
		}
	}
	c.log.add(c.name + ": " + strings.Clone(q))
	return driver.RowsAffected(0), nil
}

// posRecord writes a position statement that names the position.
type posRecord struct{ stubRecord }

func (posRecord) PositionSQL(pos string, _, _ int64) string { return "DO 'pos " + pos + "'" }

// workersFixture is an applier with n workers on scriptConns, running their jobs.
type workersFixture struct {
	a     *Applier
	log   *tripLog
	conns []*scriptConn
	ws    []*worker
	done  chan error
}

func newWorkersFixture(t *testing.T, ctx context.Context, n int) *workersFixture {
	t.Helper()
	f := &workersFixture{log: &tripLog{}, done: make(chan error, n)}
	a := New(Config{Workers: n, Record: posRecord{}, Logger: slog.New(slog.DiscardHandler)})
	a.maxPacket = 1 << 20
	a.sched = newScheduler(n, "p0")
	a.plan = plan.New(plan.Config{ExecMode: plan.ExecModeStrict, MaxBatch: parallelMaxBatch, Writesets: true, Parallel: true}, "p0")
	a.pool.free = make(chan *worker, n)
	for i := range n {
		c := &scriptConn{name: fmt.Sprintf("w%d", i+1), log: f.log}
		db := sql.OpenDB(c)
		t.Cleanup(func() { db.Close() })
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		w := &worker{n: i + 1, jobs: make(chan *job, 1)}
		w.s = &session{conn: conn, id: int64(100 + i), tr: &tracker{}, w: w}
		f.conns, f.ws = append(f.conns, c), append(f.ws, w)
		a.pool.free <- w
	}
	a.pool.list.Store(&f.ws)
	f.a = a
	wctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	for _, w := range f.ws {
		go func() { f.done <- a.work(wctx, w) }()
	}
	return f
}

// dispatch places and dispatches the commit of a batch of one statement (text) as the
// dispatcher does, ending at pos, writing rows (table t) ids, which no job in flight writes.
func (f *workersFixture) dispatch(t *testing.T, ctx context.Context, text, pos string, ids ...int) *job {
	t.Helper()
	var b plan.Batch
	b.Add("", "BEGIN")
	b.Add("", text)
	st := plan.Step{Kind: plan.StepCommit, Stmts: &b, Writeset: keysWS("t", ids...), End: plan.Saved{Pos: pos, Commits: cutTxns}}
	where, dep := f.a.sched.place(&st)
	if where != onWorker || dep != nil {
		t.Fatalf("the commit of %s placed %s after %p, want on a worker after none", pos, where, dep)
	}
	j, err := f.a.dispatch(ctx, &st, nil)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// waitDone waits until j committed, or fails the test when a worker ended first.
func (f *workersFixture) waitDone(t *testing.T, ctx context.Context, j *job) {
	t.Helper()
	select {
	case <-j.done:
	case err := <-f.done:
		t.Fatalf("a worker ended before %s committed: %v", j.end.Pos, err)
	case <-ctx.Done():
		t.Fatalf("%s did not commit", j.end.Pos)
	}
}

// gate returns a hook that holds a round trip containing substr back until release is closed,
// after telling reached (once).
func gate(substr string, reached, release chan struct{}) func(context.Context, string) error {
	var once sync.Once
	return func(ctx context.Context, q string) error {
		if !strings.Contains(q, substr) {
			return nil
		}
		once.Do(func() { close(reached) })
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// TestWorkers_commitInSourceOrder: three jobs on three workers, the first held back in its
// round trip: the later two send their rows (they overlap nothing) but commit only after it, in
// source order, each with its own position in its COMMIT's round trip, so that the record's pos
// is always the end of a committed prefix.
func TestWorkers_commitInSourceOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	f := newWorkersFixture(t, ctx, 3)
	reached, release := make(chan struct{}), make(chan struct{})
	f.conns[0].hook = gate("job1", reached, release)
	sent := make(chan string, 2)
	for _, c := range f.conns[1:] {
		c.hook = func(_ context.Context, q string) error {
			if strings.Contains(q, "job") {
				sent <- q
			}
			return nil
		}
	}
	j1 := f.dispatch(t, ctx, "DO 'job1'", "p1", 1)
	<-reached
	j2 := f.dispatch(t, ctx, "DO 'job2'", "p2", 2)
	j3 := f.dispatch(t, ctx, "DO 'job3'", "p3", 3)
	for range 2 {
		select {
		case q := <-sent:
			if strings.Contains(q, "COMMIT") {
				t.Fatalf("a later job committed while the first was in flight: %q", q)
			}
		case <-ctx.Done():
			t.Fatal("the later jobs did not send their rows while the first was held back")
		}
	}
	if pos, _ := f.log.commits(); len(pos) != 0 {
		t.Fatalf("commits %v with the first job held back, want none", pos)
	}
	close(release)
	for _, j := range []*job{j1, j2, j3} {
		f.waitDone(t, ctx, j)
	}
	pos, by := f.log.commits()
	if strings.Join(pos, " ") != "p1 p2 p3" || strings.Join(by, " ") != "w1 w2 w3" {
		t.Fatalf("commits %v by %v, want p1 p2 p3 by w1 w2 w3; round trips:\n%s", pos, by, strings.Join(f.log.trips, "\n"))
	}
	if f.a.committed != "p3" || f.a.stats.Transactions.Load() != 3*cutTxns || f.a.sched.busy() {
		t.Errorf("after the commits: committed %q, %d transactions, busy %v", f.a.committed, f.a.stats.Transactions.Load(), f.a.sched.busy())
	}
}

// TestWorkers_retryAfterAHiddenConflict: a later job that the target refuses (a foreign key's
// parent that an earlier job inserts, which no writeset shows) rolls back and runs again once
// the jobs before it committed, and commits in its turn; the same error in the oldest job is the
// batch's own and ends the worker.
func TestWorkers_retryAfterAHiddenConflict(t *testing.T) {
	fkErr := &mysql.MySQLError{Number: 1452, Message: "Cannot add or update a child row: a foreign key constraint fails"}
	t.Run("later job", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		f := newWorkersFixture(t, ctx, 2)
		reached, release := make(chan struct{}), make(chan struct{})
		f.conns[0].hook = gate("parent", reached, release)
		failed := make(chan struct{})
		var once sync.Once
		f.conns[1].hook = func(_ context.Context, q string) error {
			fail := false
			once.Do(func() { fail = strings.Contains(q, "child") })
			if fail {
				close(failed)
				return fkErr
			}
			return nil
		}
		j1 := f.dispatch(t, ctx, "DO 'parent'", "p1", 1)
		<-reached
		j2 := f.dispatch(t, ctx, "DO 'child'", "p2", 2)
		<-failed
		close(release)
		f.waitDone(t, ctx, j1)
		f.waitDone(t, ctx, j2)
		pos, _ := f.log.commits()
		if strings.Join(pos, " ") != "p1 p2" || f.a.stats.Retries.Load() != 1 || f.log.count("w2: ROLLBACK") != 1 {
			t.Fatalf("commits %v, %d retries, %d rollbacks on w2; want p1 p2, 1, 1; round trips:\n%s",
				pos, f.a.stats.Retries.Load(), f.log.count("w2: ROLLBACK"), strings.Join(f.log.trips, "\n"))
		}
	})
	t.Run("oldest job", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		f := newWorkersFixture(t, ctx, 2)
		f.conns[0].hook = func(_ context.Context, q string) error {
			if strings.Contains(q, "child") {
				return fkErr
			}
			return nil
		}
		f.dispatch(t, ctx, "DO 'child'", "p1", 1)
		select {
		case err := <-f.done:
			var me *mysql.MySQLError
			if !errors.As(err, &me) || me.Number != 1452 {
				t.Fatalf("the worker ended with %v, want the target's error 1452", err)
			}
		case <-ctx.Done():
			t.Fatal("the oldest job's error did not end its worker")
		}
		if f.a.stats.Retries.Load() != 0 {
			t.Errorf("%d retries of the oldest job's own error", f.a.stats.Retries.Load())
		}
	})
}

// lockTarget answers the lock watcher's queries: the lock waits' query with blockers (or err),
// and records the KILL QUERY statements.
type lockTarget struct {
	mu       sync.Mutex
	blockers []int64
	err      error
	queries  []string
	kills    []string
}

func (c *lockTarget) Connect(context.Context) (driver.Conn, error) { return c, nil }
func (c *lockTarget) Driver() driver.Driver                        { return nil }
func (c *lockTarget) Prepare(string) (driver.Stmt, error)          { return nil, errors.New("not supported") }
func (c *lockTarget) Close() error                                 { return nil }
func (c *lockTarget) Begin() (driver.Tx, error)                    { return nil, errors.New("not supported") }
func (c *lockTarget) ExecContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.kills = append(c.kills, q)
	return driver.RowsAffected(0), nil
}
func (c *lockTarget) QueryContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Rows, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queries = append(c.queries, q)
	if c.err != nil {
		return nil, c.err
	}
	return &idRows{ids: c.blockers}, nil
}

type idRows struct{ ids []int64 }

func (r *idRows) Columns() []string { return []string{"trx_mysql_thread_id"} }
func (r *idRows) Close() error      { return nil }
func (r *idRows) Next(dest []driver.Value) error {
	if len(r.ids) == 0 {
		return io.EOF
	}
	dest[0], r.ids = r.ids[0], r.ids[1:]
	return nil
}

// TestCheckLocks: once the oldest job's round trip has run for lockCheckAfter, the lock watcher
// asks the target what it waits for, and rolls back the later jobs that hold it: one that waits
// for its turn is told to (abort), one whose statement runs has it killed. Later jobs that hold
// nothing it waits for go on; when the target cannot say, every later job is rolled back. MySQL
// 8.0's performance_schema is asked when information_schema lacks the lock waits.
func TestCheckLocks(t *testing.T) {
	now := time.Unix(1000, 0)
	setup := func(target *lockTarget) (*Applier, []*job) {
		a := New(Config{Workers: 4, Record: stubRecord{}, DB: sql.OpenDB(target), Logger: slog.New(slog.DiscardHandler),
			Now: func() time.Time { return now }})
		t.Cleanup(func() { a.cfg.DB.Close() })
		a.sched = newScheduler(4, "p0")
		var jobs []*job
		for i := range 4 {
			j, _ := a.sched.dispatch(commitStep(keysWS("t", i), 1, 10, fmt.Sprint("p", i+1)), nil, "g")
			w := &worker{n: i + 1}
			w.s = &session{id: int64(100 + i), tr: &tracker{}, w: w}
			j.worker.Store(w)
			jobs = append(jobs, j)
		}
		jobs[0].state.Store(jobRunning)
		jobs[0].worker.Load().s.tr.start("UPDATE `s`.`t`", now.Add(-lockCheckAfter))
		jobs[1].state.Store(jobHolding)
		jobs[2].state.Store(jobRunning)
		jobs[3].state.Store(jobHolding)
		return a, jobs
	}
	aborted := func(j *job) bool {
		select {
		case <-j.abort:
			return true
		default:
			return false
		}
	}

	target := &lockTarget{blockers: []int64{101, 102}}
	a, jobs := setup(target)
	jobs[0].worker.Load().s.tr.start("UPDATE `s`.`t`", now.Add(-lockCheckAfter+time.Millisecond))
	if q := a.checkLocks(t.Context(), lockWaitsIS); q != lockWaitsIS || len(target.queries) != 0 {
		t.Fatalf("asked the target %d times before lockCheckAfter", len(target.queries))
	}
	jobs[0].worker.Load().s.tr.start("UPDATE `s`.`t`", now.Add(-lockCheckAfter))
	a.checkLocks(t.Context(), lockWaitsIS)
	if len(target.queries) != 1 || !strings.HasSuffix(target.queries[0], "= 100") {
		t.Fatalf("lock waits asked %q, want one query for session 100", target.queries)
	}
	if !aborted(jobs[1]) || aborted(jobs[3]) {
		t.Errorf("holding jobs aborted: blocker %v, other %v; want true, false", !aborted(jobs[1]), aborted(jobs[3]))
	}
	if !jobs[2].worker.Load().killed.Load() || len(target.kills) != 1 || target.kills[0] != "KILL QUERY 102" {
		t.Errorf("running blocker: killed %v, statements %q; want KILL QUERY 102", jobs[2].worker.Load().killed.Load(), target.kills)
	}

	target = &lockTarget{err: errors.New("connection refused")}
	a, jobs = setup(target)
	a.checkLocks(t.Context(), lockWaitsIS)
	if !aborted(jobs[1]) || !aborted(jobs[3]) || len(target.kills) != 1 {
		t.Errorf("with no answer: aborted %v %v, kills %q; want every later job rolled back", aborted(jobs[1]), aborted(jobs[3]), target.kills)
	}

	target = &lockTarget{err: &mysql.MySQLError{Number: 1109, Message: "Unknown table 'INNODB_LOCK_WAITS'"}}
	a, _ = setup(target)
	if q := a.checkLocks(t.Context(), lockWaitsIS); q != lockWaitsPS || len(target.queries) != 2 || !strings.Contains(target.queries[1], "performance_schema") {
		t.Errorf("information_schema without lock waits: next query %q after %q, want performance_schema's", q, target.queries)
	}
}

// TestWorkers_manyJobsCommitInOrder: a stream of jobs on other rows each, on three workers that
// take the one-round-trip commit whenever their turn has come: they commit in source order, and
// the applier's committed position, written by whichever worker committed, ends at the last.
func TestWorkers_manyJobsCommitInOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	f := newWorkersFixture(t, ctx, 3)
	var jobs []*job
	var want []string
	for i := range 30 {
		pos := fmt.Sprint("p", i+1)
		jobs = append(jobs, f.dispatch(t, ctx, fmt.Sprintf("DO 'job%d'", i+1), pos, i+1))
		want = append(want, pos)
	}
	for _, j := range jobs {
		f.waitDone(t, ctx, j)
	}
	if pos, _ := f.log.commits(); strings.Join(pos, " ") != strings.Join(want, " ") {
		t.Fatalf("commits %v, want %v", pos, want)
	}
	if f.a.committed != "p30" {
		t.Errorf("committed position %q, want p30", f.a.committed)
	}
}

// TestWhere_whileAJobCommits: a message about the main session's transaction (a planner error
// in the middle of a fetch) reads the committed position while a worker may be writing it: it
// reads it under the scheduler's lock, and finds a position that some job committed.
func TestWhere_whileAJobCommits(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	f := newWorkersFixture(t, ctx, 2)
	reached, release := make(chan struct{}), make(chan struct{})
	f.conns[0].hook = gate("job1", reached, release)
	j1 := f.dispatch(t, ctx, "DO 'job1'", "p1", 1)
	j2 := f.dispatch(t, ctx, "DO 'job2'", "p2", 2)
	<-reached
	close(release)
	for !closed(j2.done) {
		if _, from := f.a.where(nil); from != "" && from != "p1" && from != "p2" {
			t.Fatalf("where read %q while the jobs committed, want p1, p2 or nothing yet", from)
		}
	}
	f.waitDone(t, ctx, j1)
	if _, from := f.a.where(nil); from != "p2" {
		t.Errorf("where read %q after the jobs committed, want p2", from)
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
