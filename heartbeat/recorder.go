// Package heartbeat counts the source's heartbeat events and decides when
// the applier records one in the workflow record (SPEC 4.2).
//
// The pending counter is cleared only after the write has committed, and only
// by the heartbeats that the write covers. A write that fails or misses its
// deadline is a stall ([stall.Heartbeat]). The Recorder starts no goroutines
// and holds no timers: time comes in as arguments, and the stall watchdog
// reads [Recorder.InFlightSince] to notice a write that hangs.
package heartbeat

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/vplayer/vplayer/stall"
)

// Recorder tracks heartbeats received and recorded. Received, Pending,
// Recorded, LastRecorded and InFlightSince are O(1), lock-free and safe from
// any goroutine; Due and Record are the applier's, and Record must not run
// concurrently with itself.
type Recorder struct {
	interval time.Duration
	pending  atomic.Int64
	recorded atomic.Int64
	last     atomic.Pointer[time.Time] // never nil
	inFlight atomic.Pointer[time.Time] // nil: no write in flight
}

// New returns a Recorder that records at most once per interval, which is
// also each write's deadline (--heartbeat-update-interval; positive, see
// [stall.Config.Validate]). last is when time_heartbeat was last written, or
// the start time when unknown: the first record is due interval after it.
func New(interval time.Duration, last time.Time) *Recorder {
	r := &Recorder{interval: interval}
	r.last.Store(&last)
	return r
}

// Interval returns the interval given to New.
func (r *Recorder) Interval() time.Duration { return r.interval }

// Received counts one heartbeat event from the source. Call it only for a
// heartbeat received while no transaction is open. O(1), never blocks.
func (r *Recorder) Received() { r.pending.Add(1) }

// Pending returns how many heartbeats were received and not yet covered by a
// committed write; never negative.
func (r *Recorder) Pending() int64 { return r.pending.Load() }

// Recorded returns how many heartbeat writes have committed since New.
func (r *Recorder) Recorded() int64 { return r.recorded.Load() }

// LastRecorded returns the now of the last committed write, or New's last.
func (r *Recorder) LastRecorded() time.Time { return *r.last.Load() }

// InFlightSince returns the now given to the Record call in progress, or the
// zero time when no write is in flight. It is what the stall watchdog's
// [stall.Snapshot.HeartbeatSince] holds.
func (r *Recorder) InFlightSince() time.Time {
	if t := r.inFlight.Load(); t != nil {
		return *t
	}
	return time.Time{}
}

// Due reports whether a write is due at now: at least one heartbeat is
// pending and now - LastRecorded() >= the interval.
func (r *Recorder) Due(now time.Time) bool {
	return r.pending.Load() > 0 && now.Sub(r.LastRecorded()) >= r.interval
}

// Record runs write (which writes time_heartbeat and time_updated and
// commits) with a context whose deadline is now + interval, and marks the
// write in flight since now meanwhile. now is the current time.
//
// The n heartbeats pending when Record starts are the ones the write covers.
// When write returns nil, Pending drops by n (heartbeats received during the
// write stay pending), LastRecorded becomes now and Recorded grows by one.
// If the write committed only after its deadline, Record still counts it and
// then returns the stall error "failed to record heartbeat: recording took
// longer than <interval>: ...", as the watchdog would have.
//
// When write fails, nothing changes, so the write stays due, and Record
// returns a *[stall.Error] (Detector [stall.Heartbeat], Cause the write's
// error): "failed to record heartbeat: <cause>: progress stalled; ...". But
// when ctx itself is done, Record returns ctx.Err() as is: a stop is not a
// stall.
func (r *Recorder) Record(ctx context.Context, now time.Time, write func(ctx context.Context) error) error {
	if !r.inFlight.CompareAndSwap(nil, &now) {
		panic("heartbeat: concurrent Record calls")
	}
	defer r.inFlight.Store(nil)

	n := r.pending.Load()
	wctx, cancel := context.WithDeadline(ctx, now.Add(r.interval))
	defer cancel()
	err := write(wctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &stall.Error{Detector: stall.Heartbeat, Cause: err}
	}

	r.pending.Add(-n)
	r.last.Store(&now)
	r.recorded.Add(1)
	if ctx.Err() == nil && wctx.Err() != nil {
		return &stall.Error{
			Detector: stall.Heartbeat,
			Cause:    fmt.Errorf("recording took longer than %v", r.interval),
		}
	}
	return nil
}
