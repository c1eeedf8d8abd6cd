package e2e

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vplayer/vplayer/internal/eventually"
	"github.com/vplayer/vplayer/internal/mysqld"
	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
	"github.com/vplayer/vplayer/stall"
	"github.com/vplayer/vplayer/stream"
	"github.com/vplayer/vplayer/throttle"
	"github.com/vplayer/vplayer/workflow"
)

// Holding back on purpose (SPEC 4.5): a stream held by a throttle or by --apply-delay for longer
// than its progress deadline is not stalled, its record says why it holds, its lag stays true;
// a throttle check that hangs is a stall.

// holdDeadline is the progress deadline of the hold tests: every hold outlasts it.
const holdDeadline = 2 * time.Second

// Server ids of the servers these tests start, apart from the shared pair's and the failover's.
const (
	holdTargetID  = 41
	holdReplicaID = 42
	holdFrozenID  = 43
)

// reported is one stream error as cfg.OnError saw it.
type reported struct {
	at       time.Time
	err      error
	terminal bool
}

// errorLog collects the stream errors reported through cfg.OnError.
type errorLog struct {
	mu  sync.Mutex
	all []reported
}

func (l *errorLog) add(err error, terminal bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, reported{at: time.Now(), err: err, terminal: terminal})
}

func (l *errorLog) get() []reported {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.all)
}

// noErrors returns an error naming the stream errors reported so far, or nil when there is none.
func (l *errorLog) noErrors() error {
	if all := l.get(); len(all) > 0 {
		return fmt.Errorf("%d stream errors reported, want none; the first: %v", len(all), all[0].err)
	}
	return nil
}

// startTimes collects when each attempt started, through cfg.OnStart.
type startTimes struct {
	mu  sync.Mutex
	at  []time.Time
	att []*stream.Attempt
}

func (s *startTimes) add(a *stream.Attempt) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at = append(s.at, time.Now())
	s.att = append(s.att, a)
}

// last returns the latest attempt, when it started and how many started; nil before the first.
func (s *startTimes) last() (*stream.Attempt, time.Time, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.att) == 0 {
		return nil, time.Time{}, 0
	}
	return s.att[len(s.att)-1], s.at[len(s.at)-1], len(s.att)
}

// lag is the latest attempt's lag now, as the applier reports it.
func (s *startTimes) lag() time.Duration {
	a, _, _ := s.last()
	if a == nil {
		return 0
	}
	return a.Applier.Lag(time.Now())
}

// holdsFor runs check every 100ms until d has passed since from, and fails the test at the first
// check that fails: a state that must last for d, not one waited for.
func (e *env) holdsFor(from time.Time, d time.Duration, check func() error) {
	e.t.Helper()
	for {
		if err := check(); err != nil {
			e.t.Fatalf("%v after the hold began: %v", time.Since(from).Round(time.Millisecond), err)
		}
		if time.Since(from) >= d {
			return
		}
		time.Sleep(100 * time.Millisecond) // the checks' pace over a set time, no wait for a state
	}
}

// holdMessage checks the readings of the record's message during a hold: each names the hold
// (starts with want). Position and heartbeat writes keep a hold's message, so it never reads
// empty while the hold lasts.
type holdMessage struct {
	want     string
	blank    int // readings with no message
	readings int
}

func (h *holdMessage) check(msg string) error {
	h.readings++
	switch {
	case strings.HasPrefix(msg, h.want):
		return nil
	case msg == "":
		h.blank++
		return fmt.Errorf("message empty while held, want it to name the hold (%q)", h.want)
	}
	return fmt.Errorf("message %q while held, want it to start with %q", msg, h.want)
}

// report logs how often the message read empty.
func (h *holdMessage) report(t *testing.T) {
	t.Helper()
	if h.blank > 0 {
		t.Errorf("the record's message read empty in %d of %d readings while held", h.blank, h.readings)
	}
}

// holdRows returns the messages of the workflow's Hold rows in _vt.vreplication_log, oldest
// first.
func (e *env) holdRows() []string {
	e.t.Helper()
	rows, err := e.dstPool.QueryContext(e.ctx(), `SELECT l.message FROM _vt.vreplication_log l JOIN _vt.vreplication v ON v.id = l.vrepl_id
WHERE v.workflow = ? AND l.type = 'Hold' ORDER BY l.id`, e.workflow)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// assertHoldLogged checks that the workflow's log has a Hold row for a hold's start (its message
// starting with start) and a later one for its end ("hold ended: " and end), waiting up to 3s for
// the end: the stop poller sees a hold end at its next poll, maybe after the stream caught up.
func (e *env) assertHoldLogged(start, end string) {
	e.t.Helper()
	var rows []string
	began, ended := -1, -1
	if eventually.Wait(3*time.Second, 50*time.Millisecond, func() error {
		rows = e.holdRows()
		began = slices.IndexFunc(rows, func(m string) bool { return strings.HasPrefix(m, start) })
		if began >= 0 {
			if i := slices.IndexFunc(rows[began:], func(m string) bool { return strings.HasPrefix(m, "hold ended: "+end) }); i >= 0 {
				ended = began + i
			}
		}
		if began < 0 || ended < 0 {
			return fmt.Errorf("Hold rows %q", rows)
		}
		return nil
	}) != nil {
		e.t.Errorf("Hold rows in vreplication_log = %q, want one starting %q and a later one starting %q", rows, start, "hold ended: "+end)
		return
	}
	e.t.Logf("Hold rows: %q, %q", rows[began], rows[ended])
}

// sleepers runs n sessions on the target, each in SELECT SLEEP: Threads_running goes up by n until
// release kills them.
func (e *env) sleepers(n int) (release func()) {
	e.t.Helper()
	db, err := e.target.DB("")
	if err != nil {
		e.t.Fatal(err)
	}
	var ids []int64
	var wg sync.WaitGroup
	released := false
	release = func() {
		if released {
			return
		}
		released = true
		for _, id := range ids {
			if _, err := db.ExecContext(context.Background(), fmt.Sprintf("KILL %d", id)); err != nil {
				e.t.Errorf("KILL %d: %v", id, err)
			}
		}
		wg.Wait()
		db.Close()
	}
	e.t.Cleanup(release)
	for range n {
		conn, err := db.Conn(e.ctx())
		if err != nil {
			e.t.Fatal(err)
		}
		var id int64
		if err := conn.QueryRowContext(e.ctx(), "SELECT CONNECTION_ID()").Scan(&id); err != nil {
			conn.Close()
			e.t.Fatal(err)
		}
		ids = append(ids, id)
		wg.Go(func() {
			defer conn.Close()
			var slept int
			conn.QueryRowContext(context.Background(), "SELECT SLEEP(600)").Scan(&slept) // KILL ends it
		})
	}
	return release
}

// TestThrottle_targetLoad: sleeping sessions raise the target's Threads_running over --max-load
// for three progress deadlines while the source writes more than the relay log holds: no stall,
// no retry, the record Running with a message naming the throttle, no row applied, heartbeats
// still recorded, lag growing all along. Released: the message cleared, caught up, target ==
// source, and the hold's start and end in the workflow's log.
func TestThrottle_targetLoad(t *testing.T) {
	e := newEnv(t)
	e.createKV("mediumblob")
	var starts startTimes
	var errs errorLog
	cfg := e.streamConfig()
	cfg.ProgressDeadline = holdDeadline
	cfg.MaxLoad = []throttle.Threshold{{Name: "Threads_running", Max: 5}}
	cfg.RelayLogMaxBytes = 64 << 10 // the writes below fill it: the reader waits on it through the hold
	cfg.OnStart, cfg.OnError = starts.add, errs.add
	stop := e.runStream(cfg)
	e.waitRunning(30 * time.Second)
	e.exec(e.src, "INSERT INTO kv VALUES (1, 'before')")
	e.waitCaughtUp(10 * time.Second)

	release := e.sleepers(8)
	held, msg := e.waitMessage("throttled: Threads_running ", 10*time.Second)
	t.Logf("held: %q", msg)
	at, _, _ := starts.last()
	rowsBefore := at.Applier.Stats().Rows.Load()
	hbBefore := e.record().TimeHeartbeat
	lagBefore := starts.lag()
	blob := make([]byte, 4000)
	for i := range 100 { // 400 KB of row images: more than the relay log's 64 KB
		rand.Read(blob)
		if _, err := e.src.ExecContext(e.ctx(), "INSERT INTO kv VALUES (?, ?)", 2+i, blob); err != nil {
			t.Fatal(err)
		}
	}
	hm := holdMessage{want: "throttled: Threads_running "}
	e.holdsFor(held, 3*cfg.ProgressDeadline, func() error {
		if err := errs.noErrors(); err != nil {
			return err
		}
		r := e.record()
		if r.State != workflow.StateRunning {
			return fmt.Errorf("record state %q, want %s", r.State, workflow.StateRunning)
		}
		if err := hm.check(r.Message); err != nil {
			return err
		}
		if got, want := e.count(e.dst, "kv"), 1; got != want {
			return fmt.Errorf("%d rows on the target, want %d: rows applied while held", got, want)
		}
		return nil
	})
	hm.report(t)
	lag, heldFor := starts.lag(), time.Since(held)
	blockedSince, blocked := at.Relay.Blocked()
	if _, _, n := starts.last(); n != 1 {
		t.Errorf("%d attempts after the hold, want 1: the stream retried", n)
	}
	if got := at.Applier.Stats().Rows.Load(); got != rowsBefore {
		t.Errorf("applier rows = %d after %v held, want %d as before", got, heldFor, rowsBefore)
	}
	if !blocked || time.Since(blockedSince) < cfg.ProgressDeadline {
		t.Errorf("relay log blocked=%v since %v, want the reader waiting on it for over the deadline %v", blocked, blockedSince, cfg.ProgressDeadline)
	}
	if lag < heldFor || lag-lagBefore < heldFor-time.Second {
		t.Errorf("lag %v after %v held (was %v when the hold was seen), want it grown with the hold", lag, heldFor, lagBefore)
	}
	if hb := e.record().TimeHeartbeat; hb <= hbBefore {
		t.Errorf("time_heartbeat %d after %v held, want it past %d: heartbeats recorded while held", hb, heldFor, hbBefore)
	}
	t.Logf("held %v: lag %v (was %v), relay log blocked for %v, no error", heldFor.Round(time.Millisecond), lag.Round(time.Millisecond), lagBefore.Round(time.Millisecond), time.Since(blockedSince).Round(time.Millisecond))

	released := time.Now()
	release()
	e.waitCaughtUp(15 * time.Second)
	t.Logf("caught up %v after the release", time.Since(released).Round(time.Millisecond))
	e.assertEqual([]string{"kv"})
	e.waitMessageCleared("the release")
	e.assertHoldLogged("throttled: Threads_running ", "Threads_running ")
	if err := errs.noErrors(); err != nil {
		t.Error(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// startHoldServers starts a binlog target of its own and a native replica of it, replicating,
// both stopped at the test's end.
func startHoldServers(t *testing.T) (target, replica *mysqld.Server) {
	t.Helper()
	var errT, errR error
	var wg sync.WaitGroup
	wg.Go(func() {
		target, errT = mysqld.Start(t.Context(), mysqld.Options{Name: "holdtarget", ServerID: holdTargetID, Binlog: true})
	})
	wg.Go(func() {
		replica, errR = mysqld.Start(t.Context(), mysqld.Options{Name: "holdreplica", ServerID: holdReplicaID})
	})
	wg.Wait()
	for _, s := range []*mysqld.Server{target, replica} {
		if s != nil {
			t.Cleanup(func() { s.Stop() })
		}
	}
	if err := errors.Join(errT, errR); err != nil {
		t.Fatal(err)
	}
	if err := replica.ReplicateFrom(t.Context(), target, ""); err != nil {
		t.Fatal(err)
	}
	if err := replica.StartReplica(t.Context()); err != nil {
		t.Fatal(err)
	}
	return target, replica
}

// TestThrottle_replicaLag: the stream's target has a native replica in --throttle-replicas; its
// SQL thread stopped, the stream holds (the message names the replica) for two progress
// deadlines, applying nothing, reporting no error; started again, the stream goes on, catches up,
// and target == source.
func TestThrottle_replicaLag(t *testing.T) {
	t.Parallel() // mostly waiting for its own servers to start
	source, _ := mysqltest.Pair(t)
	target, replica := startHoldServers(t)
	e := newEnvOn(t, source, target)
	e.createKV("int")
	rdb, err := replica.DB("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	rdb.SetMaxOpenConns(1) // as vplayer run opens it
	eventually.Must(t, 30*time.Second, 50*time.Millisecond, "the replica replicating", func() error {
		lag, err := throttle.ReplicaLag(e.ctx(), rdb)
		if err == nil && lag < 0 {
			err = fmt.Errorf("lag %v", lag)
		}
		return err
	})

	var errs errorLog
	cfg := e.streamConfig()
	cfg.ProgressDeadline = holdDeadline
	cfg.ThrottleReplicas = []throttle.Replica{{Name: replica.Addr(), DB: rdb}}
	cfg.MaxReplicaLag = 10 * time.Second
	cfg.OnError = errs.add
	stop := e.runStream(cfg)
	e.waitRunning(30 * time.Second)
	e.exec(e.src, "INSERT INTO kv VALUES (1, 1)")
	e.waitCaughtUp(10 * time.Second)
	if m := e.record().Message; m != "" {
		t.Fatalf("message %q with the replica replicating, want none", m)
	}

	e.exec(rdb, "STOP SLAVE SQL_THREAD")
	held, msg := e.waitMessage("throttled: replica "+replica.Addr()+" ", 10*time.Second)
	t.Logf("held: %q", msg)
	for i := range 20 {
		e.exec(e.src, fmt.Sprintf("INSERT INTO kv VALUES (%d, %d)", 2+i, i))
	}
	hm := holdMessage{want: "throttled: replica " + replica.Addr() + " "}
	e.holdsFor(held, 2*cfg.ProgressDeadline, func() error {
		if err := errs.noErrors(); err != nil {
			return err
		}
		r := e.record()
		if r.State != workflow.StateRunning {
			return fmt.Errorf("record state %q, want %s", r.State, workflow.StateRunning)
		}
		if err := hm.check(r.Message); err != nil {
			return err
		}
		if got, want := e.count(e.dst, "kv"), 1; got != want {
			return fmt.Errorf("%d rows on the target, want %d: rows applied while held", got, want)
		}
		return nil
	})
	hm.report(t)
	e.exec(rdb, "START SLAVE SQL_THREAD")
	released := time.Now()
	e.waitCaughtUp(15 * time.Second)
	t.Logf("held %v; caught up %v after the replica's SQL thread started", released.Sub(held).Round(time.Millisecond), time.Since(released).Round(time.Millisecond))
	e.assertEqual([]string{"kv"})
	e.waitMessageCleared("the release")
	e.assertHoldLogged("throttled: replica "+replica.Addr()+" ", "replica "+replica.Addr()+" ")
	if err := errs.noErrors(); err != nil {
		t.Error(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestThrottle_checkHangs: the one replica of --throttle-replicas is a server frozen with
// SIGSTOP, whose port accepts connections that never get an answer: the check hangs, and within
// the progress deadline + 1s of the attempt's start the stream reports a stall naming the check.
func TestThrottle_checkHangs(t *testing.T) {
	t.Parallel() // mostly waiting for its own server to start
	frozen, err := mysqld.Start(t.Context(), mysqld.Options{Name: "holdfrozen", ServerID: holdFrozenID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { frozen.Stop() })
	rdb, err := frozen.DB("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	rdb.SetMaxOpenConns(1)
	if err := frozen.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { frozen.Signal(syscall.SIGCONT) }) // before its Stop: cleanups run last first

	e := newEnv(t)
	e.createKV("int")
	var starts startTimes
	var errs errorLog
	cfg := e.streamConfig()
	cfg.ProgressDeadline = holdDeadline
	cfg.RetryDelay = 5 * time.Second // one attempt in the test's time
	cfg.ThrottleReplicas = []throttle.Replica{{Name: frozen.Addr(), DB: rdb}}
	cfg.MaxReplicaLag = time.Second
	cfg.OnStart, cfg.OnError = starts.add, errs.add
	stop := e.runStream(cfg)
	var got []reported
	eventually.Must(t, cfg.ProgressDeadline+10*time.Second, 10*time.Millisecond, "a stream error on a throttle check that hangs", func() error {
		if got = errs.get(); len(got) == 0 {
			return errors.New("none reported")
		}
		return nil
	})
	_, began, _ := starts.last()
	first := got[0]
	took := first.at.Sub(began)
	t.Logf("reported %v after the attempt's start: %v", took.Round(time.Millisecond), first.err)
	if took < cfg.ProgressDeadline || took > cfg.ProgressDeadline+time.Second {
		t.Errorf("stall reported %v after the attempt's start, want between the deadline %v and %v", took, cfg.ProgressDeadline, cfg.ProgressDeadline+time.Second)
	}
	var se *stall.Error
	if !errors.As(first.err, &se) || se.Detector != stall.Throttle || first.terminal {
		t.Errorf("error %v (terminal %v), want a throttle stall, not terminal", first.err, first.terminal)
	}
	for _, want := range []string{"throttle check stalled: ", "replica " + frozen.Addr(), stalledText} {
		if !strings.Contains(first.err.Error(), want) {
			t.Errorf("error %q does not contain %q", first.err, want)
		}
	}
	e.waitMessage("throttle check stalled: ", 5*time.Second)
	stopped := time.Now()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(stopped); d > 2*time.Second {
		t.Errorf("stream took %v to stop with the check hanging, want at most 2s", d)
	}
}

// throttleCmd runs `vplayer throttle` (or unthrottle) on e's workflow with extra flags.
func (e *env) throttleCmd(cmd string, extra ...string) {
	e.t.Helper()
	args := append([]string{cmd, "--target", e.target.DSN(""), "--workflow", e.workflow}, extra...)
	if code, out := runProc(e.t, nil, 15*time.Second, args...); code != 0 {
		e.t.Fatalf("vplayer %s: exit %d: %s", cmd, code, out)
	}
}

// TestThrottle_manualAcrossRestart: `vplayer throttle --for 10s` holds a replicating process (no
// row applied, no stall with a 2s progress deadline), survives a SIGKILL and a restart (the new
// process holds too, the throttle being in the record), and ends on its own: no row applied
// before the 10s are over, all soon after; target == source.
func TestThrottle_manualAcrossRestart(t *testing.T) {
	t.Parallel() // mostly waiting out the throttle
	const hold = 10 * time.Second
	e := newEnv(t)
	e.createKV("int")
	args := []string{"--vplayer-progress-deadline", holdDeadline.String(), "--lease-ttl", "1s", "--metrics-addr", "127.0.0.1:0"}
	p := e.startVplayer(args...)
	e.waitRunning(30 * time.Second)
	e.exec(e.src, "INSERT INTO kv VALUES (1, 1)")
	e.waitCaughtUp(10 * time.Second)

	asked := time.Now()
	e.throttleCmd("throttle", "--for", hold.String(), "--reason", "e2e")
	answered := time.Now()
	held, msg := e.waitMessage("throttled: manual throttle (e2e) until ", 5*time.Second)
	t.Logf("held %v after vplayer throttle: %q", held.Sub(asked).Round(time.Millisecond), msg)
	if m, _ := getMetrics(t, p.metricsAddr(5*time.Second)); m.get(t, "vplayer_throttled", "reason", throttle.KindManual) != 1 {
		t.Errorf("vplayer_throttled{reason=%q} = %v while held, want 1", throttle.KindManual, m.get(t, "vplayer_throttled", "reason", throttle.KindManual))
	}
	if code, body := httpGet("http://" + p.metricsAddr(5*time.Second) + "/healthz"); code != 200 {
		t.Errorf("/healthz = %d %q while held, want 200: held is healthy", code, body)
	}
	const rows = 20
	for i := range rows {
		e.exec(e.src, fmt.Sprintf("INSERT INTO kv VALUES (%d, %d)", 2+i, i))
	}
	hm := holdMessage{want: "throttled: manual throttle (e2e) until "}
	e.holdsFor(held, holdDeadline+time.Second, func() error { // past the deadline: no stall either
		if err := hm.check(e.record().Message); err != nil {
			return err
		}
		if got, want := e.count(e.dst, "kv"), 1; got != want {
			return fmt.Errorf("%d rows on the target, want %d: rows applied while throttled", got, want)
		}
		return nil
	})
	hm.report(t)
	p.signal(syscall.SIGKILL)
	p.waitKilled(10 * time.Second)
	killed := time.Now()

	p2 := e.startVplayer(args...)
	p2.waitOutput("held on purpose", hold) // the restarted vplayer holds
	heldAgain := time.Now()
	t.Logf("restarted vplayer held %v after the kill, %v before the throttle's end", heldAgain.Sub(killed).Round(time.Millisecond), asked.Add(hold).Sub(heldAgain).Round(time.Millisecond))
	// A stop while held ends within SPEC 8's 2 s, and the next process holds in turn.
	stopAt := time.Now()
	p2.signal(syscall.SIGTERM)
	if code := p2.wait(10 * time.Second); code != 0 || time.Since(stopAt) > 2500*time.Millisecond {
		t.Errorf("SIGTERM while held: exit %d after %v, want 0 within 2s", code, time.Since(stopAt).Round(time.Millisecond))
	}
	first := p2
	p2 = e.startVplayer(args...)
	p2.waitOutput("held on purpose", hold) // the third vplayer holds
	var applied time.Time
	eventually.Must(t, hold+10*time.Second, 20*time.Millisecond, fmt.Sprintf("the %d rows applied after the restart", rows), func() error {
		n := e.count(e.dst, "kv")
		if n > 1 && applied.IsZero() {
			applied = time.Now()
		}
		if n != 1+rows {
			return fmt.Errorf("%d rows in kv", n)
		}
		return nil
	})
	ends := asked.Add(hold) // throttle_until is the target's clock at the throttle's UPDATE plus 10s
	t.Logf("first rows applied %v after vplayer throttle was asked (it answered after %v)", applied.Sub(asked).Round(time.Millisecond), answered.Sub(asked).Round(time.Millisecond))
	if applied.Before(ends) {
		t.Errorf("rows applied %v after the throttle, want none before its end %v after", applied.Sub(asked), hold)
	}
	if late := applied.Sub(answered.Add(hold)); late > 3*time.Second {
		t.Errorf("rows applied %v after the throttle's end, want the hold to end on its own within 3s", late)
	}
	e.waitCaughtUp(10 * time.Second)
	e.assertEqual([]string{"kv"})
	e.waitMessageCleared("the throttle's end")
	e.assertHoldLogged("throttled: manual throttle (e2e)", "manual throttle (e2e)")
	if n := len(e.holdRows()); n < 3 {
		t.Errorf("%d Hold rows, want at least 3: a start in the first process, one in the second or third, and the end", n)
	}
	m, _ := getMetrics(t, p2.metricsAddr(5*time.Second))
	if got := m.get(t, "vplayer_throttled", "reason", throttle.KindManual); got != 0 {
		t.Errorf("vplayer_throttled{reason=%q} = %v after the throttle ended, want 0", throttle.KindManual, got)
	}
	if got := m.get(t, "vplayer_throttled_seconds_total"); got < 1 {
		t.Errorf("vplayer_throttled_seconds_total = %v in the restarted process, want its hold counted", got)
	}
	for i, out := range []string{p.out.String(), first.out.String(), p2.out.String()} {
		if strings.Contains(out, "error in stream") {
			t.Errorf("process %d reported a stream error while throttled:\n%s", i+1, out)
		}
	}
	p2.signal(syscall.SIGTERM)
	if code := p2.wait(10 * time.Second); code != 0 {
		t.Errorf("vplayer exited with %d, want 0", code)
	}
}

// TestThrottle_manualDuringCopy: a new workflow to copy a table in 20 rounds is throttled before
// its copy starts (the record exists, its planning waits on a target lock): while held the copy
// does not progress (copy state and vplayer_copy_rows_total at 0, state Copying); after vplayer
// unthrottle it completes and replicates; target == source.
func TestThrottle_manualDuringCopy(t *testing.T) {
	t.Parallel() // mostly waiting
	const rows, chunk = 1000, 50
	e := newEnv(t)
	const ddl = "CREATE TABLE big (id int NOT NULL PRIMARY KEY, v varchar(100) NOT NULL)"
	e.exec(e.src, ddl)
	e.exec(e.dst, ddl) // empty: the copy plans it without creating it, after the lock below
	var b strings.Builder
	for i := range rows {
		if b.Len() == 0 {
			b.WriteString("INSERT INTO big VALUES ")
		} else {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "(%d, 'row %d')", i+1, i+1)
	}
	e.exec(e.src, b.String())

	lock, err := e.dst.Conn(e.ctx())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(e.ctx(), "LOCK TABLES big WRITE"); err != nil {
		t.Fatal(err)
	}
	p := e.startVplayer("--start-pos=", "--copy-chunk-rows", fmt.Sprint(chunk), "--metrics-addr", "127.0.0.1:0")
	e.waitRecordState(workflow.StateCopying, 30*time.Second)
	// No --for: the throttle holds until vplayer unthrottle.
	e.throttleCmd("throttle", "--reason", "copy")
	if _, err := lock.ExecContext(e.ctx(), "UNLOCK TABLES"); err != nil {
		t.Fatal(err)
	}
	held, msg := e.waitMessage("throttled: manual throttle (copy)", 10*time.Second)
	t.Logf("held: %q", msg)
	addr := p.metricsAddr(5 * time.Second)
	for i := range 10 { // changes during the hold, applied after the copy
		e.exec(e.src, fmt.Sprintf("UPDATE big SET v = 'changed' WHERE id = %d", 1+i*97))
	}
	e.holdsFor(held, holdDeadline+time.Second, func() error {
		if r := e.record(); r.State != workflow.StateCopying || !strings.HasPrefix(r.Message, "throttled: manual throttle (copy)") {
			return fmt.Errorf("state %q message %q, want %s and the throttle named", r.State, r.Message, workflow.StateCopying)
		}
		if n := copiedRows(chunksByTable(e.copyState())); n != 0 {
			return fmt.Errorf("%d rows copied, want 0 while throttled", n)
		}
		if m, _ := getMetrics(t, addr); m.get(t, "vplayer_copy_rows_total") != 0 {
			return fmt.Errorf("vplayer_copy_rows_total = %v, want 0 while throttled", m.get(t, "vplayer_copy_rows_total"))
		}
		return nil
	})
	unthrottled := time.Now()
	e.throttleCmd("unthrottle")
	e.waitRecordState(workflow.StateRunning, 60*time.Second)
	t.Logf("copy done %v after vplayer unthrottle", time.Since(unthrottled).Round(time.Millisecond))
	e.waitCaughtUp(10 * time.Second)
	e.assertEqual([]string{"big"})
	st := chunksByTable(e.copyState())
	if got := st["big"]; got.Rows != rows || got.Chunks < rows/chunk {
		t.Errorf("copy state of big: %d rows in %d chunks, want %d rows in at least %d", got.Rows, got.Chunks, rows, rows/chunk)
	}
	// The copy's attempt may end (copy done) before its stop poller looked again: the next
	// attempt's poller, which knows of the hold, logs its end.
	logged := e.holdRows()
	hasPrefix := func(p string) func(string) bool { return func(m string) bool { return strings.HasPrefix(m, p) } }
	if !slices.ContainsFunc(logged, hasPrefix("throttled: manual throttle (copy)")) {
		t.Errorf("Hold rows %q, want one starting %q", logged, "throttled: manual throttle (copy)")
	}
	if !slices.ContainsFunc(logged, hasPrefix("hold ended: manual throttle (copy)")) {
		t.Errorf("Hold rows %q, want one for the end of the hold", logged)
	}
	if out := p.out.String(); strings.Contains(out, "error in stream") {
		t.Errorf("vplayer reported a stream error:\n%s", out)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("vplayer exited with %d, want 0", code)
	}
}

// delayedHold is the message of a transaction --apply-delay 5s holds: named by its GTID, or, for
// one the stream skips (another database's, as other tests write on the shared source), by the
// position before it.
var delayedHold = regexp.MustCompile(`^delayed: applying (0-1-\d+|the transaction after MariaDB/[0-9,-]+) at \d\d:\d\d:\d\d \(--apply-delay 5s\) since \d\d:\d\d:\d\d \(\d+s\)$`)

// TestApplyDelay: with --apply-delay 5s, a single transaction waits out its delay while
// time_heartbeat still advances and the message says what waits; then, under a workload of two
// writers, no row appears on the target earlier than its source time (a DATETIME(6) NOW(6)
// column) plus 5s, and the lag reads about 5s. No stall with a 2s progress deadline.
func TestApplyDelay(t *testing.T) {
	t.Parallel() // mostly waiting out the delay
	const delay = 5 * time.Second
	e := newEnv(t)
	for _, db := range []*sql.DB{e.src, e.dst} {
		e.exec(db, "CREATE TABLE ev (id int NOT NULL AUTO_INCREMENT PRIMARY KEY, at datetime(6) NOT NULL DEFAULT NOW(6), w int NOT NULL)")
	}
	var starts startTimes
	var errs errorLog
	cfg := e.streamConfig()
	cfg.ApplyDelay = delay
	cfg.ProgressDeadline = holdDeadline
	cfg.HeartbeatInterval = time.Second
	cfg.OnStart, cfg.OnError = starts.add, errs.add
	stop := e.runStream(cfg)
	e.waitRunning(30 * time.Second)
	hb := e.waitHeartbeatAdvance(0, 10*time.Second)

	seen := map[int64]time.Time{} // when each id was first seen on the target: after the read
	poll := func() int {
		rows, err := e.dst.QueryContext(e.ctx(), "SELECT id FROM ev")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		for _, id := range ids {
			if _, ok := seen[id]; !ok {
				seen[id] = now
			}
		}
		return len(ids)
	}

	// One transaction alone: heartbeats and the message while it waits.
	e.exec(e.src, "INSERT INTO ev (w) VALUES (0)")
	heartbeats := []int64{hb}
	var delayedMsg string
	readings := 0
	var waitLag time.Duration // the highest lag read while the row waited
	var lags []time.Duration  // every lag reading of the test
	eventually.Must(t, delay+5*time.Second, 50*time.Millisecond, "the first row applied", func() error {
		lag := starts.lag()
		waitLag, lags = max(waitLag, lag), append(lags, lag)
		r := e.record()
		readings++
		if r.TimeHeartbeat != heartbeats[len(heartbeats)-1] {
			heartbeats = append(heartbeats, r.TimeHeartbeat)
		}
		if strings.HasPrefix(r.Message, "delayed: applying ") {
			delayedMsg = r.Message
		}
		if n := poll(); n != 1 {
			return fmt.Errorf("%d rows applied", n)
		}
		return nil
	})
	t.Logf("time_heartbeat while the first row waited: %v; lag up to %v", heartbeats, waitLag.Round(time.Millisecond))
	if n := len(heartbeats) - 1; n < 2 {
		t.Errorf("time_heartbeat advanced %d times while a transaction waited out its delay, want at least 2", n)
	}
	// The hold's start in the log has the message as written.
	logged := e.holdRows()
	if len(logged) == 0 || !delayedHold.MatchString(logged[0]) {
		t.Errorf("Hold rows %q, want the first to match %s", logged, delayedHold)
	}
	if delayedMsg == "" {
		t.Errorf("the record's message never read \"delayed: ...\" in %d readings while the first row waited", readings)
	} else if !delayedHold.MatchString(delayedMsg) {
		t.Errorf("message while delayed = %q, want it to match %s", delayedMsg, delayedHold)
	}

	// A workload: two writers, a row a transaction, for 3s.
	ctx, cancel := context.WithTimeout(e.ctx(), 3*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			pace := time.NewTicker(30 * time.Millisecond) // the workload's pace, not a wait for state
			defer pace.Stop()
			for ; ctx.Err() == nil; <-pace.C {
				if _, err := e.src.ExecContext(ctx, "INSERT INTO ev (w) VALUES (?)", w+1); err != nil {
					if ctx.Err() == nil {
						t.Error(err)
					}
					return
				}
			}
		})
	}
	// steady are the lag readings taken once the workload's rows are being applied, while rows
	// it committed still wait out their delay.
	var steady []time.Duration
	var ended time.Time // when the writers stopped
	total := -1
	eventually.Must(t, 3*time.Second+delay+10*time.Second, 50*time.Millisecond, "every row of the workload applied", func() error {
		n, lag := poll(), starts.lag()
		lags = append(lags, lag)
		if total < 0 && ctx.Err() != nil {
			wg.Wait()
			// The source's own count: an INSERT the writers' deadline cut off may have
			// committed all the same.
			ended, total = time.Now(), e.count(e.src, "ev")
		}
		if n > 1 && (ended.IsZero() || time.Since(ended) < delay) {
			steady = append(steady, lag)
		}
		if total < 0 || n != total {
			return fmt.Errorf("%d of %d rows on the target (-1: the workload runs)", n, total)
		}
		return nil
	})

	rows, err := e.src.QueryContext(e.ctx(), "SELECT id, UNIX_TIMESTAMP(at) FROM ev")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var early int
	minAhead, maxAhead := time.Hour, time.Duration(0)
	for rows.Next() {
		var id int64
		var ts float64
		if err := rows.Scan(&id, &ts); err != nil {
			t.Fatal(err)
		}
		source := time.Unix(0, int64(ts*1e9))
		after := seen[id].Sub(source)
		minAhead, maxAhead = min(minAhead, after), max(maxAhead, after)
		if after < delay {
			if early++; early <= 5 {
				t.Errorf("row %d on the target %v after its source time, want at least %v", id, after, delay)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d rows: first seen on the target %v to %v after their source time (read every 50ms)", len(seen), minAhead.Round(time.Millisecond), maxAhead.Round(time.Millisecond))
	if early > 0 {
		t.Errorf("%d rows applied before their source time + %v", early, delay)
	}
	if !slices.ContainsFunc(lags, func(l time.Duration) bool { return l >= 4*time.Second && l <= 8*time.Second }) {
		t.Errorf("lag readings %v, want one about %v: between 4s and 8s", lags, delay)
	}
	if len(steady) == 0 {
		t.Fatal("no lag reading while the workload's rows were applied")
	}
	slices.Sort(steady)
	median := steady[len(steady)/2]
	t.Logf("lag while the workload's rows were applied: median %v, %v to %v in %d readings", median.Round(time.Millisecond), steady[0].Round(time.Millisecond), steady[len(steady)-1].Round(time.Millisecond), len(steady))
	// Lag reads the real lag: about the delay, while a transaction waits out its delay and while
	// the workload's rows are applied.
	if waitLag < delay-time.Second {
		t.Errorf("lag read at most %v while a transaction waited out its delay of %v", waitLag, delay)
	}
	if median < delay-time.Second {
		t.Errorf("median lag %v while the workload's rows, applied %v or more after their commits, were applied", median, delay)
	}
	if err := errs.noErrors(); err != nil {
		t.Error(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// waitMessageCleared waits up to 3s for the record's message to clear after a hold ended
// (after names the end), and fails the test, going on, otherwise.
func (e *env) waitMessageCleared(after string) {
	e.t.Helper()
	if err := eventually.Wait(3*time.Second, 50*time.Millisecond, func() error {
		if msg := e.record().Message; msg != "" {
			return fmt.Errorf("message %q", msg)
		}
		return nil
	}); err != nil {
		e.t.Errorf("%v after %s, want it cleared", err, after)
	}
}
