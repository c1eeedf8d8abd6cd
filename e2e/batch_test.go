package e2e

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/internal/eventually"
	"github.com/vplayer/vplayer/stream"
)

// binlogBytes returns the total size of the source's binary logs.
func (e *env) binlogBytes() int64 {
	e.t.Helper()
	rows, err := e.srcPool.QueryContext(e.ctx(), "SHOW BINARY LOGS")
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var total int64
	for rows.Next() {
		vals := make([]any, len(cols))
		var name string
		var size int64
		vals[0], vals[1] = &name, &size
		for i := 2; i < len(vals); i++ {
			vals[i] = new(sql.RawBytes)
		}
		if err := rows.Scan(vals...); err != nil {
			e.t.Fatal(err)
		}
		total += size
	}
	return total
}

// attempts collects the live pipelines of a stream's attempts.
type attempts struct {
	mu  sync.Mutex
	all []*stream.Attempt
}

func (a *attempts) add(at *stream.Attempt) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.all = append(a.all, at)
}

// len returns the number of attempts started so far.
func (a *attempts) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.all)
}

// totals sums the applier counters over all attempts.
func (a *attempts) totals() (txns, commits, rows int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, at := range a.all {
		st := at.Applier.Stats()
		txns += st.Transactions.Load()
		commits += st.Commits.Load()
		rows += st.Rows.Load()
	}
	return
}

// createEvents creates the events table on both sides and writes n single-row transactions to
// the source, returning the position before them.
func (e *env) createEvents(n int) binlog.Position {
	e.t.Helper()
	for _, db := range []*sql.DB{e.src, e.dst} {
		if _, err := db.ExecContext(e.ctx(), "CREATE TABLE events (id int NOT NULL PRIMARY KEY, v varchar(40) NOT NULL)"); err != nil {
			e.t.Fatal(err)
		}
	}
	start := e.sourcePos()
	e.writeEvents(1, n)
	return start
}

// writeEvents writes the rows from to to (inclusive) of the events table to the source, one
// transaction each.
func (e *env) writeEvents(from, to int) {
	e.t.Helper()
	for i := from; i <= to; i++ {
		if _, err := e.src.ExecContext(e.ctx(), "INSERT INTO events VALUES (?, ?)", i, fmt.Sprintf("event %d", i)); err != nil {
			e.t.Fatal(err)
		}
	}
}

// TestGrouping: with many small source transactions buffered, target commits are far fewer than
// source transactions.
func TestGrouping(t *testing.T) {
	e := newEnv(t)
	const n = 3000
	start := e.createEvents(1)
	var at attempts
	cfg := e.streamConfig()
	cfg.StartPos = start.String()
	cfg.OnStart = at.add
	// One session: the serial applier's grouping. Workers' dispatcher fetches again while a job
	// is in flight, so the relay log would not hold the backlog; their grouping (a small batch
	// held open while jobs are in flight) is applier's TestLoop_heldBatchGoesWhenTheJobsCommit.
	cfg.ApplyWorkers = 1
	// Room for the whole backlog, so that the reader never waits for the applier.
	cfg.RelayLogMaxItems = 4 * n
	cfg.RelayLogMaxBytes = 10 << 20
	// The applier takes everything buffered at each fetch, so which of reader and applier starts
	// first must not decide what the relay log holds: the applier fetches the one transaction
	// written so far and blocks on a lock applying it; only then does the source write the rest,
	// which the relay log buffers whole while the applier cannot fetch.
	release := e.lockRow("SELECT * FROM " + e.db + ".events WHERE id > 0 FOR UPDATE")
	stop := e.runStream(cfg)
	e.waitBlocked("`"+e.db+"`.`events`", 30*time.Second)
	blocked := time.Now()
	e.writeEvents(2, n)
	const want = 3 * (n - 1) // each transaction is three events: begin, rows, commit
	eventually.Must(t, 30*time.Second, 20*time.Millisecond, fmt.Sprintf("the relay log to hold the %d events the source wrote", want), func() error {
		at.mu.Lock()
		defer at.mu.Unlock()
		buffered := 0
		if len(at.all) > 0 {
			buffered = at.all[len(at.all)-1].Relay.Len()
		}
		if buffered < want {
			return fmt.Errorf("it holds %d", buffered)
		}
		return nil
	})
	t.Logf("the applier was blocked for %v while the relay log filled", time.Since(blocked).Round(time.Millisecond))
	release()
	e.waitCaughtUp(60 * time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	e.assertEqual([]string{"events"})
	txns, commits, _ := at.totals()
	t.Logf("source transactions applied: %d; target commits: %d; %.1f transactions per commit", txns, commits, float64(txns)/float64(max(commits, 1)))
	if got := at.len(); got != 1 {
		t.Fatalf("the stream ran %d attempts, want 1", got)
	}
	if txns != n {
		t.Errorf("applied %d transactions, want %d", txns, n)
	}
	if commits*10 > txns {
		t.Errorf("%d target commits for %d source transactions: want at least 10 transactions per commit", commits, txns)
	}
}

// TestFailureBeforeCommit: a failure injected between a batch's rows and its COMMIT loses and
// doubles nothing: the retry applies the batch again from the committed position.
func TestFailureBeforeCommit(t *testing.T) {
	e := newEnv(t)
	const n = 2000
	start := e.createEvents(n)
	var at attempts
	var calls, injected atomic.Int64
	cfg := e.streamConfig()
	cfg.StartPos = start.String()
	cfg.OnStart = at.add
	cfg.BeforeCommit = func() error {
		if calls.Add(1) == 2 { // the second batch: after one commit, with rows sent
			injected.Add(1)
			return errors.New("injected failure before COMMIT")
		}
		return nil
	}
	stop := e.runStream(cfg)
	e.waitCaughtUp(60 * time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	e.assertEqual([]string{"events"})
	if got := e.count(e.dst, "events"); got != n {
		t.Errorf("target has %d rows, want %d", got, n)
	}
	if injected.Load() != 1 {
		t.Fatalf("the failure was injected %d times, want 1", injected.Load())
	}
	if got := at.len(); got < 2 {
		t.Errorf("stream ran %d attempts, want a retry after the injected failure", got)
	}
	var logged int
	if err := e.dstPool.QueryRowContext(e.ctx(), "SELECT COUNT(*) FROM _vt.vreplication_log l JOIN _vt.vreplication v ON v.id = l.vrepl_id WHERE v.workflow = ? AND l.message LIKE '%injected failure%'", e.workflow).Scan(&logged); err != nil {
		t.Fatal(err)
	}
	if logged != 1 {
		t.Errorf("vreplication_log has %d rows for the injected failure, want 1", logged)
	}
}

// TestBoundedMemory: with the default relay log bounds, a backlog of at least 50 MB of row events
// is applied while the heap stays under 64 MiB.
func TestBoundedMemory(t *testing.T) {
	e := newEnv(t)
	for _, db := range []*sql.DB{e.src, e.dst} {
		if _, err := db.ExecContext(e.ctx(), "CREATE TABLE blobs (id int NOT NULL PRIMARY KEY, payload mediumblob NOT NULL)"); err != nil {
			t.Fatal(err)
		}
	}
	start := e.sourcePos()
	before := e.binlogBytes()
	payload := make([]byte, 2000)
	const perTxn, rowsTotal = 50, 26000
	for id := 0; id < rowsTotal; id += perTxn {
		var sb strings.Builder
		sb.WriteString("INSERT INTO blobs VALUES ")
		args := make([]any, 0, 2*perTxn)
		for j := 0; j < perTxn; j++ {
			if j > 0 {
				sb.WriteString(",")
			}
			sb.WriteString("(?, ?)")
			rand.Read(payload)
			args = append(args, id+j, append([]byte(nil), payload...))
		}
		if _, err := e.src.ExecContext(e.ctx(), sb.String(), args...); err != nil {
			t.Fatal(err)
		}
	}
	backlog := e.binlogBytes() - before
	t.Logf("backlog: %.1f MB of row data, %.1f MB of binlog", float64(rowsTotal*len(payload))/1e6, float64(backlog)/1e6)
	if backlog < 50e6 {
		t.Fatalf("backlog is %d bytes, want at least 50 MB", backlog)
	}

	runtime.GC()
	var peak atomic.Uint64
	ctx, cancel := context.WithCancel(context.Background())
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	cfg := e.streamConfig()
	cfg.StartPos = start.String()
	began := time.Now()
	stop := e.runStream(cfg)
	e.waitCaughtUp(3 * time.Minute)
	took := time.Since(began)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-sampled
	t.Logf("applied %.1f MB in %v (%.1f MB/s); peak heap in use %.1f MiB", float64(backlog)/1e6, took.Round(time.Millisecond), float64(backlog)/1e6/took.Seconds(), float64(peak.Load())/(1<<20))
	if got := e.count(e.dst, "blobs"); got != rowsTotal {
		t.Errorf("target has %d rows, want %d", got, rowsTotal)
	}
	if p := peak.Load(); p >= 64<<20 {
		t.Errorf("peak heap in use %d bytes, want under 64 MiB", p)
	}
}
