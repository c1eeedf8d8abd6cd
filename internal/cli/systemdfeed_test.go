package cli

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vplayer/vplayer/internal/sdnotify"
	"github.com/vplayer/vplayer/metrics"
	"github.com/vplayer/vplayer/stall"
	"github.com/vplayer/vplayer/stream"
	"github.com/vplayer/vplayer/workflow"
)

// snap is a collector's snapshot with a state, health and count of stalls.
func snap(state string, healthy bool, stalls int64) metrics.Snapshot {
	reason := "ok"
	if !healthy {
		reason = "not ok"
	}
	return metrics.Snapshot{State: state, Healthy: healthy, Reason: reason, Stalls: map[stall.Detector]int64{stall.Applier: stalls}}
}

func TestLiveness_live(t *testing.T) {
	for _, tc := range []struct {
		name  string
		snaps []metrics.Snapshot
		want  []bool
	}{
		{name: "starting, then running",
			snaps: []metrics.Snapshot{snap(workflow.StateInit, false, 0), snap(workflow.StateRunning, true, 0)},
			want:  []bool{true, true}},
		{name: "waiting for a server it cannot reach",
			snaps: []metrics.Snapshot{snap(workflow.StateRunning, true, 0), snap(stream.StateRetrying, false, 0), snap(workflow.StateRunning, false, 0)},
			want:  []bool{true, true, true}},
		{name: "a stall being retried, then progress",
			snaps: []metrics.Snapshot{snap(workflow.StateRunning, true, 0), snap(stream.StateRetrying, false, 1), snap(workflow.StateRunning, false, 1), snap(workflow.StateRunning, true, 1), snap(stream.StateRetrying, false, 1)},
			want:  []bool{true, false, false, true, true}},
		{name: "a stall on the first attempt",
			snaps: []metrics.Snapshot{snap(workflow.StateInit, false, 0), snap(workflow.StateCopying, false, 1)},
			want:  []bool{true, false}},
		{name: "stopped after a stall, waiting for vplayer start",
			snaps: []metrics.Snapshot{snap(workflow.StateRunning, false, 1), snap(workflow.StateStopped, false, 1)},
			want:  []bool{false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l liveness
			var got []bool
			for _, s := range tc.snaps {
				got = append(got, l.live(s))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("live=%v, want %v", got, tc.want)
			}
		})
	}
}

// fakeSystemd records what a systemdFeed sends, and serves it snapshots.
type fakeSystemd struct {
	mu   sync.Mutex
	s    metrics.Snapshot
	sent [][]string
}

func (f *fakeSystemd) send(a ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, a)
	return nil
}

func (f *fakeSystemd) snapshot() metrics.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.s
}

func (f *fakeSystemd) set(s metrics.Snapshot) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.s = s
}

// take returns what was sent since the last take, one datagram a line.
func (f *fakeSystemd) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var got []string
	for _, a := range f.sent {
		got = append(got, strings.Join(a, "|"))
	}
	f.sent = nil
	return got
}

// TestSystemdFeed_Run checks the feed's datagrams tick by tick: status changes only, no pings
// before READY=1, pings while healthy or held, none while a stall is pending, STOPPING=1 at the end.
func TestSystemdFeed_Run(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &fakeSystemd{s: snap(workflow.StateInit, false, 0)}
		env := map[string]string{"NOTIFY_SOCKET": "@unused", "WATCHDOG_USEC": "30000000"}
		f := newSystemdFeed(func(k string) string { return env[k] }, 1, fake.snapshot, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if f == nil {
			t.Fatal("newSystemdFeed returned nil with NOTIFY_SOCKET set")
		}
		if got, want := f.every, systemdStatusEvery; got != want {
			t.Errorf("tick every %v, want %v", got, want)
		}
		f.send = fake.send
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			f.Run(ctx)
		}()
		tick := func(s metrics.Snapshot, want ...string) {
			t.Helper()
			fake.set(s)
			time.Sleep(f.every)
			synctest.Wait()
			if got := fake.take(); !slices.Equal(got, want) {
				t.Errorf("sent %q, want %q", got, want)
			}
		}
		synctest.Wait()
		if got, want := fake.take(), []string{"STATUS=Init: not ok"}; !slices.Equal(got, want) {
			t.Errorf("sent %q at start, want %q", got, want)
		}
		tick(snap(workflow.StateInit, false, 0)) // a standby: nothing new, no ping before READY
		f.Ready()
		if got, want := fake.take(), []string{"READY=1|STATUS=Init: not ok"}; !slices.Equal(got, want) {
			t.Errorf("Ready sent %q, want %q", got, want)
		}
		tick(snap(workflow.StateInit, false, 0), "WATCHDOG=1")
		tick(snap(workflow.StateRunning, true, 0), "STATUS=Running, lag 0s, 0 transactions applied|WATCHDOG=1")
		tick(snap(stream.StateRetrying, false, 1), "STATUS=Retrying: not ok")
		tick(snap(workflow.StateRunning, false, 1), "STATUS=Running: not ok")
		tick(snap(workflow.StateRunning, true, 1), "STATUS=Running, lag 0s, 0 transactions applied|WATCHDOG=1")
		held := snap(workflow.StateRunning, true, 1)
		held.Hold = "max_load"
		tick(held, "WATCHDOG=1")
		cancel()
		<-done
		if got, want := fake.take(), []string{sdnotify.Stopping + "|STATUS=stopping"}; !slices.Equal(got, want) {
			t.Errorf("sent %q at the end, want %q", got, want)
		}
	})
}

func TestNewSystemdFeed(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	none := func() metrics.Snapshot { return metrics.Snapshot{} }
	if f := newSystemdFeed(func(string) string { return "" }, 1, none, log); f != nil {
		t.Error("newSystemdFeed without NOTIFY_SOCKET is not nil")
	}
	for _, tc := range []struct {
		name     string
		env      map[string]string
		watchdog bool
		every    time.Duration
	}{
		{name: "no watchdog", env: map[string]string{"NOTIFY_SOCKET": "/run/n"}, every: systemdStatusEvery},
		{name: "a long watchdog", env: map[string]string{"NOTIFY_SOCKET": "/run/n", "WATCHDOG_USEC": "30000000"}, watchdog: true, every: systemdStatusEvery},
		{name: "a short watchdog", env: map[string]string{"NOTIFY_SOCKET": "/run/n", "WATCHDOG_USEC": "4000000"}, watchdog: true, every: 2 * time.Second},
		{name: "another process's watchdog", env: map[string]string{"NOTIFY_SOCKET": "/run/n", "WATCHDOG_USEC": "4000000", "WATCHDOG_PID": "2"}, every: systemdStatusEvery},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSystemdFeed(func(k string) string { return tc.env[k] }, 1, none, log)
			if f.watchdog != tc.watchdog || f.every != tc.every {
				t.Errorf("watchdog %v every %v, want %v and %v", f.watchdog, f.every, tc.watchdog, tc.every)
			}
		})
	}
}
