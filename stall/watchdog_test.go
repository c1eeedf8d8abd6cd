package stall

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeProbe is a Probe whose Snapshot the test sets; it counts the calls.
type fakeProbe struct {
	mu    sync.Mutex
	snap  Snapshot
	calls int
}

var _ Probe = (*fakeProbe)(nil)

func (p *fakeProbe) Snapshot() Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	return p.snap
}

func (p *fakeProbe) set(s Snapshot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.snap = s
}

func (p *fakeProbe) snapshots() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// running is a Watchdog.Run call in its own goroutine.
type running struct {
	done chan struct{}
	err  error // valid once done is closed
}

func start(ctx context.Context, w *Watchdog) *running {
	r := &running{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = w.Run(ctx)
	}()
	return r
}

// returned reports whether Run has returned; call it after synctest.Wait.
func (r *running) returned() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

var testConfig = Config{ProgressDeadline: 5 * time.Minute, HeartbeatInterval: time.Second}

func TestWatchdog_Run_fires(t *testing.T) {
	const update = "UPDATE `shop`.`orders`"
	stalled := ErrStalled.Error()
	for _, tc := range []struct {
		name     string
		wait     func(now time.Time) Snapshot // the wait that starts at now
		deadline time.Duration
		poke     bool
		wantDet  Detector
		wantErr  string
	}{
		{
			name:     "relay log",
			wait:     func(now time.Time) Snapshot { return Snapshot{RelayBlockedSince: now} },
			deadline: testConfig.ProgressDeadline,
			wantDet:  RelayLog,
			wantErr:  "relay log I/O stalled: " + stalled + "; applier holds no open statement",
		},
		{
			name: "relay log, applier busy",
			wait: func(now time.Time) Snapshot {
				return Snapshot{RelayBlockedSince: now, ProgressSince: now, Statement: update, StatementSince: now.Add(-2 * time.Second)}
			},
			deadline: testConfig.ProgressDeadline,
			poke:     true,
			wantDet:  RelayLog,
			wantErr:  "relay log I/O stalled: " + stalled + "; applier busy for 5m2s in " + update,
		},
		{
			name: "applier",
			wait: func(now time.Time) Snapshot {
				return Snapshot{ProgressSince: now, Statement: update, StatementSince: now}
			},
			deadline: testConfig.ProgressDeadline,
			wantDet:  Applier,
			wantErr:  "applier stalled: no progress for 5m0s while applying " + update + ": " + stalled,
		},
		{
			name:     "heartbeat",
			wait:     func(now time.Time) Snapshot { return Snapshot{HeartbeatSince: now} },
			deadline: testConfig.HeartbeatInterval,
			wantDet:  Heartbeat,
			wantErr:  "failed to record heartbeat: recording took longer than 1s: " + stalled,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				probe := &fakeProbe{}
				w := New(testConfig, probe)
				r := start(ctx, w)

				// Idle for a while, to an instant off any poll boundary.
				time.Sleep(time.Minute + 123457*time.Microsecond)
				probe.set(tc.wait(time.Now()))
				if tc.poke {
					w.Poke()
				}

				time.Sleep(tc.deadline - time.Millisecond)
				synctest.Wait()
				if r.returned() {
					t.Fatalf("Run returned %v 1ms before the deadline, want it running", r.err)
				}

				time.Sleep(2 * time.Millisecond)
				synctest.Wait()
				if !r.returned() {
					t.Fatalf("Run still running 1ms after the deadline, want %q", tc.wantErr)
				}
				if got := r.err.Error(); got != tc.wantErr {
					t.Errorf("Run()=%q\nwant   %q", got, tc.wantErr)
				}
				if !errors.Is(r.err, ErrStalled) {
					t.Errorf("errors.Is(%v, ErrStalled)=false, want true", r.err)
				}
				var e *Error
				if !errors.As(r.err, &e) {
					t.Fatalf("Run() returned %T, want *Error", r.err)
				}
				if got, want := e.Detector, tc.wantDet; got != want {
					t.Errorf("Detector=%q, want %q", got, want)
				}
				// The stall fired at its exact deadline, not on a poll boundary.
				if got, want := e.For, tc.deadline; got != want {
					t.Errorf("For=%v, want %v", got, want)
				}
			})
		})
	}
}

func TestWatchdog_Run_quiet(t *testing.T) {
	noDeadline := Config{HeartbeatInterval: time.Second}
	for _, tc := range []struct {
		name string
		cfg  Config
		wait func(now time.Time) Snapshot // the wait that starts at now
	}{
		{name: "idle source", cfg: testConfig, wait: func(time.Time) Snapshot { return Snapshot{} }},
		{name: "deadline 0, relay log blocked", cfg: noDeadline, wait: func(now time.Time) Snapshot {
			return Snapshot{RelayBlockedSince: now}
		}},
		{name: "deadline 0, applier busy", cfg: noDeadline, wait: func(now time.Time) Snapshot {
			return Snapshot{ProgressSince: now, Statement: "COMMIT", StatementSince: now}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				probe := &fakeProbe{snap: tc.wait(time.Now())}
				r := start(ctx, New(tc.cfg, probe))

				time.Sleep(10 * testConfig.ProgressDeadline)
				synctest.Wait()
				if r.returned() {
					t.Fatalf("Run returned %v after 10 deadlines, want it running", r.err)
				}
				// It kept looking: at least one snapshot per 500ms poll.
				if got, want := probe.snapshots(), int(10*testConfig.ProgressDeadline/maxPoll); got < want {
					t.Errorf("%d snapshots in 10 deadlines, want at least %d", got, want)
				}

				cancel()
				synctest.Wait()
				if !r.returned() {
					t.Fatal("Run still running after cancel, want it returned")
				}
				if r.err != nil {
					t.Errorf("Run()=%v after cancel, want nil", r.err)
				}
			})
		})
	}
}

func TestWatchdog_Run_cancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		probe := &fakeProbe{}
		r := start(ctx, New(testConfig, probe))

		time.Sleep(time.Second)
		probe.set(Snapshot{RelayBlockedSince: time.Now()}) // a stall is pending
		time.Sleep(time.Minute)

		canceled := time.Now()
		cancel()
		synctest.Wait()
		if !r.returned() {
			t.Fatal("Run still running after cancel, want it returned at once")
		}
		if got := time.Since(canceled); got != 0 {
			t.Errorf("Run returned %v after cancel, want 0", got)
		}
		if r.err != nil {
			t.Errorf("Run()=%v after cancel, want nil", r.err)
		}
	})
}

func TestWatchdog_Run_canceledBeforeStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		probe := &fakeProbe{snap: Snapshot{ProgressSince: time.Now().Add(-time.Hour)}}
		if err := New(testConfig, probe).Run(ctx); err != nil {
			t.Errorf("Run()=%v on a done context, want nil", err)
		}
	})
}

// watchdogGoroutines counts the goroutines running Watchdog code (Run, or anything a method
// started). runtime.NumGoroutine counts the whole process, where goroutines outside the test's
// bubble come and go; a goroutine started per poke would show here.
func watchdogGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "stall.(*Watchdog)") {
			n++
		}
	}
	return n
}

func TestWatchdog_Poke(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		probe := &fakeProbe{}
		w := New(testConfig, probe)

		if got := watchdogGoroutines(); got != 0 {
			t.Fatalf("%d watchdog goroutines before Run, want 0", got)
		}
		r := start(ctx, w)
		synctest.Wait()
		if got := watchdogGoroutines(); got != 1 {
			t.Fatalf("%d watchdog goroutines with Run running, want 1", got)
		}
		calls := probe.snapshots()

		// Each poke is one more snapshot, at once, and no goroutine.
		for i := range 1000 {
			probe.set(Snapshot{ProgressSince: time.Now(), Statement: "INSERT INTO `shop`.`orders`", StatementSince: time.Now()})
			w.Poke()
			synctest.Wait()
			if got, want := probe.snapshots(), calls+i+1; got != want {
				t.Fatalf("after poke %d: %d snapshots, want %d", i+1, got, want)
			}
			probe.set(Snapshot{})
		}
		if got := watchdogGoroutines(); got != 1 {
			t.Errorf("%d watchdog goroutines after 1000 pokes, want 1", got)
		}

		// Pokes coalesce and never block, whether Run is busy or not.
		for range 1000 {
			w.Poke()
		}
		synctest.Wait()
		if got := watchdogGoroutines(); got != 1 {
			t.Errorf("%d watchdog goroutines after 1000 unwaited pokes, want 1", got)
		}

		// A poke makes an already expired wait fire without the clock moving.
		now := time.Now()
		probe.set(Snapshot{ProgressSince: now.Add(-testConfig.ProgressDeadline)})
		w.Poke()
		synctest.Wait()
		if !r.returned() {
			t.Fatal("Run still running after a poke on an expired wait, want the stall")
		}
		if got := time.Since(now); got != 0 {
			t.Errorf("stall reported %v after the poke, want 0", got)
		}
		var e *Error
		if !errors.As(r.err, &e) || e.Detector != Applier {
			t.Errorf("Run()=%v, want an applier stall", r.err)
		}
	})
}

func TestWatchdog_Poke_withoutRun(t *testing.T) {
	w := New(testConfig, ProbeFunc(func() Snapshot { return Snapshot{} }))
	for range 3 {
		w.Poke() // must not block
	}
}

func TestNew_poll(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want time.Duration
	}{
		{name: "defaults", cfg: testConfig, want: 250 * time.Millisecond},
		{name: "long interval", cfg: Config{ProgressDeadline: time.Hour, HeartbeatInterval: time.Minute}, want: 500 * time.Millisecond},
		{name: "short deadline", cfg: Config{ProgressDeadline: time.Second, HeartbeatInterval: time.Minute}, want: 250 * time.Millisecond},
		{name: "deadline off", cfg: Config{HeartbeatInterval: 10 * time.Second}, want: 500 * time.Millisecond},
		{name: "short interval", cfg: Config{ProgressDeadline: time.Hour, HeartbeatInterval: 100 * time.Millisecond}, want: 25 * time.Millisecond},
		{name: "tiny deadline", cfg: Config{ProgressDeadline: time.Microsecond, HeartbeatInterval: time.Second}, want: time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := New(tc.cfg, &fakeProbe{}).poll; got != tc.want {
				t.Errorf("poll=%v, want %v", got, tc.want)
			}
		})
	}
}
