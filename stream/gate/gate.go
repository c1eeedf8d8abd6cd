// Package gate holds a stream's applier at transaction boundaries. A Gate sits between the relay
// log and the applier, for one attempt, and wraps the relay log's Fetch: it hands every fetch over
// unchanged unless a pause (Request: a vplayer diff pause, a copy round's snapshot position) or a
// hold on purpose (a throttle, --apply-delay) is in force, and then stops handing events over at a
// transaction boundary, so that the applier commits what it has and idles. It never touches a
// server: the stream reads the record and sets the Request, and reads the gate's state back
// (Paused, Hold) to acknowledge and report it.
package gate

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/vplayer/vplayer/applier"
	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/event"
	"github.com/vplayer/vplayer/throttle"
)

// Config configures a gate. Flavor and Start are required; the rest is optional.
type Config struct {
	// Flavor is the go-mysql flavor of the positions; Start is the attempt's start position, the
	// last boundary handed over before the first fetch.
	Flavor, Start string
	// Throttle, when set, holds the stream at transaction boundaries while it says so; Delay is
	// --apply-delay (0: off): each source transaction is handed over no earlier than its commit
	// time plus Delay.
	Throttle *throttle.Throttler
	Delay    time.Duration
	// WhileHeld, when set, is called each time a Fetch held at the pause point or by a hold ends
	// by its deadline: the applier's idle turn, in which it records a heartbeat when one is due.
	WhileHeld func()
}

// Gate is the wrapper of one attempt's relay log. With a pause in force it hands events over up
// to the pause point only: the first transaction boundary (the end of a COMMIT, a skipped
// transaction or a DDL), or the first boundary at or past the pause position. The rest waits in
// the gate until the pause moves on or ends. At the pause point the gate first returns
// applier.ErrSettle, so that the applier commits everything handed over (workers may still run
// batches) before it fetches again: at that next Fetch the gate is paused, and waits without
// returning events.
//
// Fetch is called from the applier's goroutine only; every other method is safe from any
// goroutine and never blocks.
type Gate struct {
	relay  applier.Fetcher
	req    *Request
	flavor string

	// Owned by the applier's goroutine (Fetch).
	held   []*event.Event // fetched but not handed over
	open   bool           // a source transaction handed over has no COMMIT yet
	last   string         // position of the last boundary handed over; the start position at first
	parsed binlog.Position
	ok     bool // parsed is last's parse

	whileHeld func()
	// settled is set when Fetch returned applier.ErrSettle at the pause point: the next Fetch
	// finds everything handed over committed.
	settled bool

	paused    atomic.Bool  // Fetch is waiting at the pause point
	pausedPos atomic.Value // string: last, when paused
	resumed   atomic.Int64 // unix nanos of the last resume; 0 before any
	notify    chan struct{}

	// Holds on purpose (see hold.go): throttle, when set, holds at transaction boundaries;
	// delay is --apply-delay. holding says Fetch waits on one of them, delayed is the group the
	// delay holds.
	throttle *throttle.Throttler
	delay    time.Duration
	now      func() time.Time
	holding  atomic.Bool
	delayed  atomic.Pointer[delayedGroup]
	// heldNanos is the time held in holds that ended; heldStart when the one in force began
	// (unix nanos, 0: none), as Observe saw them.
	heldNanos, heldStart atomic.Int64
}

// New returns the gate in front of relay, paused as req says.
func New(relay applier.Fetcher, req *Request, cfg Config) *Gate {
	g := &Gate{relay: relay, req: req, flavor: cfg.Flavor, last: cfg.Start, notify: make(chan struct{}, 1), now: time.Now,
		throttle: cfg.Throttle, delay: cfg.Delay, whileHeld: cfg.WhileHeld}
	g.pausedPos.Store("")
	return g
}

var _ applier.Fetcher = (*Gate)(nil)

// Fetch returns the next events the applier may apply, honouring the pause in force.
func (g *Gate) Fetch(ctx context.Context) ([]*event.Event, error) {
	for {
		if active, at := g.req.get(); active && !g.open && g.reached(at) {
			if !g.paused.Load() && !g.settled {
				g.settled = true
				return nil, applier.ErrSettle
			}
			g.settled = false
			if !g.paused.Swap(true) {
				g.pausedPos.Store(g.last)
				select {
				case g.notify <- struct{}{}:
				default:
				}
			}
			select {
			case <-ctx.Done():
				if g.whileHeld != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
					g.whileHeld()
				}
				return nil, ctx.Err()
			case <-g.req.wake:
				continue
			}
		}
		// Not at a pause point: what the applier settled may be followed by more events, so a
		// later pause has it settle again (a pause withdrawn between ErrSettle and its next
		// Fetch would otherwise leave this set).
		g.settled = false
		if !g.open && g.throttled() {
			if err := g.waitHold(ctx, g.throttle.Changed()); err != nil {
				return nil, err
			}
			continue
		}
		if len(g.held) > 0 && !g.open {
			if at, wait := g.due(g.held, 0); wait {
				g.setDelayed(g.held[0], at)
				if err := g.waitHold(ctx, nil); err != nil {
					return nil, err
				}
				continue
			}
		}
		g.endHold()
		if g.paused.Load() {
			// resumed first: a watchdog probe between the two stores must not see a relay log
			// wait that began during the pause without the resume that excuses it.
			g.resumed.Store(time.Now().UnixNano())
			g.paused.Store(false)
		}
		items := g.held
		g.held = nil
		if len(items) == 0 {
			var err error
			if items, err = g.relay.Fetch(ctx); len(items) == 0 {
				return items, err
			}
		}
		return g.cut(items), nil
	}
}

// cut returns the part of items up to the pause point and keeps the rest. A throttle or a
// delay holds before the next group as well as after a boundary: a fetch that was waiting in
// the relay log when a throttle began must not hand over the transaction that ends the wait.
func (g *Gate) cut(items []*event.Event) []*event.Event {
	active, at := g.req.get()
	for i, e := range items {
		if !g.open {
			if _, wait := g.due(items, i); wait || g.throttled() {
				g.held = items[i:]
				return items[:i]
			}
		}
		switch e.Type {
		case event.Begin:
			g.open = true
		case event.Commit, event.Skip, event.DDL, event.XAPrepare, event.XACommit, event.XARollback:
			g.open, g.last, g.ok = false, e.Pos, false
			if (active && g.reached(at)) || g.throttled() {
				g.held = items[i+1:]
				return items[:i+1]
			}
		}
	}
	return items
}

// reached reports whether the last boundary handed over is a pause point for a pause at at (zero:
// any boundary).
func (g *Gate) reached(at binlog.Position) bool {
	if at.IsZero() {
		return true
	}
	if !g.ok {
		p, err := binlog.ParsePosition(g.last, g.flavor)
		if err != nil {
			return true // hold where we are rather than run past a position we cannot compare
		}
		g.parsed, g.ok = p, true
	}
	return g.parsed.Contains(at)
}

// Paused reports whether the gate waits at a pause point, and at which position.
func (g *Gate) Paused() (bool, string) {
	if !g.paused.Load() {
		return false, ""
	}
	return true, g.pausedPos.Load().(string)
}

// Notify receives once after the gate has paused (capacity 1: several pauses before a receive
// are one), so that whoever waits for the pause looks at once instead of at its next poll.
func (g *Gate) Notify() <-chan struct{} {
	return g.notify
}

// Waiting reports whether events wait in the gate: it is paused, or holds on purpose.
func (g *Gate) Waiting() bool {
	return g.holding.Load() || g.paused.Load()
}

// RelayBlockedSince is the relay log's blocked-since time as the stall watchdog must see it: a
// reader blocked on a full relay log because of a pause or a hold is not a stall, so the clock
// starts again when the pause or the hold ends.
func (g *Gate) RelayBlockedSince(since time.Time) time.Time {
	if since.IsZero() || g.paused.Load() || g.holding.Load() {
		return time.Time{}
	}
	if r := g.resumed.Load(); r != 0 && since.Before(time.Unix(0, r)) {
		return time.Unix(0, r)
	}
	return since
}
