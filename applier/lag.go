package applier

import (
	"time"

	"github.com/vplayer/vplayer/event"
)

// Lag is measured as SPEC 9 defines it, from the instant LagSince returns:
//
//   - while the applier holds a fetched source transaction that is not yet committed on the
//     target (applying, committing, blocked on a lock, or split across fetches), the source
//     commit time of the oldest such transaction;
//   - otherwise, caught up with everything fetched, the later of the newest source commit time
//     among the events received and the arrival of the last source heartbeat. Transactions still
//     waiting in the relay log are newer than every event received, so lag counts them from the
//     commit before them: high by at most the gap between two source commits. The source sends
//     heartbeats only when it has nothing else to send.
//
// Lag therefore grows while anything is blocked (the applier on a lock, the reader on a full
// relay log, the target on a heartbeat write) and does not fall to zero between batches.
//
// Precision: the source's commit times are the binlog event headers' whole seconds, so while a
// transaction is pending, or right after the last one committed, lag reads up to one second more
// than the exact value; the heartbeat time is exact. Source and vplayer clocks are assumed to
// agree: a source clock ahead of vplayer's reads as less lag, never below zero.

// received notes what a fetch brought, before it is applied: the newest source commit time, the
// heartbeats (counted in Stats.Heartbeats) and when they arrived. O(len(items)); it never blocks.
//
// The oldest pending transaction is noted here too, before the newest commit time: a lag read
// between the two stores must never see the newest time without the pending one (LagSince reads
// them in the opposite order), or lag would dip low for an instant.
func (a *Applier) received(items []*event.Event, now time.Time) {
	var newest, heartbeats, begin int64
	for _, e := range items {
		switch e.Type {
		case event.Heartbeat:
			heartbeats++
			continue
		case event.Begin:
			if begin == 0 {
				begin = e.Timestamp
			}
		}
		newest = max(newest, e.Timestamp)
	}
	if begin != 0 && a.oldestPending.Load() == 0 {
		a.oldestPending.Store(begin)
	}
	if newest > a.lastSource.Load() {
		a.lastSource.Store(newest)
	}
	if heartbeats > 0 {
		a.lastHeartbeat.Store(now.UnixNano())
		a.stats.Heartbeats.Add(heartbeats)
	}
}

// LagSince returns the instant lag is measured from (see above) and true, or false before the
// applier received anything. It never blocks and is safe from any goroutine.
func (a *Applier) LagSince() (since time.Time, ok bool) {
	source, heartbeat := a.lastSource.Load(), a.lastHeartbeat.Load()
	return lagSince(a.oldestPending.Load(), source, heartbeat)
}

// lagSince is LagSince's rule over its inputs: pending and source are unix seconds, heartbeat unix
// nanoseconds, each zero when unknown.
func lagSince(pending, source, heartbeat int64) (time.Time, bool) {
	switch {
	case pending != 0:
		return time.Unix(pending, 0), true
	case source == 0 && heartbeat == 0:
		return time.Time{}, false
	case heartbeat > source*int64(time.Second):
		return time.Unix(0, heartbeat), true
	default:
		return time.Unix(source, 0), true
	}
}

// Lag returns how far the target is behind the source at now (see LagSince): zero before
// anything was received, never negative.
func (a *Applier) Lag(now time.Time) time.Duration {
	since, ok := a.LagSince()
	if !ok {
		return 0
	}
	return LagAt(now, since)
}

// LagAt returns now minus since, or zero when since is later than now (a source clock ahead of
// vplayer's).
func LagAt(now, since time.Time) time.Duration {
	return max(now.Sub(since), 0)
}
