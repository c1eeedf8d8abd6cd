package gate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vplayer/vplayer/event"
	"github.com/vplayer/vplayer/throttle"
)

// Holds on purpose (SPEC 4.5). Besides a pause, the gate holds the applier at a transaction
// boundary while the throttle says so, and, with --apply-delay, before each source transaction
// until its commit time plus the delay. While it holds, the reader blocked on the full relay log
// is not stalled (RelayBlockedSince), the applier holds no work (so its watchdog has nothing to
// time), and each idle turn counts as a source heartbeat (WhileHeld), so that the record's
// heartbeat still shows a live stream.

// throttled reports whether a throttle holds the stream now.
func (g *Gate) throttled() bool {
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
func (g *Gate) due(items []*event.Event, i int) (time.Time, bool) {
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
func (g *Gate) waitHold(ctx context.Context, wake <-chan struct{}) error {
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
func (g *Gate) endHold() {
	if g.holding.Load() {
		g.resumed.Store(g.now().UnixNano())
		g.holding.Store(false)
		g.delayed.Store(nil)
	}
}

// setDelayed records the group the delay holds, for the record's message.
func (g *Gate) setDelayed(e *event.Event, at time.Time) {
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
func (g *Gate) Hold() (throttle.Hold, bool) {
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

// Observe returns the hold the gate is in, as Hold does, and adds up the time held as the looks
// see holds begin and end: HeldTotal counts from the first look that saw a hold to the first that
// did not. One goroutine looks (the stream's stop poller).
func (g *Gate) Observe(now time.Time) (throttle.Hold, bool) {
	h, held := g.Hold()
	start := g.heldStart.Load()
	switch {
	case held && start == 0:
		g.heldStart.Store(min(h.Since.UnixNano(), now.UnixNano()))
	case !held && start != 0:
		g.heldNanos.Add(max(now.UnixNano()-start, 0))
		g.heldStart.Store(0)
	}
	return h, held
}

// HeldTotal is the attempt's time held so far, the hold in force included.
func (g *Gate) HeldTotal(now time.Time) time.Duration {
	total := g.heldNanos.Load()
	if start := g.heldStart.Load(); start != 0 {
		total += max(now.UnixNano()-start, 0)
	}
	return time.Duration(total)
}
