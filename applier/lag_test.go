package applier

import (
	"testing"
	"time"

	"github.com/vplayer/vplayer/event"
)

func TestLagSince(t *testing.T) {
	const sec = int64(time.Second)
	tests := []struct {
		name                       string
		pending, source, heartbeat int64
		want                       time.Time
		wantOK                     bool
	}{
		{"nothing received", 0, 0, 0, time.Time{}, false},
		{"pending wins over newer events", 100, 200, 300 * sec, time.Unix(100, 0), true},
		{"caught up: last source commit", 0, 200, 0, time.Unix(200, 0), true},
		{"caught up: heartbeat after the last commit", 0, 200, 250*sec + 5, time.Unix(250, 5), true},
		{"caught up: heartbeat before the last commit", 0, 200, 150 * sec, time.Unix(200, 0), true},
		{"heartbeats only", 0, 0, 42 * sec, time.Unix(42, 0), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := lagSince(tt.pending, tt.source, tt.heartbeat)
			if ok != tt.wantOK || !got.Equal(tt.want) {
				t.Errorf("lagSince(%d, %d, %d)=%v, %v, want %v, %v", tt.pending, tt.source, tt.heartbeat, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestApplier_received(t *testing.T) {
	a := New(Config{})
	now := time.Unix(1000, 0)
	if got := a.Lag(now); got != 0 {
		t.Errorf("Lag before anything was received=%v, want 0", got)
	}
	a.received([]*event.Event{
		{Type: event.Begin, Timestamp: 990},
		{Type: event.Commit, Timestamp: 991},
		{Type: event.Skip, Timestamp: 989},
	}, now)
	// Received and not yet applied: the fetched transaction is pending from the moment it arrives.
	if got, want := a.Lag(now.Add(time.Second)), 11*time.Second; got != want {
		t.Errorf("Lag after a fetch, before it is applied=%v, want %v (from the pending transaction)", got, want)
	}
	a.oldestPending.Store(0) // committed
	if got, want := a.Lag(now.Add(time.Second)), 10*time.Second; got != want {
		t.Errorf("Lag after a fetch, caught up=%v, want %v (from the newest commit time)", got, want)
	}
	// A pending transaction counts from its own commit time, and an older one already pending
	// is not replaced by a newer fetch.
	a.oldestPending.Store(985)
	a.received([]*event.Event{{Type: event.Begin, Timestamp: 995}}, now)
	if got, want := a.Lag(now), 15*time.Second; got != want {
		t.Errorf("Lag with a pending transaction=%v, want %v", got, want)
	}
	a.oldestPending.Store(0)
	// Heartbeats: counted, and lag is measured from their arrival.
	a.received([]*event.Event{{Type: event.Heartbeat}, {Type: event.Heartbeat}}, now.Add(3*time.Second))
	if got, want := a.Stats().Heartbeats.Load(), int64(2); got != want {
		t.Errorf("Heartbeats=%d, want %d", got, want)
	}
	if got, want := a.Lag(now.Add(3500*time.Millisecond)), 500*time.Millisecond; got != want {
		t.Errorf("Lag after a heartbeat=%v, want %v", got, want)
	}
	// An older commit time received later does not move the reference back.
	a.received([]*event.Event{{Type: event.Skip, Timestamp: 900}}, now.Add(4*time.Second))
	if got, want := a.Lag(now.Add(4*time.Second)), time.Second; got != want {
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
