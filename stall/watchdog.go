package stall

import (
	"context"
	"time"
)

// maxPoll bounds how long the Watchdog sleeps without looking at its Probe,
// so that a wait that starts while it sleeps is noticed quickly.
const maxPoll = 500 * time.Millisecond

// minPoll keeps a tiny configured deadline from turning Run into a busy loop.
const minPoll = time.Millisecond

// Probe reports the stream's current [Snapshot]. Snapshot is called from the
// Watchdog's goroutine while the reader and the applier run: it must be safe
// for concurrent use, O(1) and non-blocking (real implementations load
// atomics; no locks shared with the hot path).
type Probe interface {
	Snapshot() Snapshot
}

// ProbeFunc adapts a function to [Probe].
type ProbeFunc func() Snapshot

// Snapshot returns f().
func (f ProbeFunc) Snapshot() Snapshot { return f() }

// Watchdog drives [Check] from one timer: the single watchdog of a stream
// (SPEC 4.3). Build it with [New]; it starts nothing until [Watchdog.Run].
type Watchdog struct {
	cfg   Config
	probe Probe
	poll  time.Duration
	poke  chan struct{} // capacity 1; a pending value means "re-check now"
}

// New returns a Watchdog that checks probe against cfg. cfg should have passed
// [Config.Validate]; probe must be non-nil. No goroutine or timer is started.
func New(cfg Config, probe Probe) *Watchdog {
	poll := maxPoll
	if cfg.ProgressDeadline > 0 {
		poll = min(poll, cfg.ProgressDeadline/4)
	}
	if cfg.HeartbeatInterval > 0 {
		poll = min(poll, cfg.HeartbeatInterval/4)
	}
	return &Watchdog{
		cfg:   cfg,
		probe: probe,
		poll:  max(poll, minPoll),
		poke:  make(chan struct{}, 1),
	}
}

// Poke makes a running Run re-check at once, e.g. right after a caller
// started a wait. It never blocks, allocates nothing and is safe from any
// goroutine; pokes coalesce, and a poke before Run starts is kept for it.
// Optional: without it a new wait is noticed within the poll period
// (min(500ms, ProgressDeadline/4, HeartbeatInterval/4)), and since the
// [Snapshot] holds the wait's start, the stall still fires on time.
func (w *Watchdog) Poke() {
	select {
	case w.poke <- struct{}{}:
	default:
	}
}

// Run watches until a stall or until ctx is done. It returns the stall, a
// *[Error] wrapping [ErrStalled], or nil once ctx is done: a stop is not an
// error, and the caller already knows why ctx ended.
//
// Run owns one time.Timer for its whole life and starts no goroutine. Each
// round it takes one Snapshot, calls [Check] with time.Now(), and sleeps
// until the earliest pending deadline or the poll period, whichever is
// sooner, or until a [Watchdog.Poke]. A stall fires at its exact deadline,
// not on a poll boundary. Run must not be called concurrently with itself.
func (w *Watchdog) Run(ctx context.Context) error {
	timer := time.NewTimer(w.poll)
	defer timer.Stop()
	for {
		if ctx.Err() != nil {
			return nil
		}
		now := time.Now()
		next, err := Check(w.cfg, w.probe.Snapshot(), now)
		if err != nil {
			return err
		}
		wait := w.poll
		if !next.IsZero() {
			wait = min(wait, next.Sub(now))
		}
		// Since Go 1.23, Reset also drops a value left in timer.C.
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-w.poke:
		}
	}
}
