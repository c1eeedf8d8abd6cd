package applier

import (
	"time"

	"github.com/vplayer/vplayer/event"
)

// Lag is measured as SPEC 9 defines it: now minus the source commit time of the oldest
// transaction not yet committed on the target, and 0 when the stream is caught up. LagSince
// returns the instant it is measured from:
//
//   - while the applier holds a fetched source transaction that is not yet committed on the
//     target (applying, committing, blocked on a lock, or split across fetches), that
//     transaction's commit time;
//   - else, while events vplayer received wait in front of the applier (in the relay log, or
//     in a gate that holds the stream on purpose: Config.Waiting), the commit time of the first
//     of them, which is unknown but no earlier than the newest commit time received nor than
//     the last heartbeat (the source sends one only when it has nothing else); when the applier
//     has fetched nothing yet (a gate held the stream from its first event), the applier's
//     start, which the events arrived after: lag then reads at least how long they waited;
//   - else, caught up with everything received: now, while the last fetch of any event or
//     heartbeat is no older than the source's heartbeat period (Config.HeartbeatPeriod) and
//     half a period more for its timer's and the network's jitter; past that, the source is
//     silent and lag counts from that fetch.
//
// Lag therefore grows while anything is blocked (the applier on a lock, the reader on a full
// relay log, a throttle or a diff pause holding events back, a silent source) and never reads 0
// while a received event waits.
//
// Precision: the source's commit times are the binlog event headers' whole seconds. A commit
// time is taken as the latest instant they allow: the end of its second, or, when earlier, the
// moment the applier fetched the transaction (a commit precedes its arrival). Lag so reads at
// most one second less than the exact value, and at least how long the transaction has been in
// the applier's hands; events that wait unfetched are taken to have arrived at the applier's
// last fetch. Source and vplayer clocks are assumed to agree: a source clock ahead of vplayer's
// reads as less lag, never below zero.

// lagState is what the lag rule reads; every field is zero when unknown.
type lagState struct {
	pending   int64 // source commit time (unix s) of the oldest transaction not committed here
	pendingAt int64 // unix nanos of the fetch that brought it, or of an earlier fetch
	source    int64 // newest source commit time (unix s) among the events fetched
	heartbeat int64 // unix nanos of the last fetch that brought a heartbeat
	fetched   int64 // unix nanos of the last fetch that brought any event
	waiting   bool  // events received wait in front of the applier
	started   int64 // unix nanos when the applier's Run began
}

// received notes what a fetch brought at now, before it is applied: the fetch's time, the
// newest source commit time, the heartbeats (counted in Stats.Heartbeats) and when they arrived.
// O(len(items)); it never blocks.
//
// The oldest pending transaction is noted here too, with the time of its fetch and before the
// newest commit time: a lag read between the stores must never see the newest time without the
// pending one (LagSince reads them in the opposite order), or lag would dip low for an instant.
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
	at := now.UnixNano()
	if a.oldestPending.Load() == 0 {
		// Whatever becomes pending next came with this fetch or a later one.
		a.pendingAt.Store(at)
		if begin != 0 {
			a.oldestPending.Store(begin)
		}
	}
	if newest > a.lastSource.Load() {
		a.lastSource.Store(newest)
	}
	if heartbeats > 0 {
		a.lastHeartbeat.Store(at)
		a.stats.Heartbeats.Add(heartbeats)
	}
	a.lastFetch.Store(at)
}

// LagSince returns the instant lag is measured from at the applier's clock's now (see above; now
// itself when caught up) and true, or false before the applier received anything. It never
// blocks and is safe from any goroutine.
func (a *Applier) LagSince() (since time.Time, ok bool) {
	return a.lagSince(a.cfg.Now())
}

func (a *Applier) lagSince(now time.Time) (time.Time, bool) {
	var s lagState
	s.pending = a.oldestPending.Load()
	s.pendingAt = a.pendingAt.Load()
	s.waiting = a.cfg.Waiting != nil && a.cfg.Waiting()
	s.fetched = a.lastFetch.Load()
	s.heartbeat = a.lastHeartbeat.Load()
	s.source = a.lastSource.Load()
	s.started = a.started.Load()
	return lagSince(s, a.cfg.HeartbeatPeriod, now)
}

// lagSince is LagSince's rule over its inputs, at now, for a source sending a heartbeat every
// period while it has nothing else to send.
func lagSince(s lagState, period time.Duration, now time.Time) (time.Time, bool) {
	switch {
	case s.pending != 0:
		return commitTime(s.pending, s.pendingAt), true
	case s.fetched == 0 && s.source == 0 && s.heartbeat == 0:
		if s.waiting && s.started != 0 {
			// Held from the first event on (a --apply-delay or a throttle in force when the
			// attempt began): what waits arrived after the start.
			return time.Unix(0, s.started), true
		}
		return time.Time{}, false
	case s.waiting:
		// The first event waiting is no older than what was fetched before it, nor than the
		// last heartbeat.
		since := commitTime(s.source, s.fetched)
		if s.heartbeat != 0 {
			since = later(since, time.Unix(0, s.heartbeat))
		}
		return since, true
	}
	fetched := time.Unix(0, s.fetched)
	if now.Sub(fetched) <= period+period/2 { // half a period for the jitter of timer and network
		return now, true
	}
	return fetched, true
}

// commitTime is the latest instant a transaction stamped with the whole second sec and fetched
// at fetched (unix nanos; 0 when unknown) can have committed on the source: the end of its
// second, or its fetch when earlier, but never before the second began.
func commitTime(sec, fetched int64) time.Time {
	switch {
	case fetched == 0:
		return time.Unix(sec, 0)
	case sec == 0:
		return time.Unix(0, fetched)
	}
	return later(time.Unix(sec, 0), earlier(time.Unix(sec+1, 0), time.Unix(0, fetched)))
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// Lag returns how far the target is behind the source at now (see LagSince): zero before
// anything was received and when caught up, never negative.
func (a *Applier) Lag(now time.Time) time.Duration {
	since, ok := a.lagSince(now)
	if !ok {
		return 0
	}
	return LagAt(now, since)
}

// LagAt returns now minus since, or zero when since is later than now (caught up, or a source
// clock ahead of vplayer's).
func LagAt(now, since time.Time) time.Duration {
	return max(now.Sub(since), 0)
}
