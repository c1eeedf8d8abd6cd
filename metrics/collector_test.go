package metrics

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vplayer/vplayer/applier"

	"github.com/vplayer/vplayer/stall"
	"github.com/vplayer/vplayer/stream"
	"github.com/vplayer/vplayer/workflow"
)

// fakePipeline is a pipeline whose sample is set by the test.
type fakePipeline struct{ s sample }

func (f *fakePipeline) sample(time.Time) sample { return f.s }

var _ pipeline = (*fakePipeline)(nil)

// clock is a settable clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

var t0 = time.Unix(1_700_000_000, 0)

func newTestCollector() (*Collector, *clock) {
	c := &clock{t: t0}
	return New(Options{Workflow: "orders", RelayLogMaxBytes: 250000, RelayLogMaxItems: 5000, Now: c.now}), c
}

func TestCollector_countersMonotonicAcrossAttempts(t *testing.T) {
	col, _ := newTestCollector()
	a1 := &fakePipeline{s: sample{transactions: 10, rows: 30, commits: 2, saves: 2, heartbeatsReceived: 4, heartbeatsRecorded: 1, blocked: 2 * time.Second}}
	a1.s.perCommit[2] = 2 // two commits of 3..5 transactions
	col.start(a1)
	s := col.Snapshot()
	if got, want := s.Transactions, int64(10); got != want {
		t.Errorf("Transactions=%d, want %d", got, want)
	}
	a1.s.transactions, a1.s.rows, a1.s.commits = 15, 40, 3
	a2 := &fakePipeline{s: sample{transactions: 1, rows: 1, commits: 1, heartbeatsRecorded: 2, blocked: time.Second}}
	col.start(a2)
	s = col.Snapshot()
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"Transactions", s.Transactions, 16},
		{"Rows", s.Rows, 41},
		{"Commits", s.Commits, 4},
		{"HeartbeatsReceived", s.HeartbeatsReceived, 4},
		{"HeartbeatsRecorded", s.HeartbeatsRecorded, 3},
		{"PerCommit[2]", s.PerCommit[2], 2},
		{"Attempts", s.Attempts, 2},
	} {
		if c.got != c.want {
			t.Errorf("%s=%d, want %d", c.name, c.got, c.want)
		}
	}
	if got, want := s.RelayBlocked, 3*time.Second; got != want {
		t.Errorf("RelayBlocked=%v, want %v", got, want)
	}
}

func TestCollector_blockedNeverDecreases(t *testing.T) {
	col, _ := newTestCollector()
	a := &fakePipeline{s: sample{blocked: 5 * time.Second}}
	col.start(a)
	if got := col.Snapshot().RelayBlocked; got != 5*time.Second {
		t.Fatalf("RelayBlocked=%v, want 5s", got)
	}
	// A read that straddles the end of a wait undercounts for a moment.
	a.s.blocked = 4 * time.Second
	if got := col.Snapshot().RelayBlocked; got != 5*time.Second {
		t.Errorf("RelayBlocked=%v after a torn read, want it to stay at 5s", got)
	}
}

func TestCollector_lag(t *testing.T) {
	col, clk := newTestCollector()
	// Before any attempt: measured from the collector's start.
	clk.t = t0.Add(2 * time.Second)
	if got, want := col.Snapshot().Lag, 2*time.Second; got != want {
		t.Errorf("Lag before any attempt=%v, want %v", got, want)
	}

	// The first attempt holds a transaction committed on the source at t0-10s.
	a1 := &fakePipeline{s: sample{lagSince: t0.Add(-10 * time.Second), lagKnown: true}}
	col.start(a1)
	clk.t = t0.Add(5 * time.Second)
	if got, want := col.Snapshot().Lag, 15*time.Second; got != want {
		t.Errorf("Lag with a pending transaction=%v, want %v", got, want)
	}

	// It fails; the retry's attempt has received nothing yet: lag goes on from the pending
	// transaction instead of dropping to zero.
	col.OnError(errors.New("boom"), false)
	col.OnState(stream.StateRetrying)
	clk.t = t0.Add(8 * time.Second)
	a2 := &fakePipeline{}
	col.start(a2)
	if got, want := col.Snapshot().Lag, 18*time.Second; got != want {
		t.Errorf("Lag at the start of the next attempt=%v, want %v", got, want)
	}
	// Once the new attempt received something, its own reading counts.
	a2.s.lagSince, a2.s.lagKnown = t0.Add(7*time.Second), true
	if got, want := col.Snapshot().Lag, time.Second; got != want {
		t.Errorf("Lag once caught up=%v, want %v", got, want)
	}
	// A source clock ahead of ours reads as zero, never negative.
	a2.s.lagSince = t0.Add(time.Minute)
	if got := col.Snapshot().Lag; got != 0 {
		t.Errorf("Lag with a source clock ahead=%v, want 0", got)
	}
}

func TestErrorKind(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		terminal bool
		want     string
	}{
		{"stall", &stall.Error{Detector: stall.Applier}, false, KindStall},
		{"wrapped stall", fmt.Errorf("x: %w", &stall.Error{Detector: stall.Heartbeat}), false, KindStall},
		{"mysql", fmt.Errorf("apply: %w", &mysql.MySQLError{Number: 1205, Message: "Lock wait timeout"}), false, "mysql_1205"},
		{"terminal mysql", &mysql.MySQLError{Number: 1062}, true, "mysql_1062"},
		{"terminal", fmt.Errorf("%w: drift", stream.ErrTerminal), true, KindTerminal},
		{"other", errors.New("read binlog event: EOF"), false, KindOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ErrorKind(tt.err, tt.terminal); got != tt.want {
				t.Errorf("ErrorKind(%v, %v)=%q, want %q", tt.err, tt.terminal, got, tt.want)
			}
		})
	}
}

func TestCollector_health(t *testing.T) {
	col, _ := newTestCollector()
	check := func(step string, wantOK bool, wantReason string) {
		t.Helper()
		ok, reason := col.Health()
		if ok != wantOK || !strings.Contains(reason, wantReason) {
			t.Errorf("%s: Health()=%v, %q, want %v and a reason containing %q", step, ok, reason, wantOK, wantReason)
		}
	}
	check("before the first attempt", false, "starting")
	a1 := &fakePipeline{}
	col.OnState(workflow.StateRunning)
	col.start(a1)
	check("running", true, "ok")

	a1.s.saves = 3
	col.OnError(&stall.Error{Detector: stall.Applier, For: 5 * time.Second, Statement: "UPDATE `db`.`t`"}, false)
	check("stalled", false, "applier stalled")
	col.OnState(stream.StateRetrying)
	check("retrying", false, "waiting to retry after an error: applier stalled")

	a2 := &fakePipeline{}
	col.OnState(workflow.StateRunning)
	col.start(a2)
	check("running again, no progress yet", false, "no progress since the last error: applier stalled")
	a2.s.heartbeatsRecorded = 1
	check("after a recorded heartbeat", true, "ok")

	col.OnError(errors.New("boom"), false)
	a2.s.saves = 1
	check("a commit after the error", true, "ok")

	col.OnError(&mysql.MySQLError{Number: 1062, Message: "Duplicate entry"}, true)
	col.OnState(workflow.StateError)
	check("terminal", false, "stopped on a terminal error: Error 1062")
	col.OnState(workflow.StateStopped)
	check("stopped", false, "stopped")
	col.OnState(workflow.StateCopying)
	col.start(&fakePipeline{s: sample{saves: 5}})
	check("copying", true, "ok")
}

func TestCollector_prometheus(t *testing.T) {
	col, clk := newTestCollector()
	a := &fakePipeline{s: sample{
		transactions: 7, rows: 21, commits: 3, saves: 3, heartbeatsReceived: 5, heartbeatsRecorded: 2, heartbeatsPending: 1,
		blocked: 1500 * time.Millisecond, relayItems: 12, relayBytes: 3400,
		lagSince: t0.Add(-3 * time.Second), lagKnown: true,
		held: 2500 * time.Millisecond, hold: "manual", skippedStatements: 4,
	}}
	a.s.perCommit = [11]int64{1, 0, 2} // 1 commit of 1 transaction, 2 of 3..5
	col.OnState(workflow.StateRunning)
	col.start(a)
	col.OnError(&stall.Error{Detector: stall.RelayLog}, false)
	col.OnError(&mysql.MySQLError{Number: 1205}, false)
	clk.t = t0.Add(time.Second)

	want := `
# HELP vplayer_lag_seconds How far the target is behind the source, in seconds: now minus the source commit time of the oldest transaction vplayer received and has not yet committed on the target; 0 when everything received is applied and the source's last event or heartbeat arrived within its heartbeat period, else the time since it arrived. Source commit times are whole seconds.
# TYPE vplayer_lag_seconds gauge
vplayer_lag_seconds{workflow="orders"} 4
# HELP vplayer_relaylog_items Events buffered in the relay log.
# TYPE vplayer_relaylog_items gauge
vplayer_relaylog_items{workflow="orders"} 12
# HELP vplayer_relaylog_blocked_seconds_total Seconds the binlog reader spent blocked on a full relay log.
# TYPE vplayer_relaylog_blocked_seconds_total counter
vplayer_relaylog_blocked_seconds_total{workflow="orders"} 1.5
# HELP vplayer_stalls_total Stalls detected, by detector: relay_log, applier, heartbeat, copy or throttle (a throttle check that hung).
# TYPE vplayer_stalls_total counter
vplayer_stalls_total{detector="applier",workflow="orders"} 0
vplayer_stalls_total{detector="copy",workflow="orders"} 0
vplayer_stalls_total{detector="heartbeat",workflow="orders"} 0
vplayer_stalls_total{detector="relay_log",workflow="orders"} 1
vplayer_stalls_total{detector="throttle",workflow="orders"} 0
# HELP vplayer_throttled 1 for the kind of the hold in force (load, replica_lag, manual, delay), 0 for the others: the stream holds back on purpose, which is never a stall.
# TYPE vplayer_throttled gauge
vplayer_throttled{reason="delay",workflow="orders"} 0
vplayer_throttled{reason="load",workflow="orders"} 0
vplayer_throttled{reason="manual",workflow="orders"} 1
vplayer_throttled{reason="replica_lag",workflow="orders"} 0
# HELP vplayer_throttled_seconds_total Seconds the stream was held on purpose: throttled or delayed.
# TYPE vplayer_throttled_seconds_total counter
vplayer_throttled_seconds_total{workflow="orders"} 2.5
# HELP vplayer_skipped_statements_total Data changes the source logged as statements (binlog_format STATEMENT or MIXED) that named no replicated table, passed over.
# TYPE vplayer_skipped_statements_total counter
vplayer_skipped_statements_total{workflow="orders"} 4
# HELP vplayer_errors_total Stream errors, by kind: stall, mysql_<error number>, terminal or other.
# TYPE vplayer_errors_total counter
vplayer_errors_total{kind="mysql_1205",workflow="orders"} 1
vplayer_errors_total{kind="other",workflow="orders"} 0
vplayer_errors_total{kind="stall",workflow="orders"} 1
vplayer_errors_total{kind="terminal",workflow="orders"} 0
# HELP vplayer_state 1 for the stream's current state (Init, Copying, Running, Retrying, Stopped, Error), 0 for the others.
# TYPE vplayer_state gauge
vplayer_state{state="Copying",workflow="orders"} 0
vplayer_state{state="Error",workflow="orders"} 0
vplayer_state{state="Init",workflow="orders"} 0
vplayer_state{state="Retrying",workflow="orders"} 0
vplayer_state{state="Running",workflow="orders"} 1
vplayer_state{state="Stopped",workflow="orders"} 0
# HELP vplayer_transactions_per_commit Source transactions per target commit.
# TYPE vplayer_transactions_per_commit histogram
vplayer_transactions_per_commit_bucket{workflow="orders",le="1"} 1
vplayer_transactions_per_commit_bucket{workflow="orders",le="2"} 1
vplayer_transactions_per_commit_bucket{workflow="orders",le="5"} 3
vplayer_transactions_per_commit_bucket{workflow="orders",le="10"} 3
vplayer_transactions_per_commit_bucket{workflow="orders",le="20"} 3
vplayer_transactions_per_commit_bucket{workflow="orders",le="50"} 3
vplayer_transactions_per_commit_bucket{workflow="orders",le="100"} 3
vplayer_transactions_per_commit_bucket{workflow="orders",le="200"} 3
vplayer_transactions_per_commit_bucket{workflow="orders",le="500"} 3
vplayer_transactions_per_commit_bucket{workflow="orders",le="1000"} 3
vplayer_transactions_per_commit_bucket{workflow="orders",le="+Inf"} 3
vplayer_transactions_per_commit_sum{workflow="orders"} 7
vplayer_transactions_per_commit_count{workflow="orders"} 3
`
	if err := testutil.CollectAndCompare(col, strings.NewReader(want),
		NameLag, NameRelayItems, NameRelayBlocked, NameStalls, NameErrors, NameState, NameTransactionsPerCommit,
		NameThrottled, NameThrottledSeconds, NameSkippedStatements); err != nil {
		t.Error(err)
	}
	problems, err := testutil.CollectAndLint(col)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	// Every described metric is collected, and the collector registers cleanly.
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(col); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(col); n == 0 {
		t.Error("collected nothing")
	}
	if _, err := reg.Gather(); err != nil {
		t.Errorf("Gather: %v", err)
	}
}

func TestAttemptPipeline_nilParts(t *testing.T) {
	// An attempt whose parts are missing reads as zeros rather than panicking.
	s := attemptPipeline{&stream.Attempt{}}.sample(t0)
	if s.lagKnown || s.transactions != 0 {
		t.Errorf("sample of an empty attempt=%+v, want zeros", s)
	}
}

// TestCollector_mismatchesAcrossAttempts: the row mismatches of finished attempts are kept and
// the live attempt's added, per table and kind, and exported with those labels.
func TestCollector_mismatchesAcrossAttempts(t *testing.T) {
	col, _ := newTestCollector()
	upd := applier.MismatchKey{Table: "shop.orders", Kind: applier.UpdateMissing}
	del := applier.MismatchKey{Table: "shop.orders", Kind: applier.DeleteMissing}
	col.start(&fakePipeline{s: sample{mismatches: map[applier.MismatchKey]int64{upd: 3}}})
	col.start(&fakePipeline{s: sample{mismatches: map[applier.MismatchKey]int64{upd: 1, del: 2}}})
	s := col.Snapshot()
	if got := s.Mismatches[upd]; got != 4 {
		t.Errorf("update_missing = %d, want 4", got)
	}
	if got := s.Mismatches[del]; got != 2 {
		t.Errorf("delete_missing = %d, want 2", got)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(col)
	n, err := testutil.GatherAndCount(reg, NameRowMismatches)
	if err != nil || n != 2 {
		t.Errorf("%s series = %d (%v), want 2", NameRowMismatches, n, err)
	}
}

// TestCollector_SkippedExecuted: the reader's count of re-sent transactions adds up over attempts.
func TestCollector_SkippedExecuted(t *testing.T) {
	col, _ := newTestCollector()
	a1 := &fakePipeline{s: sample{skippedExecuted: 3}}
	col.start(a1)
	if got, want := col.Snapshot().SkippedExecuted, int64(3); got != want {
		t.Errorf("SkippedExecuted=%d, want %d", got, want)
	}
	a1.s.skippedExecuted = 5
	col.start(&fakePipeline{s: sample{skippedExecuted: 2}})
	if got, want := col.Snapshot().SkippedExecuted, int64(7); got != want {
		t.Errorf("SkippedExecuted after a second attempt=%d, want %d (5 + 2)", got, want)
	}
}

// TestCollector_buildInfo: vplayer_build_info is 1 with the binary's labels in every state, the
// first attempt's start included, so that a scrape of any vplayer process has it.
func TestCollector_buildInfo(t *testing.T) {
	clk := &clock{t: t0}
	col := New(Options{Workflow: "orders", Build: Build{Version: "v1.2.3", Revision: "0123abcd", GoVersion: "go1.26.8"}, Now: clk.now})
	want := `
# HELP vplayer_build_info Always 1, in every state: the binary's module version, VCS revision and Go version as labels.
# TYPE vplayer_build_info gauge
vplayer_build_info{goversion="go1.26.8",revision="0123abcd",version="v1.2.3",workflow="orders"} 1
`
	for _, state := range append([]string{""}, States...) {
		if state != "" {
			col.OnState(state)
		}
		if err := testutil.CollectAndCompare(col, strings.NewReader(want), NameBuildInfo); err != nil {
			t.Errorf("state %q: %v", state, err)
		}
	}
}
