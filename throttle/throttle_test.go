package throttle

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestParseMaxLoad(t *testing.T) {
	tests := []struct {
		name, in string
		want     []Threshold
		wantErr  bool
	}{
		{name: "empty", in: ""},
		{name: "one", in: "Threads_running=25", want: []Threshold{{"Threads_running", 25}}},
		{name: "two, spaces", in: " Threads_running = 25 , Threads_connected=500", want: []Threshold{{"Threads_running", 25}, {"Threads_connected", 500}}},
		{name: "no value", in: "Threads_running", wantErr: true},
		{name: "not a number", in: "Threads_running=many", wantErr: true},
		{name: "negative", in: "Threads_running=-1", wantErr: true},
		{name: "quote in name", in: "a'b=1", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMaxLoad(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseMaxLoad(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("ParseMaxLoad(%q) = %v, want %v", tt.in, got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("ParseMaxLoad(%q)[%d] = %v, want %v", tt.in, i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestHold_Message(t *testing.T) {
	since := time.Date(2026, 12, 5, 12, 0, 3, 0, time.UTC)
	now := since.Add(3*time.Minute + 12*time.Second + 400*time.Millisecond)
	tests := []struct {
		h    Hold
		want string
	}{
		{Hold{Kind: KindLoad, Reason: "Threads_running 130 > 100", Since: since}, "throttled: Threads_running 130 > 100 since 12:00:03 (3m12s)"},
		{Hold{Kind: KindDelay, Reason: "applying 0-1-77 at 13:04:10 (--apply-delay 1h)", Since: since}, "delayed: applying 0-1-77 at 13:04:10 (--apply-delay 1h) since 12:00:03 (3m12s)"},
	}
	for _, tt := range tests {
		if got := tt.h.Message(now); got != tt.want {
			t.Errorf("Message() = %q, want %q", got, tt.want)
		}
	}
}

// TestThrottler_manual: a manual throttle holds from the first check after it appears, keeps the
// time it began while it lasts, ends on its own at its deadline, and each start and end is
// signalled once.
func TestThrottler_manual(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var manual atomic.Pointer[Manual]
		manual.Store(&Manual{})
		th := New(Config{Manual: func() Manual { return *manual.Load() }})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- th.Run(ctx) }()

		synctest.Wait()
		if h, held := th.Held(); held {
			t.Fatalf("held %v without a throttle", h)
		}
		begun := th.Changed()
		start := time.Now()
		manual.Store(&Manual{Until: start.Add(30 * time.Second), Reason: "backup"})
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case <-begun:
		default:
			t.Fatal("the hold's start was not signalled")
		}
		h, held := th.Held()
		if !held || h.Kind != KindManual || h.Since != start.Add(time.Second) {
			t.Fatalf("Held() = %+v, %v, want a manual hold since the check after it appeared", h, held)
		}
		if want := "manual throttle (backup) until " + start.Add(30*time.Second).UTC().Format("15:04:05"); h.Reason != want {
			t.Errorf("reason %q, want %q", h.Reason, want)
		}
		changed := th.Changed()
		select {
		case <-changed:
			t.Fatal("Changed() returned a channel already closed")
		default:
		}
		time.Sleep(28 * time.Second)
		synctest.Wait()
		if _, held := th.Held(); !held {
			t.Fatal("the hold ended before its deadline")
		}
		select {
		case <-changed:
			t.Fatal("a signal while the hold went on")
		default:
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if h, held := th.Held(); held {
			t.Fatalf("Held() = %+v after the deadline", h)
		}
		select {
		case <-changed:
		default:
			t.Fatal("the hold's end was not signalled")
		}
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("Run() = %v, want context.Canceled", err)
		}
	})
}
