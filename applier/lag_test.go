package applier

import (
	"testing"
	"time"

	"github.com/vplayer/vplayer/event"
)

func TestLagSince(t *testing.T) {
	const sec = int64(time.Second)
	at := func(s float64) int64 { return int64(s * float64(sec)) } // unix nanos of s seconds
	unix := func(s float64) time.Time { return time.Unix(0, at(s)) }
	now := unix(1000.5)
	tests := []struct {
		name   string
		s      lagState
		want   time.Time
		wantOK bool
	}{
		{"nothing received", lagState{}, time.Time{}, false},
		{"nothing received, something waits, not started", lagState{waiting: true}, time.Time{}, false},
		{"nothing received, not waiting", lagState{started: at(990)}, time.Time{}, false},
		{"nothing received, held since the start", lagState{waiting: true, started: at(990)}, unix(990), true},

		// Caught up: everything received applied.
		{"caught up, an event fetched just now", lagState{source: 1000, fetched: at(1000.4)}, now, true},
		{"caught up, a heartbeat within the period", lagState{source: 900, heartbeat: at(999.6), fetched: at(999.6)}, now, true},
		{"caught up, a heartbeat late within the jitter", lagState{source: 900, heartbeat: at(999.0), fetched: at(999.0)}, now, true},
		{"source silent past its period", lagState{source: 900, heartbeat: at(998.9), fetched: at(998.9)}, unix(998.9), true},
		{"source silent for a minute", lagState{source: 940, fetched: at(940.2)}, unix(940.2), true},

		// A transaction fetched and not committed: its commit time, bounded by its fetch.
		{"pending, fetched early in its second", lagState{pending: 1000, pendingAt: at(1000.2), source: 1000, fetched: at(1000.2)}, unix(1000.2), true},
		{"pending, fetched after its second", lagState{pending: 998, pendingAt: at(999.3), source: 998, fetched: at(999.3)}, unix(999), true},
		{"pending, fetch time older than its second", lagState{pending: 990, pendingAt: at(985), source: 995, fetched: at(995.5)}, unix(990), true},
		{"pending, fetch time unknown", lagState{pending: 990, source: 995, fetched: at(995.5)}, unix(990), true},
		{"pending wins over a heartbeat", lagState{pending: 100, pendingAt: at(100.1), heartbeat: at(1000.4), fetched: at(1000.4)}, unix(100.1), true},
		{"pending wins over caught up", lagState{pending: 1000, pendingAt: at(1000.49), fetched: at(1000.49)}, unix(1000.49), true},

		// Nothing pending, events wait unfetched: from the events fetched before them.
		{"waiting, fetched within the newest second", lagState{source: 1000, fetched: at(1000.3), waiting: true}, unix(1000.3), true},
		{"waiting behind a backlog", lagState{source: 700, fetched: at(1000.3), waiting: true}, unix(701), true},
		{"waiting after a heartbeat", lagState{source: 700, heartbeat: at(990), fetched: at(990), waiting: true}, unix(990), true},
		{"waiting, heartbeats only", lagState{heartbeat: at(980), fetched: at(980), waiting: true}, unix(980), true},
		{"held for a minute under load", lagState{source: 940, fetched: at(940.7), waiting: true}, unix(940.7), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := lagSince(tt.s, time.Second, now)
			if ok != tt.wantOK || !got.Equal(tt.want) {
				t.Errorf("lagSince(%+v, 1s, %v)=%v, %v, want %v, %v", tt.s, now, got, ok, tt.want, tt.wantOK)
			}
			if ok && (tt.s.waiting || tt.s.pending != 0) {
				if lag := LagAt(now, got); lag <= 0 {
					t.Errorf("lag=%v with events waiting or pending, want above 0", lag)
				}
			}
		})
	}
}

// TestLagSince_period: the period in force decides how long a quiet source reads as caught up.
func TestLagSince_period(t *testing.T) {
	fetched := time.Unix(1000, 0)
	s := lagState{source: 1000, fetched: fetched.UnixNano()}
	for _, tt := range []struct {
		period, after, want time.Duration
	}{
		{time.Second, 1500 * time.Millisecond, 0},
		{time.Second, 1501 * time.Millisecond, 1501 * time.Millisecond},
		{10 * time.Second, 14 * time.Second, 0},
		{10 * time.Second, 16 * time.Second, 16 * time.Second},
	} {
		now := fetched.Add(tt.after)
		since, _ := lagSince(s, tt.period, now)
		if got := LagAt(now, since); got != tt.want {
			t.Errorf("period %v, %v after the last fetch: lag=%v, want %v", tt.period, tt.after, got, tt.want)
		}
	}
}

func TestApplier_received(t *testing.T) {
	now := time.Unix(1000, 0)
	waiting := false
	a := New(Config{Now: func() time.Time { return now }, Waiting: func() bool { return waiting }})
	if got := a.Lag(now); got != 0 {
		t.Errorf("Lag before anything was received=%v, want 0", got)
	}
	if _, ok := a.LagSince(); ok {
		t.Errorf("LagSince before anything was received is known, want unknown")
	}
	// Run began 3s ago and a gate has held every event since: lag grows from the start, never 0
	// while they wait (SPEC 9).
	a.started.Store(now.Add(-3 * time.Second).UnixNano())
	waiting = true
	if got := a.Lag(now); got != 3*time.Second {
		t.Errorf("Lag with events held since Run began 3s ago, none fetched=%v, want 3s", got)
	}
	waiting = false
	a.received([]*event.Event{
		{Type: event.Begin, Timestamp: 990},
		{Type: event.Commit, Timestamp: 991},
		{Type: event.Skip, Timestamp: 989},
	}, now)
	// Received and not yet applied: the fetched transaction is pending from the moment it arrives.
	if got, want := a.Lag(now.Add(time.Second)), 10*time.Second; got != want {
		t.Errorf("Lag after a fetch, before it is applied=%v, want %v (from the pending transaction's second)", got, want)
	}
	a.oldestPending.Store(0) // committed
	if got := a.Lag(now.Add(time.Second)); got != 0 {
		t.Errorf("Lag caught up within the heartbeat period=%v, want 0", got)
	}
	if since, ok := a.LagSince(); !ok || !since.Equal(now) {
		t.Errorf("LagSince caught up=%v, %v, want now (%v), true", since, ok, now)
	}
	waiting = true
	if got, want := a.Lag(now.Add(time.Second)), 9*time.Second; got != want {
		t.Errorf("Lag with events waiting=%v, want %v (from the end of the newest commit's second)", got, want)
	}
	waiting = false
	if got, want := a.Lag(now.Add(3*time.Second)), 3*time.Second; got != want {
		t.Errorf("Lag with the source silent past its period=%v, want %v (from the last fetch)", got, want)
	}
	// A pending transaction counts from its own commit time (at the latest the end of its
	// second), and an older one already pending is not replaced by a newer fetch.
	a.oldestPending.Store(985)
	a.received([]*event.Event{{Type: event.Begin, Timestamp: 995}}, now)
	if got, want := a.Lag(now), 14*time.Second; got != want {
		t.Errorf("Lag with a pending transaction=%v, want %v", got, want)
	}
	a.oldestPending.Store(0)
	// A transaction fetched within its own second counts from its fetch.
	a.received([]*event.Event{{Type: event.Begin, Timestamp: 1003}, {Type: event.Rows, Timestamp: 1003}}, now.Add(3200*time.Millisecond))
	if got, want := a.Lag(now.Add(3300*time.Millisecond)), 100*time.Millisecond; got != want {
		t.Errorf("Lag of a transaction fetched in its second=%v, want %v", got, want)
	}
	a.oldestPending.Store(0)
	// Heartbeats: counted; waiting events count from their arrival at the latest.
	a.received([]*event.Event{{Type: event.Heartbeat}, {Type: event.Heartbeat}}, now.Add(10*time.Second))
	if got, want := a.Stats().Heartbeats.Load(), int64(2); got != want {
		t.Errorf("Heartbeats=%d, want %d", got, want)
	}
	waiting = true
	if got, want := a.Lag(now.Add(10500*time.Millisecond)), 500*time.Millisecond; got != want {
		t.Errorf("Lag with events waiting after a heartbeat=%v, want %v", got, want)
	}
	waiting = false
	// An older commit time received later does not move the reference back.
	a.received([]*event.Event{{Type: event.Skip, Timestamp: 900}}, now.Add(11*time.Second))
	waiting = true
	if got, want := a.Lag(now.Add(12*time.Second)), 2*time.Second; got != want {
		t.Errorf("Lag after an older event=%v, want %v", got, want)
	}
	if got := a.Lag(time.Unix(0, 0)); got != 0 {
		t.Errorf("Lag with a clock behind the source=%v, want 0", got)
	}
}

func TestStats_observePerCommit(t *testing.T) {
	var s Stats
	for _, n := range []int{1, 2, 3, 5, 6, 1000, 1001, 50000} {
		s.observePerCommit(n)
	}
	want := [len(PerCommitBuckets) + 1]int64{1, 1, 2, 1, 0, 0, 0, 0, 0, 1, 2}
	for i := range want {
		if got := s.PerCommit[i].Load(); got != want[i] {
			t.Errorf("PerCommit[%d]=%d, want %d", i, got, want[i])
		}
	}
}
