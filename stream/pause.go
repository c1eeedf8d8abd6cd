package stream

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vplayer/vplayer/applier"
	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/event"
	"github.com/vplayer/vplayer/throttle"
	"github.com/vplayer/vplayer/workflow"
)

// pausePollInterval is how often the record is read while a `vplayer diff` pause is in force, so
// that the handshake takes a fraction of a second, not seconds.
const pausePollInterval = 100 * time.Millisecond

// pauseRequest is the `vplayer diff` pause in force, as the stop poller last read it from the
// record. The poller writes it; the gate reads it. It lives as long as the stream: a new attempt
// starts paused if a pause is in force.
type pauseRequest struct {
	mu   sync.Mutex
	raw  string          // "", workflow.PauseHold, workflow.PauseHeld or a stored position
	pos  binlog.Position // raw parsed, when it is a position
	wake chan struct{}   // capacity 1: raw changed
}

func newPauseRequest() *pauseRequest {
	return &pauseRequest{wake: make(chan struct{}, 1)}
}

// set records the pause in force. A position that does not parse holds the stream where it is
// (a pause must never be read as permission to go on). It reports whether the request changed.
func (p *pauseRequest) set(raw, flavor string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if raw == p.raw {
		return false
	}
	p.raw, p.pos = raw, binlog.Position{}
	if raw != "" && raw != workflow.PauseHold && raw != workflow.PauseHeld {
		if pos, err := binlog.ParsePosition(raw, flavor); err == nil {
			p.pos = pos
		}
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return true
}

// get returns whether a pause is in force and, for a pause at a position, that position (zero:
// pause at the next transaction boundary).
func (p *pauseRequest) get() (active bool, at binlog.Position) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.raw != "", p.pos
}

// gate sits between the relay log and the applier, for one attempt. Without a pause it hands
// every fetch over unchanged. With a pause in force it hands events over up to the pause point
// only: the first transaction boundary (the end of a COMMIT, a skipped transaction or a DDL), or
// the first boundary at or past the pause position. The rest waits in the gate until the pause
// moves on or ends. At the pause point the gate first waits, through settle, until the applier
// committed everything handed over (the serial applier has, since it commits a fetch before it
// fetches again; workers may still run batches): the gate is then paused, and Fetch waits without
// returning events.
type gate struct {
	relay  applier.Fetcher
	req    *pauseRequest
	flavor string

	// Owned by the applier's goroutine (Fetch).
	held   []*event.Event // fetched but not handed over
	open   bool           // a source transaction handed over has no COMMIT yet
	last   string         // position of the last boundary handed over; the start position at first
	parsed binlog.Position
	ok     bool // parsed is last's parse

	// whileHeld, when set, is called each time a Fetch held at the pause point ends by its
	// deadline: the applier's idle turn, in which it records a heartbeat when one is due.
	whileHeld func()
	// settle, when set, waits until the applier committed every event handed over
	// (applier.Applier.Settle); it runs on the applier's goroutine, in Fetch.
	settle func(context.Context) error

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
	// (unix nanos, 0: none), as the stop poller saw them (noteHold).
	heldNanos, heldStart atomic.Int64
}

func newGate(relay applier.Fetcher, req *pauseRequest, flavor, start string) *gate {
	g := &gate{relay: relay, req: req, flavor: flavor, last: start, notify: make(chan struct{}, 1), now: time.Now}
	g.pausedPos.Store("")
	return g
}

var _ applier.Fetcher = (*gate)(nil)

// Fetch returns the next events the applier may apply, honouring the pause in force.
func (g *gate) Fetch(ctx context.Context) ([]*event.Event, error) {
	for {
		if active, at := g.req.get(); active && !g.open && g.reached(at) {
			if !g.paused.Load() && g.settle != nil {
				if err := g.settle(ctx); err != nil {
					return nil, err
				}
			}
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
func (g *gate) cut(items []*event.Event) []*event.Event {
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
func (g *gate) reached(at binlog.Position) bool {
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
func (g *gate) Paused() (bool, string) {
	if !g.paused.Load() {
		return false, ""
	}
	return true, g.pausedPos.Load().(string)
}

// relayBlockedSince is the relay log's blocked-since time as the stall watchdog must see it: a
// reader blocked on a full relay log because of a pause is not a stall, so the clock starts again
// when the pause ends.
func (g *gate) relayBlockedSince(since time.Time) time.Time {
	if since.IsZero() || g.paused.Load() || g.holding.Load() {
		return time.Time{}
	}
	if r := g.resumed.Load(); r != 0 && since.Before(time.Unix(0, r)) {
		return time.Unix(0, r)
	}
	return since
}

// pauseWatch is the stop poller's view of the pause, for logging and acknowledging it.
type pauseWatch struct {
	raw     string // the request last seen
	paused  bool   // the gate was last seen paused
	expired bool   // an expired request was last seen
}

// followPause applies the record's control fields to the stream's pause: it hands the request to
// the gate, acknowledges PauseHold once the gate has paused, and logs each change once.
func (s *Stream) followPause(ctx context.Context, c workflow.Control, g *gate, w *pauseWatch) {
	if c.PauseExpired && !w.expired {
		s.log.Warn("the vplayer diff pause expired: its diff is gone; going on")
	}
	w.expired = c.PauseExpired
	if s.pause.set(c.Pause, s.flavor) || c.Pause != w.raw {
		if c.Pause == "" && w.raw != "" {
			s.log.Info("vplayer diff pause ended; resuming")
		} else if c.Pause != "" && c.Pause != workflow.PauseHeld {
			s.log.Info("vplayer diff asks to pause", "at", pauseTarget(c.Pause))
		}
		w.raw = c.Pause
	}
	paused, pos := g.Paused()
	if paused && !w.paused {
		s.log.Info("paused for vplayer diff", "pos", pos)
	}
	w.paused = paused
	if paused && c.Pause == workflow.PauseHold && s.lease != nil {
		if _, err := s.lease.AckPause(ctx); err != nil {
			s.log.Warn("could not acknowledge the vplayer diff pause", "error", err)
		}
	}
}

func pauseTarget(raw string) string {
	if raw == workflow.PauseHold {
		return "next transaction boundary"
	}
	return raw
}
