package e2e

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"github.com/vplayer/vplayer/internal/eventually"
	"strings"
	"testing"
	"time"
)

// lockRow opens a transaction on the target that holds a row lock until the returned release is
// called, as another session of an operator or an application would.
func (e *env) lockRow(query string, args ...any) (release func()) {
	e.t.Helper()
	conn, err := e.dstPool.Conn(e.ctx())
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := conn.ExecContext(e.ctx(), "BEGIN"); err != nil {
		e.t.Fatal(err)
	}
	rows, err := conn.QueryContext(e.ctx(), query, args...)
	if err != nil {
		e.t.Fatal(err)
	}
	rows.Close()
	released := false
	release = func() {
		if released {
			return
		}
		released = true
		conn.ExecContext(context.Background(), "ROLLBACK")
		conn.Close()
	}
	e.t.Cleanup(release)
	return release
}

// waitMessage polls the record until its message contains want, and returns when that was seen.
func (e *env) waitMessage(want string, timeout time.Duration) (time.Time, string) {
	e.t.Helper()
	var last string
	eventually.Must(e.t, timeout, 20*time.Millisecond, fmt.Sprintf("the record's message to contain %q", want), func() error {
		if last = e.record().Message; !strings.Contains(last, want) {
			return fmt.Errorf("message %q", last)
		}
		return nil
	})
	return time.Now(), last
}

// waitLogRow polls _vt.vreplication_log until a row of this workflow contains want.
func (e *env) waitLogRow(want string, timeout time.Duration) (time.Time, string) {
	e.t.Helper()
	var msg string
	eventually.Must(e.t, timeout, 20*time.Millisecond, fmt.Sprintf("a vreplication_log row containing %q", want), func() error {
		err := e.dstPool.QueryRowContext(e.ctx(), `SELECT l.message FROM _vt.vreplication_log l JOIN _vt.vreplication v ON v.id = l.vrepl_id
WHERE v.workflow = ? AND l.message LIKE CONCAT('%', ?, '%') ORDER BY l.id DESC LIMIT 1`, e.workflow, want).Scan(&msg)
		if err != nil && err != sql.ErrNoRows {
			e.t.Fatal(err)
		}
		return err
	})
	return time.Now(), msg
}

const stalledText = "progress stalled; vplayer was unable to replicate the transaction in a timely manner; examine the target mysqld instance health and the replicated queries' EXPLAIN output to see why queries are taking unusually long"

func (e *env) createKV(payload string) {
	e.t.Helper()
	for _, db := range []*sql.DB{e.src, e.dst} {
		if _, err := db.ExecContext(e.ctx(), "CREATE TABLE kv (id int NOT NULL PRIMARY KEY, v "+payload+" NOT NULL)"); err != nil {
			e.t.Fatal(err)
		}
	}
}

// TestRelayLogStall: a lock on a target table blocks the applier while the source writes more than
// the relay log holds: within deadline + 1s the record and the log say "relay log I/O stalled",
// naming the blocked statement's table; after the lock goes, the stream recovers and catches up.
func TestRelayLogStall(t *testing.T) {
	const deadline = 3 * time.Second
	e := newEnv(t)
	e.createKV("mediumblob")
	if _, err := e.src.ExecContext(e.ctx(), "INSERT INTO kv VALUES (1, 'x'), (2, 'y')"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.dst.ExecContext(e.ctx(), "INSERT INTO kv VALUES (1, 'x'), (2, 'y')"); err != nil {
		t.Fatal(err)
	}
	cfg := e.streamConfig()
	cfg.ProgressDeadline = deadline
	cfg.RetryDelay = time.Second
	stop := e.runStream(cfg)
	e.waitRunning(30 * time.Second)
	release := e.lockRow("SELECT * FROM " + e.db + ".kv WHERE id = 1 FOR UPDATE")

	began := time.Now()
	blob := make([]byte, 4000)
	for i := 0; i < 200; i++ { // 800 KB of row images: more than the relay log's 250 KB
		rand.Read(blob)
		if _, err := e.src.ExecContext(e.ctx(), "UPDATE kv SET v = ? WHERE id = ?", blob, 1+i%2); err != nil {
			t.Fatal(err)
		}
	}
	at, msg := e.waitMessage("relay log I/O stalled: "+stalledText, deadline+5*time.Second)
	if took := at.Sub(began); took > deadline+time.Second {
		t.Errorf("relay log stall reported after %v, want within %v", took, deadline+time.Second)
	}
	if want := "`" + e.db + "`.`kv`"; !strings.Contains(msg, want) {
		t.Errorf("message %q does not name the blocked table %s", msg, want)
	}
	if _, logged := e.waitLogRow("relay log I/O stalled", time.Second); !strings.Contains(logged, "applier busy for") {
		t.Errorf("log row %q does not say what the applier was doing", logged)
	}
	released := time.Now()
	release()
	e.waitCaughtUp(cfg.RetryDelay + 10*time.Second)
	t.Logf("caught up %v after the lock was released", time.Since(released).Round(time.Millisecond))
	e.assertEqual([]string{"kv"})
	if m := e.record().Message; m != "" {
		t.Errorf("message after recovery = %q, want it cleared", m)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestApplierStall: one source transaction whose target statement is blocked by a lock: the
// relay log never fills, and the applier watchdog says "applier stalled" within deadline + 1s.
func TestApplierStall(t *testing.T) {
	for _, workers := range []int{1, 4} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) { testApplierStall(t, workers) })
	}
}

// testApplierStall is TestApplierStall with that many apply workers; with more than one, the
// message also names the worker whose statement waits.
func testApplierStall(t *testing.T, workers int) {
	const deadline = 3 * time.Second
	e := newEnv(t)
	e.createKV("int")
	for _, db := range []*sql.DB{e.src, e.dst} {
		if _, err := db.ExecContext(e.ctx(), "INSERT INTO kv VALUES (1, 1)"); err != nil {
			t.Fatal(err)
		}
	}
	cfg := e.streamConfig()
	cfg.ProgressDeadline = deadline
	cfg.RetryDelay = time.Second
	cfg.ApplyWorkers = workers
	stop := e.runStream(cfg)
	e.waitRunning(30 * time.Second)
	release := e.lockRow("UPDATE " + e.db + ".kv SET v = v WHERE id = 1")

	began := time.Now()
	if _, err := e.src.ExecContext(e.ctx(), "UPDATE kv SET v = 2 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	at, msg := e.waitMessage("applier stalled: no progress for", deadline+5*time.Second)
	if took := at.Sub(began); took > deadline+time.Second {
		t.Errorf("applier stall reported after %v, want within %v", took, deadline+time.Second)
	}
	// The source's UPDATE is applied as an upsert of the row's final image (see applier/fold.go);
	// the message names the statement's kind and table.
	wants := []string{"UPDATE `" + e.db + "`.`kv`", stalledText}
	if workers > 1 {
		wants = append(wants, " on worker ")
	}
	for _, want := range wants {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not contain %q", msg, want)
		}
	}
	release()
	e.waitCaughtUp(cfg.RetryDelay + 10*time.Second)
	e.assertEqual([]string{"kv"})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestHeartbeatStall: the source idle, another session holds the workflow's record row locked:
// the heartbeat write fails within its deadline, the log and vreplication_log say "failed to
// record heartbeat"; after release the record shows it until time_heartbeat advances again.
func TestHeartbeatStall(t *testing.T) {
	const interval = 2 * time.Second
	e := newEnv(t)
	e.createKV("int")
	var at attempts
	cfg := e.streamConfig()
	cfg.HeartbeatInterval = interval
	cfg.SourceHeartbeatPeriod = 500 * time.Millisecond
	cfg.RetryDelay = 500 * time.Millisecond
	cfg.OnStart = at.add
	logs := &syncBuffer{}
	cfg.Logger = newCaptureLogger(logs, e.workflow)
	stop := e.runStream(cfg)
	e.waitRunning(30 * time.Second)
	e.waitHeartbeatAdvance(0, 3*interval)

	before := e.record().TimeHeartbeat
	release := e.lockRow("SELECT * FROM _vt.vreplication WHERE workflow = ? FOR UPDATE", e.workflow)
	// The write starts when the next heartbeat is due; from then it has one interval.
	var started time.Time
	eventually.Must(t, 3*interval, 10*time.Millisecond, "a heartbeat write started while the record row is locked", func() error {
		at.mu.Lock()
		defer at.mu.Unlock()
		if n := len(at.all); n > 0 {
			started = at.all[n-1].Heartbeat.InFlightSince()
		}
		if started.IsZero() {
			return fmt.Errorf("none in flight in %d attempts", len(at.all))
		}
		return nil
	})
	seen, logged := e.waitLogRow("failed to record heartbeat", interval+5*time.Second)
	if took := seen.Sub(started); took > interval+time.Second {
		t.Errorf("heartbeat stall in vreplication_log %v after the write started, want within %v", took, interval+time.Second)
	}
	if !strings.Contains(logged, "failed to record heartbeat: ") || !strings.Contains(logged, stalledText) {
		t.Errorf("log row = %q, want the heartbeat stall text", logged)
	}
	if !strings.Contains(logs.String(), "error in stream "+e.workflow+", will retry after") || !strings.Contains(logs.String(), "failed to record heartbeat") {
		t.Errorf("log output lacks the ERROR line for the heartbeat stall:\n%s", logs.String())
	}
	if got := e.record().TimeHeartbeat; got != before {
		t.Errorf("time_heartbeat moved from %d to %d while the row was locked", before, got)
	}
	release()
	// The record shows the stall until a heartbeat is recorded again, then the message clears.
	sawMessage := false
	_ = eventually.Wait(4*interval, 10*time.Millisecond, func() error {
		r := e.record()
		if r.TimeHeartbeat <= before {
			sawMessage = sawMessage || strings.Contains(r.Message, "failed to record heartbeat")
			return errors.New("no heartbeat recorded")
		}
		if r.Message != "" && !strings.Contains(r.Message, "failed to record heartbeat") {
			t.Errorf("message %q after the heartbeat advanced", r.Message)
		}
		if r.Message != "" {
			return errors.New("message not cleared")
		}
		return nil
	}) // the record read below says what it did not reach
	r := e.record()
	if r.TimeHeartbeat <= before || r.Message != "" {
		t.Fatalf("after release: time_heartbeat %d (was %d), message %q: want it advanced and the message cleared", r.TimeHeartbeat, before, r.Message)
	}
	if !sawMessage {
		t.Errorf("the record's message never showed the heartbeat stall after the row was released")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// waitHeartbeatAdvance waits until time_heartbeat is above after, and returns it.
func (e *env) waitHeartbeatAdvance(after int64, timeout time.Duration) int64 {
	e.t.Helper()
	var hb int64
	eventually.Must(e.t, timeout, 20*time.Millisecond, fmt.Sprintf("time_heartbeat past %d", after), func() error {
		if hb = e.record().TimeHeartbeat; hb <= after {
			return fmt.Errorf("time_heartbeat %d", hb)
		}
		return nil
	})
	return hb
}

// TestHeartbeatCadence: with an idle source and an interval of 2s, time_heartbeat advances about
// every 2s and no more often.
func TestHeartbeatCadence(t *testing.T) {
	e := newEnv(t)
	e.createKV("int")
	cfg := e.streamConfig()
	cfg.HeartbeatInterval = 2 * time.Second
	stop := e.runStream(cfg)
	e.waitRunning(30 * time.Second)
	first := e.waitHeartbeatAdvance(0, 10*time.Second)
	values := []int64{first}
	end := time.Now().Add(9 * time.Second)
	for time.Now().Before(end) {
		if hb := e.record().TimeHeartbeat; hb != values[len(values)-1] {
			values = append(values, hb)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("time_heartbeat values: %v", values)
	if n := len(values) - 1; n < 3 || n > 5 {
		t.Errorf("time_heartbeat advanced %d times in 9s, want 3 to 5 (about every 2s)", n)
	}
	for i := 1; i < len(values); i++ {
		if d := values[i] - values[i-1]; d < 2 || d > 4 {
			t.Errorf("time_heartbeat step %d: %d -> %d (%ds), want 2s to 4s", i, values[i-1], values[i], d)
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
