package e2e

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vplayer/vplayer/internal/eventually"
	"github.com/vplayer/vplayer/internal/workload"
	"github.com/vplayer/vplayer/workflow"
)

// copyTables are the source tables of the copy tests: the workload's three (order_lines has a
// composite key), one with a binary key and one without any key.
var copyTables = append(append([]string(nil), workload.Tables...), "bins", "nokey")

// createCopySource creates the copy tests' tables on the source only and fills them: the
// workload's tables with txns of its transactions, bins and nokey with rows rows each (nokey
// with duplicate rows).
func (e *env) createCopySource(txns int64, rows int) {
	e.t.Helper()
	if err := workload.Create(e.ctx(), e.db, e.src); err != nil {
		e.t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE bins (id varbinary(16) NOT NULL, v varchar(50) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, n int, f float, PRIMARY KEY (id), KEY n (n), KEY vf (v(10), f))",
		"CREATE TABLE nokey (a int, b varchar(20), c blob, KEY a (a))",
	} {
		e.exec(e.src, q)
	}
	if err := workload.Run(e.ctx(), e.src, e.db, workload.Config{Workers: 2, Transactions: txns, Seed: 5}, nil); err != nil {
		e.t.Fatal(err)
	}
	var b strings.Builder
	for i := 0; i < rows; i++ {
		if b.Len() == 0 {
			b.WriteString("INSERT INTO bins VALUES ")
		} else {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "(UNHEX('%04x00ff%04x'), 'Ab é %d', %d, %d.5)", i*7919%65536, i, i, i, i)
		if i%500 == 499 || i == rows-1 {
			e.exec(e.src, b.String())
			b.Reset()
		}
	}
	for i := 0; i < rows; i++ {
		if b.Len() == 0 {
			b.WriteString("INSERT INTO nokey VALUES ")
		} else {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "(%d, 'r%d', UNHEX('00%04x'))", i%(rows/2), i%(rows/2), i)
		if i%500 == 499 || i == rows-1 {
			e.exec(e.src, b.String())
			b.Reset()
		}
	}
}

func (e *env) exec(db *sql.DB, stmts ...string) {
	e.t.Helper()
	for _, q := range stmts {
		if _, err := db.ExecContext(e.ctx(), q); err != nil {
			e.t.Fatalf("%s: %v", q, err)
		}
	}
}

// copyWriter changes rows all over bins, nokey and customers (the workload only touches its newest
// rows) until ctx ends: inserts, updates (of the key too) and deletes, one per transaction.
func (e *env) copyWriter(ctx context.Context, rows int, seed uint64, n *atomic.Int64) error {
	rng := rand.New(rand.NewPCG(seed, 1))
	return e.writeUntil(ctx, n, 250*time.Microsecond, func() string {
		i := rng.IntN(rows)
		switch rng.IntN(8) {
		case 0:
			return fmt.Sprintf("INSERT IGNORE INTO bins VALUES (UNHEX('%04x01%04x'), 'new %d', %d, NULL)", rng.IntN(65536), i, i, i)
		case 1:
			return fmt.Sprintf("UPDATE bins SET v = CONCAT(v, 'x'), n = n + 1 WHERE id >= UNHEX('%04x') ORDER BY id LIMIT 1", rng.IntN(65536))
		case 2:
			return fmt.Sprintf("DELETE FROM bins WHERE id >= UNHEX('%04x') ORDER BY id LIMIT 1", rng.IntN(65536))
		case 3:
			return fmt.Sprintf("UPDATE IGNORE bins SET id = UNHEX('%04x02%04x') WHERE id >= UNHEX('%04x') ORDER BY id LIMIT 1", rng.IntN(65536), i, rng.IntN(65536))
		case 4:
			return fmt.Sprintf("INSERT INTO nokey VALUES (%d, 'w%d', NULL)", i, i)
		case 5:
			return fmt.Sprintf("UPDATE nokey SET b = CONCAT(b, 'u') WHERE a = %d LIMIT 1", i/2)
		case 6:
			return fmt.Sprintf("DELETE FROM nokey WHERE a = %d LIMIT 1", i/2)
		default:
			return fmt.Sprintf("UPDATE customers SET balance = balance + 1 WHERE id >= (SELECT MIN(id) FROM customers) + %d ORDER BY id LIMIT 1", i)
		}
	})
}

// writeUntil runs the statements next returns on the source, one a transaction, pace apart,
// until ctx ends, counting each in n; the first error ends it.
func (e *env) writeUntil(ctx context.Context, n *atomic.Int64, pace time.Duration, next func() string) error {
	for ctx.Err() == nil {
		q := next()
		if _, err := e.src.ExecContext(ctx, q); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("%s: %w", q, err)
		}
		n.Add(1)
		time.Sleep(pace)
	}
	return nil
}

// writeDuring runs the workload and copyWriter until the returned stop is called; stop returns
// the transactions they committed.
func (e *env) writeDuring(rows int) (stop func() int64) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(e.ctx())
	var st workload.Stats
	var n atomic.Int64
	errs := make(chan error, 2)
	go func() { errs <- workload.Run(ctx, e.src, e.db, workload.Config{Workers: 2, Rate: 150, Seed: 9}, &st) }()
	go func() { errs <- e.copyWriter(ctx, rows, 3, &n) }()
	return func() int64 {
		cancel()
		for range 2 {
			if err := <-errs; err != nil {
				e.t.Fatal(err)
			}
		}
		return st.Transactions.Load() + n.Load()
	}
}

// copyState returns the workflow's copy state.
func (e *env) copyState() []workflow.TableCopy {
	e.t.Helper()
	s := workflow.New(e.dstPool, "_vt")
	r, err := s.Get(e.ctx(), e.workflow)
	if err != nil {
		e.t.Fatal(err)
	}
	st, err := s.CopyState(e.ctx(), r.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

// copyTotals returns the chunks and rows of the workflow's finished copy, and fails the test for
// each table whose copy state is not done.
func (e *env) copyTotals() (chunks, rows int64) {
	e.t.Helper()
	for _, c := range e.copyState() {
		if !c.Done {
			e.t.Errorf("copy state of %s not done: %+v", c.Table, c)
		}
		chunks += c.Chunks
		rows += c.Rows
	}
	return chunks, rows
}

// waitRecordState waits, for a record that may not exist yet, until the record's state is want.
func (e *env) waitRecordState(want string, timeout time.Duration) workflow.Record {
	e.t.Helper()
	var r workflow.Record
	eventually.Must(e.t, timeout, 20*time.Millisecond, "the workflow "+want, func() error {
		var err error
		if r, err = workflow.New(e.dstPool, "_vt").Get(e.ctx(), e.workflow); err == nil && r.State != want {
			err = fmt.Errorf("state %q, message %q", r.State, r.Message)
		}
		return err
	})
	return r
}

// TestCopy_onlineUnderWrites: on an empty target, a workflow started without --start-pos creates
// the five tables (a composite key, a binary key with a case-insensitive column, no key at all),
// copies them in small chunks while a workload inserts, updates and deletes all over them, then
// replicates: target == source row for row, and vplayer diff says equal.
func TestCopy_onlineUnderWrites(t *testing.T) {
	e := newEnv(t)
	const rows = 2000
	e.createCopySource(800, rows)
	stop := e.writeDuring(rows)
	began := time.Now()
	// Chunks of 20 rows keep the copy going for a few seconds, longer than a status run.
	p := e.startVplayer("--start-pos=", "--copy-chunk-rows", "20", "--metrics-addr", "127.0.0.1:0")
	addr := p.metricsAddr(30 * time.Second)
	e.waitRecordState(workflow.StateCopying, 30*time.Second)
	// While it copies: the record's message, vplayer status and /metrics show the progress. A
	// vplayer status takes a good part of a second under the race detector, so it runs, again
	// and again, beside the quick looks at the record and /metrics.
	var sawMessage, sawMetrics bool
	var statusOut atomic.Value // the output that showed the progress, once one did
	var noMore atomic.Bool     // the copy is over: no status after the one running
	statusDone, sctx := make(chan struct{}), e.ctx()
	go func() { // no t here: the test goroutine alone may fail the test
		defer close(statusDone)
		for !noMore.Load() {
			// A status that started during the copy shows it, even if the copy ends meanwhile.
			out, err := exec.CommandContext(sctx, binary, "status", "--target", e.target.DSN(e.db), "--workflow", e.workflow).CombinedOutput()
			if err == nil && strings.Contains(string(out), "copy of "+e.workflow+":") && strings.Contains(string(out), "ROWS COPIED") {
				statusOut.Store(string(out))
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	var stopOnce sync.Once
	endStatus := func() { stopOnce.Do(func() { noMore.Store(true); <-statusDone }) }
	defer endStatus()
	_ = eventually.Wait(90*time.Second, 20*time.Millisecond, func() error { // the Running state is waited for below
		rec := e.record()
		if rec.State != workflow.StateCopying {
			return nil
		}
		if !sawMessage && strings.HasPrefix(rec.Message, "copying: ") {
			sawMessage = true
			t.Logf("message: %s", rec.Message)
		}
		if !sawMetrics {
			m, _ := getMetrics(t, addr)
			if m.get(t, "vplayer_copy_rows_total") > 0 && m.get(t, "vplayer_state", "state", "Copying") == 1 {
				sawMetrics = true
				t.Logf("metrics: %v rows copied, %v tables remaining", m.get(t, "vplayer_copy_rows_total"), m.get(t, "vplayer_copy_tables_remaining"))
			}
		}
		return errors.New("copying")
	})
	endStatus()
	out, sawStatus := statusOut.Load().(string)
	if sawStatus {
		t.Logf("status:\n%s", out)
	}
	if !sawMessage || !sawStatus || !sawMetrics {
		t.Errorf("during the copy: progress in the message %v, in vplayer status %v, in /metrics %v; want all", sawMessage, sawStatus, sawMetrics)
	}
	e.waitRecordState(workflow.StateRunning, 90*time.Second)
	copied := time.Since(began)
	if m, _ := getMetrics(t, addr); m.get(t, "vplayer_copy_tables_remaining") != 0 || m.get(t, "vplayer_copy_phase_seconds_total") <= 0 {
		t.Errorf("after the copy: %v tables remaining and %v copy seconds, want 0 and more than 0",
			m.get(t, "vplayer_copy_tables_remaining"), m.get(t, "vplayer_copy_phase_seconds_total"))
	}
	time.Sleep(500 * time.Millisecond) // replication under writes too
	txns := stop()
	e.waitCaughtUp(60 * time.Second)
	t.Logf("copy phase took %v; %d source transactions during the test", copied, txns)
	e.assertEqual(copyTables)
	e.assertSameDefinitions(copyTables)
	chunks, copiedRows := e.copyTotals()
	if chunks < 10 {
		t.Errorf("the copy took %d chunks, want many: the chunk bound is 100 rows", chunks)
	}
	t.Logf("%d rows copied in %d chunks", copiedRows, chunks)
	if !strings.Contains(p.out.String(), "copied in one consistent scan") {
		t.Errorf("no warning about the keyless table:\n%s", p.out.String())
	}
	r := e.runDiff()
	if r.code != 0 || !strings.Contains(r.stdout, "equal: 5 tables") {
		t.Errorf("vplayer diff after the copy: exit %d, want 0 and 5 equal tables\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("vplayer exited %d after SIGTERM, want 0", code)
	}
}

// updateWriter updates rows of bins and customers until ctx ends, without changing any row count
// or key: the rows the copy reads keep changing while their number stays the same.
func (e *env) updateWriter(ctx context.Context) error {
	rng := rand.New(rand.NewPCG(17, 1))
	for ctx.Err() == nil {
		q := fmt.Sprintf("UPDATE bins SET n = n + 1, v = CONCAT(LEFT(v, 40), 'u') WHERE id >= UNHEX('%04x') ORDER BY id LIMIT 1", rng.IntN(65536))
		if rng.IntN(2) == 0 {
			q = fmt.Sprintf("UPDATE customers SET balance = balance + 1 WHERE id >= (SELECT MIN(id) FROM customers) + %d ORDER BY id LIMIT 1", rng.IntN(1000))
		}
		if _, err := e.src.ExecContext(ctx, q); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// TestCopy_killedAndResumed: vplayer is SIGKILLed at random moments of the copy, at least five
// times, and started again each time: the copy resumes from its copy state (no committed chunk is
// copied again: each table's rows copied equal its rows, and its chunks the number one
// uninterrupted copy takes), then replicates, and target == source.
func TestCopy_killedAndResumed(t *testing.T) {
	e := newEnv(t)
	const rows, chunk = 6000, 100
	e.createCopySource(600, rows)
	want := map[string]int64{}
	for _, name := range copyTables {
		want[name] = int64(e.count(e.src, name))
	}
	ctx, cancel := context.WithCancel(e.ctx())
	wdone := make(chan error, 1)
	go func() { wdone <- e.updateWriter(ctx) }()
	args := []string{"--start-pos=", "--copy-chunk-rows", fmt.Sprint(chunk), "--lease-ttl", "1s"}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	kills := 0
	prev := map[string]workflow.TableCopy{}
	for try := 0; kills < 5 && try < 15; try++ {
		p := e.startVplayer(args...)
		e.waitRecordState(workflow.StateCopying, 30*time.Second)
		// Kill at a random moment once this process copies: after its first chunk commits (one
		// that only finds a table's end, or a key build, counts too).
		before := copyProgress(prev)
		eventually.Must(t, 30*time.Second, 10*time.Millisecond, fmt.Sprintf("try %d: the restarted copy's progress", try), func() error {
			if n := copyProgress(chunksByTable(e.copyState())); n == before {
				return fmt.Errorf("%d chunks committed", n)
			}
			return nil
		})
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
		p.cmd.Process.Kill()
		p.waitKilled(10 * time.Second)
		st := e.copyState()
		if copierDone(st) {
			t.Logf("try %d: the copy was done before the kill", try)
			break
		}
		kills++
		var copied int64
		for _, c := range st {
			copied += c.Rows
			if c.Table != "nokey" && c.Rows < prev[c.Table].Rows {
				t.Errorf("kill %d: %s has %d rows copied, fewer than the %d before the restart", kills, c.Table, c.Rows, prev[c.Table].Rows)
			}
			prev[c.Table] = c
		}
		t.Logf("kill %d: %d rows copied so far", kills, copied)
	}
	if kills < 5 {
		t.Errorf("only %d kills landed during the copy, want 5", kills)
	}
	p := e.startVplayer(args...)
	e.waitRecordState(workflow.StateRunning, 90*time.Second)
	cancel()
	if err := <-wdone; err != nil {
		t.Fatal(err)
	}
	e.waitCaughtUp(60 * time.Second)
	e.assertEqual(copyTables)
	e.assertSameDefinitions(copyTables)
	for _, c := range e.copyState() {
		if c.Rows != want[c.Table] {
			t.Errorf("%s: %d rows copied, the table has %d: a chunk was copied twice or lost", c.Table, c.Rows, want[c.Table])
		}
		chunks := want[c.Table]/chunk + 1 // the last chunk holds fewer rows than the bound, maybe none
		if c.Table == "nokey" {
			chunks = 1
		}
		if c.Chunks != chunks {
			t.Errorf("%s: %d chunks committed, want %d as for an uninterrupted copy", c.Table, c.Chunks, chunks)
		}
	}
	p.signal(syscall.SIGTERM)
	p.waitCode(10*time.Second, 0)
}

// assertSameDefinitions checks that the copy created each table as the source defines it: the
// secondary keys it deferred are all built, as they were defined.
func (e *env) assertSameDefinitions(tables []string) {
	e.t.Helper()
	autoInc := regexp.MustCompile(` AUTO_INCREMENT=[0-9]+`)
	for _, name := range tables {
		var defs [2]string
		for i, db := range []*sql.DB{e.src, e.dst} {
			var got string
			if err := db.QueryRowContext(e.ctx(), "SHOW CREATE TABLE `"+e.db+"`.`"+name+"`").Scan(&got, &defs[i]); err != nil {
				e.t.Fatal(err)
			}
			defs[i] = autoInc.ReplaceAllString(defs[i], "")
		}
		if defs[0] != defs[1] {
			e.t.Errorf("%s is defined differently on the target:\n%s\nsource:\n%s", name, defs[1], defs[0])
		}
	}
}

func chunksByTable(st []workflow.TableCopy) map[string]workflow.TableCopy {
	m := map[string]workflow.TableCopy{}
	for _, c := range st {
		m[c.Table] = c
	}
	return m
}

// copiedRows sums the rows copied of the tables with a key (a keyless table's count starts over).
func copiedRows(m map[string]workflow.TableCopy) int64 {
	var n int64
	for name, c := range m {
		if name != "nokey" {
			n += c.Rows
		}
	}
	return n
}

// copyProgress sums what a copy does, every step of it: rows copied (but the keyless table's,
// whose count starts over at each restart), tables done, and tables with their keys built.
func copyProgress(m map[string]workflow.TableCopy) int64 {
	n := copiedRows(m)
	for _, c := range m {
		if c.Done {
			n++
		}
		if len(c.DeferredKeys) == 0 {
			n++
		}
	}
	return n
}

func copierDone(st []workflow.TableCopy) bool {
	for _, c := range st {
		if !c.Done {
			return false
		}
	}
	return len(st) > 0
}

// TestCopy_stallOnTargetLock: a copy whose INSERT waits on a lock another target session holds
// fails within --vplayer-progress-deadline + 1s with the copy stall error, in the log and the
// record; once the lock goes, the retry resumes from the copy state and the copy completes.
func TestCopy_stallOnTargetLock(t *testing.T) {
	e := newEnv(t)
	e.createCopySource(50, 200)
	// The target table exists, empty; a session holds its supremum lock, so any insert waits.
	e.exec(e.dst, "CREATE TABLE bins (id varbinary(16) NOT NULL, v varchar(50) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, n int, f float, PRIMARY KEY (id))")
	release := e.lockRow("SELECT * FROM " + e.db + ".bins FOR UPDATE")
	const deadline = 2 * time.Second
	p := e.startVplayer("--start-pos=", "--vplayer-progress-deadline", deadline.String(), "--retry-delay", "500ms")
	// The chunk's first round trip waits: BEGIN and the DELETE before its rows (a LOAD DATA or
	// INSERTs, as the table's types allow).
	e.waitBlocked("`"+e.db+"`.`bins`", 30*time.Second)
	blocked := time.Now().Add(-100 * time.Millisecond) // waitBlocked saw it running for 100ms
	at, msg := e.waitMessage("copy stalled: ", 15*time.Second)
	took := at.Sub(blocked)
	t.Logf("stall reported %v after the INSERT blocked: %s", took, msg)
	if took > deadline+time.Second+200*time.Millisecond { // the record's poll adds up to 20ms; the first check up to 100ms early
		t.Errorf("stall reported %v after the copy blocked, want within the deadline %v + 1s", took, deadline)
	}
	for _, want := range []string{"copy stalled: no progress for ", "while running LOAD DATA `" + e.db + "`.`bins`", stalledText} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	p.waitOutput("error in stream "+e.workflow+", will retry after 500ms: copy stalled: ", 5*time.Second)
	release()
	e.waitRecordState(workflow.StateRunning, 60*time.Second)
	e.waitCaughtUp(30 * time.Second)
	e.assertEqual(copyTables)
	p.signal(syscall.SIGTERM)
	p.waitCode(10*time.Second, 0)
}

// TestCopy_stopAndResume: `vplayer stop` in the middle of the copy, then SIGTERM in the middle
// of its resumed copy: each stops the process within 2s with exit 0 and the record Stopped, and
// the copy state keeps what was committed; a third run finishes the copy from there, copying no
// chunk twice, and target == source.
func TestCopy_stopAndResume(t *testing.T) {
	e := newEnv(t)
	const rows, chunk = 3000, 5 // small chunks: many rounds, so that each stop lands in the copy
	e.createCopySource(100, rows)
	args := []string{"--start-pos=", "--copy-chunk-rows", fmt.Sprint(chunk)}
	stops := []struct {
		name string
		stop func(p *proc)
	}{
		{"vplayer stop", func(*proc) {
			if code, out := runProc(t, nil, 15*time.Second, "stop", "--target", e.target.DSN(""), "--workflow", e.workflow); code != 0 {
				t.Fatalf("vplayer stop: exit %d: %s", code, out)
			}
		}},
		{"SIGTERM", func(p *proc) { p.signal(syscall.SIGTERM) }},
	}
	var before int64
	for _, st := range stops {
		p := e.startVplayer(args...)
		e.waitRecordState(workflow.StateCopying, 30*time.Second)
		eventually.Must(t, 30*time.Second, 10*time.Millisecond, st.name+": the copy's progress past "+fmt.Sprint(before)+" rows", func() error {
			if n := copiedRows(chunksByTable(e.copyState())); n <= before {
				return fmt.Errorf("%d rows copied", n)
			}
			return nil
		})
		stopped := time.Now()
		st.stop(p)
		code := p.wait(10 * time.Second)
		took := time.Since(stopped)
		if code != 0 || took > 2*time.Second+500*time.Millisecond { // the stop command's own start included
			t.Errorf("%s during the copy: exit %d after %v, want 0 within 2s", st.name, code, took)
		}
		if rec := e.record(); rec.State != workflow.StateStopped {
			t.Errorf("%s during the copy: record state %q, want Stopped", st.name, rec.State)
		}
		state := e.copyState()
		if copierDone(state) {
			t.Fatalf("%s: the copy was done before the stop; make it bigger", st.name)
		}
		before = copiedRows(chunksByTable(state))
		t.Logf("%s: stopped %v after it was asked, %d rows copied", st.name, took.Round(time.Millisecond), before)
	}
	// Stopped midway, the copy is still not done: a diff refuses to compare, and a run with a
	// stop position is refused, copying nothing (the chunk counts below say so).
	if r := e.runDiff(); r.code == 0 || !strings.Contains(r.stdout+r.stderr, "is copying its tables") {
		t.Errorf("vplayer diff of a copy stopped midway: exit %d, want it refused:\n%s%s", r.code, r.stdout, r.stderr)
	}
	refused := e.startVplayer(append(args, "--stop-pos", e.sourcePos().String())...)
	if code := refused.wait(30 * time.Second); code != 1 || !strings.Contains(refused.out.String(), "--stop-pos cannot be used while the workflow copies") {
		t.Errorf("vplayer run --stop-pos during the copy: exit %d, want 1 and the refusal:\n%s", code, refused.out.String())
	}
	if got := copiedRows(chunksByTable(e.copyState())); got != before {
		t.Errorf("%d rows copied after the refused run, %d before it", got, before)
	}
	p := e.startVplayer(args...)
	e.waitRecordState(workflow.StateRunning, 90*time.Second)
	e.waitCaughtUp(30 * time.Second)
	e.assertEqual(copyTables)
	e.assertSameDefinitions(copyTables)
	for _, c := range e.copyState() {
		n := int64(e.count(e.src, c.Table))
		if c.Rows != n {
			t.Errorf("%s: %d rows copied, the table has %d: a chunk was copied twice or lost", c.Table, c.Rows, n)
		}
		if want := n/chunk + 1; c.Table != "nokey" && c.Chunks != want {
			t.Errorf("%s: %d chunks committed, want %d as for an uninterrupted copy", c.Table, c.Chunks, want)
		}
	}
	p.signal(syscall.SIGTERM)
	p.waitCode(10*time.Second, 0)
}

// startBlockedKeyBuild starts a copy (with extra flags) of createCopySource's tables whose build
// of orders' deferred key waits for the table's metadata lock, which another target session
// holds by reading orders in an open transaction, until releaseOrders; alter is the build's
// statement as the processlist shows it. A writer builds a table's keys right after its last
// chunk, so each step waits for the test: the copy's one writer (--copy-writers 1) takes bins
// first, the largest table, which exists on the target, empty, its supremum locked; meanwhile
// the test locks orders' supremum the same way, lets bins go, and once orders' chunk waits,
// opens the reader and lets the chunk go.
func (e *env) startBlockedKeyBuild(extra ...string) (p *proc, alter string, releaseOrders func()) {
	e.t.Helper()
	e.createCopySource(50, 2000)
	e.exec(e.dst, "CREATE TABLE bins (id varbinary(16) NOT NULL, v varchar(50) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, n int, f float, PRIMARY KEY (id))")
	releaseBins := e.lockRow("SELECT * FROM " + e.db + ".bins FOR UPDATE")
	defer releaseBins()
	p = e.startVplayer(append([]string{"--start-pos=", "--copy-writers", "1"}, extra...)...)
	e.waitBlocked("`"+e.db+"`.`bins`", 30*time.Second)
	lockOrders := e.lockRow("SELECT * FROM " + e.db + ".orders FOR UPDATE")
	defer lockOrders()
	releaseBins()
	e.waitBlocked("`"+e.db+"`.`orders`", 30*time.Second)
	if keys := chunksByTable(e.copyState())["orders"].DeferredKeys; len(keys) != 1 {
		e.t.Fatalf("orders' deferred keys %q, want its one secondary key", keys)
	}
	releaseOrders = e.lockRow("SELECT * FROM " + e.db + ".orders LIMIT 1")
	lockOrders()
	alter = "ALTER TABLE `" + e.db + "`.`orders` ADD KEY"
	e.waitBlocked(alter, 30*time.Second)
	return p, alter, releaseOrders
}

// TestCopy_stallOnKeyBuild: the build of a table's deferred secondary key, which waits for the
// table's metadata lock while another target session reads the table in an open transaction,
// fails the stream within --vplayer-progress-deadline + 1s with the copy stall error; once the
// reader ends, the retry builds the key and the table is defined as on the source.
func TestCopy_stallOnKeyBuild(t *testing.T) {
	e := newEnv(t)
	const deadline = 3 * time.Second
	p, alter, releaseOrders := e.startBlockedKeyBuild("--vplayer-progress-deadline", deadline.String(), "--retry-delay", "500ms")
	blocked := time.Now().Add(-100 * time.Millisecond) // waitBlocked saw it running for 100ms
	heartbeat := e.record().TimeHeartbeat
	at, msg := e.waitMessage("while running "+alter, 15*time.Second)
	// While the copy holds the stream, heartbeats are still recorded (every second by default).
	if got := e.record().TimeHeartbeat; got <= heartbeat {
		t.Errorf("time_heartbeat %d when the stall was reported, %d when the key build blocked: no heartbeat recorded while the copy held the stream", got, heartbeat)
	}
	took := at.Sub(blocked)
	t.Logf("stall reported %v after the key build blocked: %s", took, msg)
	if took > deadline+time.Second+200*time.Millisecond {
		t.Errorf("stall reported %v after the key build blocked, want within the deadline %v + 1s", took, deadline)
	}
	for _, want := range []string{"copy stalled: no progress for ", stalledText} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	releaseOrders()
	e.waitRecordState(workflow.StateRunning, 60*time.Second)
	e.waitCaughtUp(30 * time.Second)
	e.assertEqual(copyTables)
	e.assertSameDefinitions([]string{"customers", "orders", "order_lines", "nokey"}) // bins is the test's
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("vplayer exited %d after SIGTERM, want 0", code)
	}
}

// TestCopy_signalDuringKeyBuild: SIGTERM while a deferred key's build waits for the table's
// metadata lock stops the process within 2s with exit 0 and the record Stopped (SPEC 8), its
// build's session killed rather than left waiting; the next run builds the key and the table is
// defined as on the source.
func TestCopy_signalDuringKeyBuild(t *testing.T) {
	e := newEnv(t)
	p, alter, releaseOrders := e.startBlockedKeyBuild()
	var builder int64
	if err := e.dstPool.QueryRowContext(e.ctx(), "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE ? AND ID <> CONNECTION_ID()", alter+"%").Scan(&builder); err != nil {
		t.Fatalf("find the session building orders' key: %v", err)
	}
	stopped := time.Now()
	p.signal(syscall.SIGTERM)
	code := p.wait(10 * time.Second)
	took := time.Since(stopped)
	t.Logf("stopped %v after SIGTERM, the key build waiting", took.Round(time.Millisecond))
	if code != 0 || took > 2*time.Second {
		t.Errorf("SIGTERM during a key build: exit %d after %v, want 0 within 2s", code, took)
	}
	if rec := e.record(); rec.State != workflow.StateStopped {
		t.Errorf("record state %q after SIGTERM, want Stopped", rec.State)
	}
	if e.sessionAlive(builder) {
		t.Errorf("the key build's session %d is still in the target's processlist after the process stopped", builder)
	}
	if keys := chunksByTable(e.copyState())["orders"].DeferredKeys; len(keys) != 1 {
		t.Errorf("orders' deferred keys %q after the stop, want its one secondary key still to build", keys)
	}
	releaseOrders()
	p = e.startVplayer("--start-pos=")
	e.waitRecordState(workflow.StateRunning, 60*time.Second)
	e.waitCaughtUp(30 * time.Second)
	e.assertEqual(copyTables)
	e.assertSameDefinitions([]string{"customers", "orders", "order_lines", "nokey"})
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("vplayer exited %d after SIGTERM, want 0", code)
	}
}

// TestCopy_takeoverEndsFrozenOwnersChunk: the owner is frozen (SIGSTOP) in the middle of the
// copy with a chunk's target transaction open and its rows locked. The standby takes the
// workflow over after the lease's ttl and ends the frozen owner's copy sessions, which the lease
// recorded, so that their locks go at once; it copies the rest, and the old owner, thawed, exits
// having lost the workflow.
func TestCopy_takeoverEndsFrozenOwnersChunk(t *testing.T) {
	e := newEnv(t)
	e.createCopySource(50, 60000) // bins' chunk takes several round trips (1 MiB each)
	// The target table exists, empty, and a session holds its supremum lock: the owner's chunk of
	// bins waits in its first INSERT, its transaction open.
	e.exec(e.dst, "CREATE TABLE bins (id varbinary(16) NOT NULL, v varchar(50) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, n int, f float, PRIMARY KEY (id))")
	release := e.lockRow("SELECT * FROM " + e.db + ".bins FOR UPDATE")
	defer release()
	ttl := []string{"--start-pos=", "--lease-ttl", leaseTTL.String()}
	a := e.startVplayer(ttl...)
	shape := "`" + e.db + "`.`bins`" // its chunk's first round trip: BEGIN and the DELETE
	e.waitBlocked(shape, 30*time.Second)
	var writer int64
	if err := e.dstPool.QueryRowContext(e.ctx(), "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE ? AND ID <> CONNECTION_ID()", "%"+shape+"%").Scan(&writer); err != nil {
		t.Fatalf("find the copy's session writing bins: %v", err)
	}
	var recorded string
	if err := e.dstPool.QueryRowContext(e.ctx(), "SELECT COALESCE(sessions, '') FROM _vt.vreplication WHERE workflow = ?", e.workflow).Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	if _, ids, _ := strings.Cut(recorded, ":"); !slices.Contains(strings.Split(ids, ","), strconv.FormatInt(writer, 10)) {
		t.Errorf("the owner's recorded sessions %q lack the copy's session %d", recorded, writer)
	}
	b := e.startVplayer(ttl...)
	b.waitOutput("waiting as a standby", 10*time.Second)
	_, epochA := e.owner()
	a.signal(syscall.SIGSTOP)
	frozenAt := time.Now()
	// The frozen owner's rows go in; its transaction stays open, holding them, the server waiting
	// for its client (between two round trips, or inside the LOAD DATA for its next rows).
	release()
	eventually.Must(t, 5*time.Second, 150*time.Millisecond, fmt.Sprintf("the frozen owner's chunk transaction (session %d) open with rows locked", writer), func() error {
		if open, _ := e.openTrx(writer); !open {
			return errors.New("no open transaction with rows locked")
		}
		return nil
	})
	took := e.waitEpochAbove(epochA, leaseTTL+5*time.Second).Sub(frozenAt)
	e.waitRecordState(workflow.StateRunning, 60*time.Second)
	t.Logf("standby took over %v and finished the copy %v after the freeze (ttl %v)", took.Round(time.Millisecond), time.Since(frozenAt).Round(time.Millisecond), leaseTTL)
	if e.sessionAlive(writer) {
		t.Errorf("the frozen owner's copy session %d is still in the target's processlist after the takeover", writer)
	}
	if !strings.Contains(b.out.String(), "ended the previous owner's target sessions") {
		t.Errorf("the new owner did not say it ended the previous owner's sessions:\n%s", b.out.String())
	}
	e.waitCaughtUp(30 * time.Second)
	e.assertEqual(copyTables)
	a.signal(syscall.SIGCONT)
	if code := a.wait(leaseTTL + 20*time.Second); code == 0 {
		t.Errorf("the old owner exited with 0 after losing the workflow, want an error exit")
	}
	if !strings.Contains(a.out.String(), "lost ownership of workflow "+e.workflow) {
		t.Errorf("the old owner did not say it lost the workflow:\n%s", a.out.String())
	}
	b.signal(syscall.SIGTERM)
	if code := b.wait(10 * time.Second); code != 0 {
		t.Errorf("the new owner exited with %d, want 0", code)
	}
}

// TestCopy_typeZoo: every column type of SPEC section 7 with its edge values, in tables with a
// key (binary, composite) and without one, copied in chunks of three rows onto a target that
// lacks the tables: created from the source's definitions, byte for byte identical.
func TestCopy_typeZoo(t *testing.T) {
	e := newEnv(t)
	tables := e.createZoo(typeZoo, true)
	tables = append(tables, e.createZoo(keyZoo, false)...)
	e.runZoo(typeZoo, true)
	e.runZoo(keyZoo, false)
	for _, name := range tables {
		e.exec(e.dst, "DROP TABLE "+name)
	}
	cfg := e.streamConfig()
	cfg.StartPos, cfg.CopyChunkRows = "", 3
	stop := e.runStream(cfg)
	e.waitRecordState(workflow.StateRunning, 60*time.Second)
	e.waitCaughtUp(30 * time.Second)
	if err := stop(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	e.assertIdentical(e.db, tables)
	e.assertEqual(tables)
	e.expectTarget(zooChecks)
	var chunks int64
	for _, c := range e.copyState() {
		chunks += c.Chunks
	}
	t.Logf("%d tables copied in %d chunks", len(tables), chunks)
}
