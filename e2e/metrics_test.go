package e2e

import (
	"crypto/rand"
	"errors"
	"fmt"
	"github.com/vplayer/vplayer/internal/eventually"
	"net/http"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMetricsAndHealth runs the binary with --metrics-addr and scrapes it: counters move with a
// workload, the relay log gauges fill while a target lock blocks the applier, /healthz turns 503
// during the induced stall and back to 200 after recovery, and counters stay monotonic across the
// retry's new attempt.
func TestMetricsAndHealth(t *testing.T) {
	const deadline = 2 * time.Second
	e := newEnv(t)
	e.createKV("mediumblob")
	if _, err := e.src.ExecContext(e.ctx(), "INSERT INTO kv VALUES (1, 'x'), (2, 'y')"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.dst.ExecContext(e.ctx(), "INSERT INTO kv VALUES (1, 'x'), (2, 'y')"); err != nil {
		t.Fatal(err)
	}
	p := e.startVplayer("--metrics-addr", "127.0.0.1:0", "--vplayer-progress-deadline", deadline.String(), "--retry-delay", "300ms")
	addr := p.metricsAddr(30 * time.Second)
	began := time.Now() // the progress line's ticker starts with the metrics server
	healthz := func() (int, string) { return httpGet("http://" + addr + "/healthz") }
	waitHealth := func(want int, timeout time.Duration) string {
		t.Helper()
		var body string
		eventually.Must(t, timeout, 50*time.Millisecond, fmt.Sprintf("/healthz to answer %d", want), func() error {
			var code int
			if code, body = healthz(); code != want {
				return fmt.Errorf("%d %q", code, body)
			}
			return nil
		})
		return body
	}
	waitHealth(http.StatusOK, 30*time.Second)
	e.waitRunning(10 * time.Second)

	m, _ := getMetrics(t, addr)
	if got := m.get(t, "vplayer_state", "state", "Running", "workflow", e.workflow); got != 1 {
		t.Errorf("vplayer_state{state=Running}=%v, want 1", got)
	}
	if got := m.get(t, "vplayer_relaylog_max_items"); got != 5000 {
		t.Errorf("vplayer_relaylog_max_items=%v, want 5000", got)
	}
	if got := m.get(t, "vplayer_relaylog_max_bytes"); got != 250000 {
		t.Errorf("vplayer_relaylog_max_bytes=%v, want 250000", got)
	}
	if got := m.get(t, "vplayer_build_info", "workflow", e.workflow, "goversion", runtime.Version()); got != 1 {
		t.Errorf("vplayer_build_info=%v, want 1", got)
	}

	// A workload: 300 transactions of one row each.
	for i := 0; i < 300; i++ {
		if _, err := e.src.ExecContext(e.ctx(), "INSERT INTO kv VALUES (?, 'z')", 100+i); err != nil {
			t.Fatal(err)
		}
	}
	e.waitCaughtUp(30 * time.Second)
	m1, _ := getMetrics(t, addr)
	txns, rows, commits := m1.get(t, "vplayer_transactions_applied_total"), m1.get(t, "vplayer_rows_applied_total"), m1.get(t, "vplayer_commits_total")
	t.Logf("after 300 transactions: transactions %v, rows %v, commits %v, lag %.3fs", txns, rows, commits, m1.get(t, "vplayer_lag_seconds"))
	if txns < 300 || rows < 300 || commits < 1 || commits > txns {
		t.Errorf("transactions %v, rows %v, commits %v: want at least 300, 300 and between 1 and the transactions", txns, rows, commits)
	}
	if got := m1.get(t, "vplayer_transactions_per_commit_count"); got != commits {
		t.Errorf("vplayer_transactions_per_commit_count=%v, want the commits %v", got, commits)
	}
	if got := m1.get(t, "vplayer_transactions_per_commit_sum"); got != txns {
		t.Errorf("vplayer_transactions_per_commit_sum=%v, want the transactions %v", got, txns)
	}
	if lag := m1.get(t, "vplayer_lag_seconds"); lag > 2 {
		t.Errorf("lag once caught up=%vs, want under 2s", lag)
	}

	// Stall: a lock on the target blocks the applier while the source writes more than the relay
	// log holds.
	release := e.lockRow("SELECT * FROM " + e.db + ".kv WHERE id = 1 FOR UPDATE")
	locked := time.Now()
	blob := make([]byte, 4000)
	for i := 0; i < 200; i++ {
		rand.Read(blob)
		if _, err := e.src.ExecContext(e.ctx(), "UPDATE kv SET v = ? WHERE id = ?", blob, 1+i%2); err != nil {
			t.Fatal(err)
		}
	}
	var maxItems, maxBytes, maxBlocked, maxLag float64
	var unhealthy string
	_ = eventually.Wait(deadline+10*time.Second, 100*time.Millisecond, func() error {
		s, _ := getMetrics(t, addr)
		maxItems = max(maxItems, s.get(t, "vplayer_relaylog_items"))
		maxBytes = max(maxBytes, s.get(t, "vplayer_relaylog_bytes"))
		maxBlocked = max(maxBlocked, s.get(t, "vplayer_relaylog_blocked_seconds_total"))
		maxLag = max(maxLag, s.get(t, "vplayer_lag_seconds"))
		code, body := healthz()
		if code != http.StatusServiceUnavailable {
			return fmt.Errorf("/healthz %d", code)
		}
		unhealthy = body
		if s.get(t, "vplayer_stalls_total", "detector", "relay_log") < 1 || maxBlocked <= 0 {
			return errors.New("no relay log stall counted, or not blocked")
		}
		return nil
	}) // what it did not see is reported below
	t.Logf("during the stall (%v after the lock): relay log up to %v items, %v bytes; reader blocked %.2fs; lag up to %.2fs; /healthz %q",
		time.Since(locked).Round(time.Millisecond), maxItems, maxBytes, maxBlocked, maxLag, unhealthy)
	if !strings.Contains(unhealthy, "relay log I/O stalled") {
		t.Errorf("/healthz during the stall said %q, want 503 naming the relay log stall", unhealthy)
	}
	if maxItems < 1 || maxBytes < 100000 {
		t.Errorf("relay log gauges peaked at %v items, %v bytes, want it filled (250000 bytes)", maxItems, maxBytes)
	}
	if maxBlocked <= 0 {
		t.Errorf("vplayer_relaylog_blocked_seconds_total stayed 0 while the relay log was full")
	}
	if maxLag < deadline.Seconds() {
		t.Errorf("lag peaked at %.2fs during a stall of more than %v", maxLag, deadline)
	}
	s, _ := getMetrics(t, addr)
	if got := s.get(t, "vplayer_errors_total", "kind", "stall"); got < 1 {
		t.Errorf("vplayer_errors_total{kind=stall}=%v, want at least 1", got)
	}
	if got := s.get(t, "vplayer_healthy"); got != 0 {
		t.Errorf("vplayer_healthy=%v during the stall, want 0", got)
	}

	release()
	released := time.Now()
	waitHealth(http.StatusOK, 20*time.Second)
	t.Logf("/healthz back to 200 %v after the lock was released", time.Since(released).Round(time.Millisecond))
	e.waitCaughtUp(20 * time.Second)
	// The record's position is committed on the target a moment before the applier, back from
	// its COMMIT, counts the batch: the counter gets a few seconds to follow.
	var m2 scrape
	var applied float64
	_ = eventually.Wait(5*time.Second, 20*time.Millisecond, func() error {
		m2, _ = getMetrics(t, addr)
		if applied = m2.get(t, "vplayer_transactions_applied_total"); applied < txns+200 {
			return fmt.Errorf("%v applied", applied)
		}
		return nil
	}) // a shortfall is reported below
	if applied < txns+200 {
		t.Errorf("transactions after recovery=%v, want at least %v: counters must add up across attempts", applied, txns+200)
	}
	if got := m2.get(t, "vplayer_attempts_total"); got < 2 {
		t.Errorf("vplayer_attempts_total=%v after a stall and its retry, want at least 2", got)
	}
	if got := m2.get(t, "vplayer_healthy"); got != 1 {
		t.Errorf("vplayer_healthy=%v after recovery, want 1", got)
	}
	// Idle: the source's heartbeats arrive and get recorded.
	var m3 scrape
	var rcv, rec float64
	eventually.Must(t, 10*time.Second, 200*time.Millisecond, "a heartbeat received and recorded while idling", func() error {
		m3, _ = getMetrics(t, addr)
		rcv, rec = m3.get(t, "vplayer_heartbeats_received_total"), m3.get(t, "vplayer_heartbeats_recorded_total")
		if rcv == 0 || rec == 0 {
			return fmt.Errorf("received %v, recorded %v", rcv, rec)
		}
		return nil
	})
	t.Logf("idle: heartbeats received %v, recorded %v, pending %v, lag %.3fs", rcv, rec, m3.get(t, "vplayer_heartbeats_pending"), m3.get(t, "vplayer_lag_seconds"))
	if lag := m3.get(t, "vplayer_lag_seconds"); lag >= 3 {
		t.Errorf("lag while idle and caught up=%.3fs, want under 3s", lag)
	}

	// A progress line every 10s while Running (SPEC 9). A tick that falls while the stream is not
	// Running (retrying after the stall) logs nothing, so the line is due by the second tick.
	progressBy := began.Add(2*progressInterval + time.Second)
	if err := eventually.Wait(time.Until(progressBy), 100*time.Millisecond, func() error {
		if !strings.Contains(p.out.String(), `msg=progress`) {
			return errors.New("no progress line")
		}
		return nil
	}); err != nil {
		t.Errorf("%v in %v of running, want one every %v while Running", err, time.Since(began).Round(time.Second), progressInterval)
	}

	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("vplayer exited with %d after SIGTERM, want 0", code)
	}
	if code, _ := healthz(); code != 0 {
		t.Errorf("/healthz answered %d after exit, want the server gone", code)
	}
}

// progressInterval is how often a running vplayer logs a progress line (SPEC 9).
const progressInterval = 10 * time.Second
