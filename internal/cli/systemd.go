package cli

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/vplayer/vplayer/internal/sdnotify"
	"github.com/vplayer/vplayer/metrics"
	"github.com/vplayer/vplayer/stream"
	"github.com/vplayer/vplayer/workflow"
)

// systemdStatusEvery is the longest a STATUS= line lags the stream's state.
const systemdStatusEvery = 5 * time.Second

// liveness decides, from the collector's snapshots, whether the stream is live: whether it feeds
// systemd's watchdog. A stream is live unless its stall detector fired and the stream has not
// been healthy (running and progressing) since: a stall being retried without success, or a
// stream stuck. Everything else is live: a healthy stream, one held on purpose (a throttle, a
// pause: healthy), a standby waiting for the lease or a process waiting for the workflow's start
// (Init, Stopped), and one waiting for a server it cannot reach (Retrying after an error that is
// not a stall), which a restart would not fix and whose restarts would count against the unit's
// start limit.
type liveness struct {
	stallsWhenHealthy int64 // the stall count when the stream was last healthy
}

// live reports whether s is live, and remembers s when it is healthy.
func (l *liveness) live(s metrics.Snapshot) bool {
	var stalls int64
	for _, n := range s.Stalls {
		stalls += n
	}
	if s.Healthy {
		l.stallsWhenHealthy = stalls
		return true
	}
	switch s.State {
	case workflow.StateRunning, workflow.StateCopying, stream.StateRetrying:
		return stalls == l.stallsWhenHealthy
	}
	return true
}

// systemdStatus is the STATUS= text of s.
func systemdStatus(s metrics.Snapshot) string {
	if s.Healthy {
		return fmt.Sprintf("%s, lag %v, %d transactions applied", s.State, s.Lag.Round(100*time.Millisecond), s.Transactions)
	}
	return s.State + ": " + s.Reason
}

// systemdFeed tells systemd how the run is doing (Type=notify): the state in STATUS= lines, and
// WATCHDOG=1 while the stream is live, once the run is ready. Its Run is its one goroutine.
type systemdFeed struct {
	send     func(assignments ...string) error // sdnotify.Notifier.Send
	snapshot func() metrics.Snapshot           // metrics.Collector.Snapshot
	// every is the tick: systemdStatusEvery, or half the watchdog's timeout when shorter.
	every    time.Duration
	watchdog bool // systemd watches this process: ping it
	log      *slog.Logger
	ready    atomic.Bool
}

// newSystemdFeed returns the feed of $NOTIFY_SOCKET, or nil when systemd did not ask for
// notifications.
func newSystemdFeed(getenv func(string) string, pid int, snapshot func() metrics.Snapshot, log *slog.Logger) *systemdFeed {
	n := sdnotify.FromEnv(getenv)
	if n == nil {
		return nil
	}
	f := &systemdFeed{send: n.Send, snapshot: snapshot, every: systemdStatusEvery, log: log}
	wd, err := sdnotify.WatchdogInterval(getenv, pid)
	if err != nil {
		log.Warn("systemd's watchdog is not fed", "error", err)
	}
	if wd > 0 {
		f.watchdog, f.every = true, min(f.every, wd/2)
	}
	return f
}

// Ready sends READY=1: the stream runs. Pings start from the next tick.
func (f *systemdFeed) Ready() {
	f.ready.Store(true)
	f.notify(sdnotify.Ready, sdnotify.Status(systemdStatus(f.snapshot())))
}

// Run sends the status and pings each tick until ctx ends, then STOPPING=1.
func (f *systemdFeed) Run(ctx context.Context) {
	t := time.NewTicker(f.every)
	defer t.Stop()
	var l liveness
	lastStatus, fed := "", true
	for {
		s := f.snapshot()
		msgs := []string{}
		if st := systemdStatus(s); st != lastStatus {
			msgs, lastStatus = append(msgs, sdnotify.Status(st)), st
		}
		if live := l.live(s); f.watchdog && f.ready.Load() {
			if live {
				msgs = append(msgs, sdnotify.Watchdog)
			}
			if live != fed {
				f.logFeeding(live, s)
				fed = live
			}
		}
		if len(msgs) > 0 {
			f.notify(msgs...)
		}
		select {
		case <-ctx.Done():
			f.notify(sdnotify.Stopping, sdnotify.Status("stopping"))
			return
		case <-t.C:
		}
	}
}

// logFeeding logs a change of whether the watchdog is fed.
func (f *systemdFeed) logFeeding(live bool, s metrics.Snapshot) {
	if live {
		f.log.Info("stream live again: feeding systemd's watchdog")
	} else {
		f.log.Error("stream stalled: no longer feeding systemd's watchdog, which restarts the process", "reason", s.Reason)
	}
}

// notify sends, logging a failure.
func (f *systemdFeed) notify(assignments ...string) {
	if err := f.send(assignments...); err != nil {
		f.log.Warn("could not notify systemd", "error", err)
	}
}
