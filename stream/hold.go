package stream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vplayer/vplayer/event"
	"github.com/vplayer/vplayer/throttle"
	"github.com/vplayer/vplayer/workflow"
)

// Holds on purpose (SPEC 4.5). Besides a vplayer diff pause, the gate holds the applier at a
// transaction boundary while the throttle says so, and, with --apply-delay, before each source
// transaction until its commit time plus the delay. While it holds, the reader blocked on the
// full relay log is not stalled (relayBlockedSince), the applier holds no work (so its watchdog
// has nothing to time), and each idle turn counts as a source heartbeat (whileHeld), so that the
// record's heartbeat still shows a live stream.

// throttled reports whether a throttle holds the stream now.
func (g *gate) throttled() bool {
	if g.throttle == nil {
		return false
	}
	_, held := g.throttle.Held()
	return held
}

// due returns when the event group that items[i] starts may be applied under --apply-delay, and
// whether that is still to come. A group is due one second after its source commit time plus the
// delay: binlog times are whole seconds, rounded down. The commit time is its COMMIT's, when the
// fetch holds it, else its first event's.
func (g *gate) due(items []*event.Event, i int) (time.Time, bool) {
	e := items[i]
	if g.delay <= 0 || e.Type == event.Heartbeat || e.Timestamp == 0 {
		return time.Time{}, false
	}
	ts := e.Timestamp
	if e.Type == event.Begin {
		for _, c := range items[i+1:] {
			if c.Type == event.Commit || c.Type == event.XAPrepare {
				ts = max(ts, c.Timestamp)
				break
			}
		}
	}
	at := time.Unix(ts+1, 0).Add(g.delay)
	return at, g.now().Before(at)
}

// waitHold waits while held: until wake (nil: never) or ctx ends. On ctx's deadline (the
// applier's idle turn) it counts a heartbeat, as a pause does.
func (g *gate) waitHold(ctx context.Context, wake <-chan struct{}) error {
	g.holding.Store(true)
	select {
	case <-ctx.Done():
		if g.whileHeld != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			g.whileHeld()
		}
		return ctx.Err()
	case <-wake:
		return nil
	}
}

// endHold notes that the gate hands events over again: the relay log's stall clock starts anew.
func (g *gate) endHold() {
	if g.holding.Load() {
		g.resumed.Store(g.now().UnixNano())
		g.holding.Store(false)
		g.delayed.Store(nil)
	}
}

// setDelayed records the group the delay holds, for the record's message.
func (g *gate) setDelayed(e *event.Event, at time.Time) {
	if d := g.delayed.Load(); d != nil && d.at.Equal(at) {
		return
	}
	what := e.GTID
	if what == "" {
		what = "the transaction after " + g.last
	}
	since := g.now()
	if d := g.delayed.Load(); d != nil {
		since = d.hold.Since
	}
	g.delayed.Store(&delayedGroup{at: at, hold: throttle.Hold{Kind: throttle.KindDelay, Since: since,
		Reason: fmt.Sprintf("applying %s at %s (--apply-delay %s)", what, at.UTC().Format("15:04:05"), g.delay)}})
}

// delayedGroup is the event group the delay holds and the hold it makes.
type delayedGroup struct {
	at   time.Time
	hold throttle.Hold
}

// Hold returns the hold the gate is in, if any: a throttle, or the delay of the next group.
func (g *gate) Hold() (throttle.Hold, bool) {
	if g.throttle != nil {
		if h, held := g.throttle.Held(); held {
			return h, true
		}
	}
	if d := g.delayed.Load(); d != nil && g.holding.Load() {
		return d.hold, true
	}
	return throttle.Hold{}, false
}

// followThrottle keeps the manual throttle the record holds (vplayer throttle), for the
// throttler's next check.
func (s *Stream) followThrottle(c workflow.Control) {
	m := &throttle.Manual{Reason: c.ThrottleReason}
	switch {
	case c.ThrottleLeft == workflow.ThrottleUntilUnthrottled:
		m.Until = throttle.Forever()
	case c.ThrottleLeft > 0:
		m.Until = time.Now().Add(c.ThrottleLeft)
	}
	s.manual.Store(m)
}

// manualThrottle is the throttler's view of the manual throttle; it never blocks.
func (s *Stream) manualThrottle() throttle.Manual {
	if m := s.manual.Load(); m != nil {
		return *m
	}
	return throttle.Manual{}
}

// noteHold adds up the time held, as the stop poller sees holds begin and end.
func (g *gate) noteHold(held bool, h throttle.Hold, now time.Time) {
	start := g.heldStart.Load()
	switch {
	case held && start == 0:
		g.heldStart.Store(min(h.Since.UnixNano(), now.UnixNano()))
	case !held && start != 0:
		g.heldNanos.Add(max(now.UnixNano()-start, 0))
		g.heldStart.Store(0)
	}
}

// HeldTotal is the attempt's time held so far, the hold in force included.
func (g *gate) HeldTotal(now time.Time) time.Duration {
	total := g.heldNanos.Load()
	if start := g.heldStart.Load(); start != 0 {
		total += max(now.UnixNano()-start, 0)
	}
	return time.Duration(total)
}

// holdWatch is the stop poller's view of the gate's hold, for the record.
type holdWatch struct {
	seen bool // a first look was taken in this process
	held bool
	hold throttle.Hold
}

// followHold reports the gate's hold: a log line and a vreplication_log row when it begins and
// when it ends, and the record's message while it lasts (cleared at its end).
func (s *Stream) followHold(ctx context.Context, g *gate, w *holdWatch) {
	h, held := g.Hold()
	now := time.Now()
	g.noteHold(held, h, now)
	if !w.seen && !held {
		// A process killed while held left its hold's message: not this process's to keep.
		if err := s.lease.ClearHoldMessage(ctx); err != nil {
			s.log.Debug("could not clear a hold message left by an earlier process", "error", err)
		}
	}
	w.seen = true
	switch {
	case held && !w.held:
		msg := h.Message(now)
		s.log.Info("held on purpose", "kind", h.Kind, "reason", h.Reason)
		s.addLogCtx(ctx, "Hold", workflow.StateRunning, msg)
		s.msg.set(msg)
	case held:
		s.msg.set(h.Message(now))
	case w.held:
		msg := fmt.Sprintf("hold ended: %s, after %s", w.hold.Reason, now.Sub(w.hold.Since).Truncate(time.Second))
		s.log.Info("hold ended", "kind", w.hold.Kind, "reason", w.hold.Reason, "held_for", now.Sub(w.hold.Since).Truncate(time.Second).String())
		s.addLogCtx(ctx, "Hold", workflow.StateRunning, msg)
		s.msg.set("")
	}
	w.held, w.hold = held, h
}

// waitThrottled returns once the live attempt's throttle does not hold the stream, or ctx ends:
// the copy calls it between its rounds of chunks.
func (s *Stream) waitThrottled(ctx context.Context) error {
	for {
		th := s.throttler.Load()
		if th == nil {
			return nil
		}
		changed := th.Changed()
		if _, held := th.Held(); !held {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}
