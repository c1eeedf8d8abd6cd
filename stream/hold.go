package stream

import (
	"context"
	"fmt"
	"time"

	"github.com/vplayer/vplayer/stream/gate"
	"github.com/vplayer/vplayer/throttle"
	"github.com/vplayer/vplayer/workflow"
)

// followThrottle keeps the manual throttle the record holds (vplayer throttle), for the
// throttler's next check.
func (co *controls) followThrottle(c workflow.Control) {
	m := &throttle.Manual{Reason: c.ThrottleReason}
	switch {
	case c.ThrottleLeft == workflow.ThrottleUntilUnthrottled:
		m.Until = throttle.Forever()
	case c.ThrottleLeft > 0:
		m.Until = time.Now().Add(c.ThrottleLeft)
	}
	co.manual.Store(m)
}

// manualThrottle is the throttler's view of the manual throttle; it never blocks.
func (co *controls) manualThrottle() throttle.Manual {
	if m := co.manual.Load(); m != nil {
		return *m
	}
	return throttle.Manual{}
}

// holdWatch is the stop poller's view of the gate's hold, for the record.
type holdWatch struct {
	seen bool // a first look was taken in this process
	held bool
	hold throttle.Hold
}

// followHold reports the gate's hold: a log line and a vreplication_log row when it begins and
// when it ends, and the record's message while it lasts (cleared at its end).
func (co *controls) followHold(ctx context.Context, g *gate.Gate, w *holdWatch) {
	now := time.Now()
	h, held := g.Observe(now)
	if !w.seen && !held {
		// A process killed while held left its hold's message: not this process's to keep.
		if err := co.own.lease.ClearHoldMessage(ctx); err != nil {
			co.log.Debug("could not clear a hold message left by an earlier process", "error", err)
		}
	}
	w.seen = true
	switch {
	case held && !w.held:
		msg := h.Message(now)
		co.log.Info("held on purpose", "kind", h.Kind, "reason", h.Reason)
		co.rep.addLogCtx(ctx, "Hold", workflow.StateRunning, msg)
		co.rep.msg.set(msg)
	case held:
		co.rep.msg.set(h.Message(now))
	case w.held:
		msg := fmt.Sprintf("hold ended: %s, after %s", w.hold.Reason, now.Sub(w.hold.Since).Truncate(time.Second))
		co.log.Info("hold ended", "kind", w.hold.Kind, "reason", w.hold.Reason, "held_for", now.Sub(w.hold.Since).Truncate(time.Second).String())
		co.rep.addLogCtx(ctx, "Hold", workflow.StateRunning, msg)
		co.rep.msg.set("")
	}
	w.held, w.hold = held, h
}

// waitThrottled returns once the live attempt's throttle does not hold the stream, or ctx ends:
// the copy calls it between its rounds of chunks.
func (co *controls) waitThrottled(ctx context.Context) error {
	for {
		th := co.throttler.Load()
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
