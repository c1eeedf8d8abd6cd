package heartbeat

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vplayer/vplayer/stall"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

const interval = time.Second

func received(r *Recorder, n int) {
	for range n {
		r.Received()
	}
}

func TestRecorder_Due(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pending int
		now     time.Time
		want    bool
	}{
		{name: "nothing pending", pending: 0, now: t0.Add(time.Hour), want: false},
		{name: "before the interval", pending: 3, now: t0.Add(interval - time.Nanosecond), want: false},
		{name: "at the interval", pending: 1, now: t0.Add(interval), want: true},
		{name: "after the interval", pending: 1, now: t0.Add(time.Minute), want: true},
		{name: "clock behind last", pending: 1, now: t0.Add(-time.Minute), want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(interval, t0)
			received(r, tc.pending)
			if got := r.Due(tc.now); got != tc.want {
				t.Errorf("Due(t0+%v)=%v, want %v", tc.now.Sub(t0), got, tc.want)
			}
		})
	}
}

func TestRecorder_Record_success(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		r := New(interval, start)
		received(r, 3)
		time.Sleep(interval)
		now := time.Now()
		if !r.Due(now) {
			t.Fatal("Due()=false with 3 pending at the interval, want true")
		}

		err := r.Record(t.Context(), now, func(ctx context.Context) error {
			if got := r.InFlightSince(); !got.Equal(now) {
				t.Errorf("InFlightSince()=%v during the write, want %v", got, now)
			}
			deadline, ok := ctx.Deadline()
			if !ok {
				t.Fatal("write context has no deadline")
			}
			if got := deadline.Sub(now); got != interval {
				t.Errorf("write deadline is now+%v, want now+%v", got, interval)
			}
			received(r, 2) // arrive while the write is in flight
			time.Sleep(interval / 2)
			return nil
		})
		if err != nil {
			t.Fatalf("Record()=%v, want nil", err)
		}
		if got, want := r.Pending(), int64(2); got != want {
			t.Errorf("Pending()=%d, want %d (the ones received mid-write)", got, want)
		}
		if got, want := r.Recorded(), int64(1); got != want {
			t.Errorf("Recorded()=%d, want %d", got, want)
		}
		if got := r.LastRecorded(); !got.Equal(now) {
			t.Errorf("LastRecorded()=%v, want %v", got, now)
		}
		if got := r.InFlightSince(); !got.IsZero() {
			t.Errorf("InFlightSince()=%v after the write, want zero", got)
		}
		// The next write is due an interval after this one started.
		if r.Due(now.Add(interval - time.Nanosecond)) {
			t.Error("Due(now+interval-1ns)=true, want false")
		}
		if !r.Due(now.Add(interval)) {
			t.Error("Due(now+interval)=false, want true")
		}
	})
}

func TestRecorder_Record_failure(t *testing.T) {
	stalled := stall.ErrStalled.Error()
	errLocked := errors.New("Error 1205 (HY000): Lock wait timeout exceeded; try restarting transaction")
	for _, tc := range []struct {
		name      string
		write     func(ctx context.Context) error
		wantTook  time.Duration // time spent in Record
		wantErr   string
		wantCause error
	}{
		{
			name:      "write fails",
			write:     func(context.Context) error { return errLocked },
			wantErr:   "failed to record heartbeat: " + errLocked.Error() + ": " + stalled,
			wantCause: errLocked,
		},
		{
			name: "write blocked past its deadline",
			write: func(ctx context.Context) error {
				<-ctx.Done()
				return ctx.Err()
			},
			wantTook:  interval,
			wantErr:   "failed to record heartbeat: context deadline exceeded: " + stalled,
			wantCause: context.DeadlineExceeded,
		},
		{
			name: "write fails wrapping its deadline",
			write: func(ctx context.Context) error {
				<-ctx.Done()
				return errors.Join(errors.New("update _vt.vreplication"), ctx.Err())
			},
			wantTook:  interval,
			wantErr:   "failed to record heartbeat: update _vt.vreplication\ncontext deadline exceeded: " + stalled,
			wantCause: context.DeadlineExceeded,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := New(interval, time.Now())
				received(r, 4)
				time.Sleep(2 * interval)
				now := time.Now()

				err := r.Record(t.Context(), now, tc.write)
				if got := time.Since(now); got != tc.wantTook {
					t.Errorf("Record took %v, want %v", got, tc.wantTook)
				}
				if err == nil {
					t.Fatalf("Record()=nil, want %q", tc.wantErr)
				}
				if got := err.Error(); got != tc.wantErr {
					t.Errorf("Record()=%q\nwant      %q", got, tc.wantErr)
				}
				if !errors.Is(err, stall.ErrStalled) {
					t.Errorf("errors.Is(%v, stall.ErrStalled)=false, want true", err)
				}
				if !errors.Is(err, tc.wantCause) {
					t.Errorf("errors.Is(%v, %v)=false, want true", err, tc.wantCause)
				}
				var e *stall.Error
				if !errors.As(err, &e) || e.Detector != stall.Heartbeat {
					t.Errorf("Record()=%#v, want a *stall.Error from the heartbeat detector", err)
				}
				if got, want := r.Pending(), int64(4); got != want {
					t.Errorf("Pending()=%d after a failed write, want %d", got, want)
				}
				if got, want := r.Recorded(), int64(0); got != want {
					t.Errorf("Recorded()=%d after a failed write, want %d", got, want)
				}
				if !r.Due(time.Now()) {
					t.Error("Due()=false after a failed write, want true")
				}
				if got := r.InFlightSince(); !got.IsZero() {
					t.Errorf("InFlightSince()=%v after the write, want zero", got)
				}
			})
		})
	}
}

func TestRecorder_Record_committedLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := New(interval, time.Now())
		received(r, 1)
		time.Sleep(interval)
		now := time.Now()

		err := r.Record(t.Context(), now, func(context.Context) error {
			time.Sleep(interval + time.Millisecond) // a driver that ignores ctx
			return nil
		})
		if got, want := err.Error(), "failed to record heartbeat: recording took longer than 1s: "+stall.ErrStalled.Error(); got != want {
			t.Errorf("Record()=%q\nwant      %q", got, want)
		}
		// It did commit: the counters say so.
		if got, want := r.Pending(), int64(0); got != want {
			t.Errorf("Pending()=%d, want %d", got, want)
		}
		if got, want := r.Recorded(), int64(1); got != want {
			t.Errorf("Recorded()=%d, want %d", got, want)
		}
	})
}

func TestRecorder_Record_parentCanceled(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(ctx context.Context) error
		want  error
	}{
		{
			name: "write fails",
			write: func(ctx context.Context) error {
				<-ctx.Done()
				return errors.Join(errors.New("update _vt.vreplication"), ctx.Err())
			},
			want: context.Canceled,
		},
		{
			name:  "write commits anyway",
			write: func(context.Context) error { time.Sleep(interval / 2); return nil },
			want:  nil,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := New(interval, time.Now())
				received(r, 2)
				time.Sleep(interval)
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				go func() {
					time.Sleep(interval / 4)
					cancel()
				}()

				err := r.Record(ctx, time.Now(), tc.write)
				if err != tc.want {
					t.Errorf("Record()=%v, want %v unwrapped", err, tc.want)
				}
				if errors.Is(err, stall.ErrStalled) {
					t.Errorf("Record()=%v is a stall, want a plain stop", err)
				}
			})
		})
	}
}

func TestRecorder_Record_parentCanceledKeepsPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := New(interval, time.Now())
		received(r, 2)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		err := r.Record(ctx, time.Now(), func(ctx context.Context) error { return ctx.Err() })
		if err != context.Canceled {
			t.Errorf("Record()=%v, want context.Canceled", err)
		}
		if got, want := r.Pending(), int64(2); got != want {
			t.Errorf("Pending()=%d, want %d", got, want)
		}
		if got, want := r.Recorded(), int64(0); got != want {
			t.Errorf("Recorded()=%d, want %d", got, want)
		}
	})
}

func TestRecorder_Record_concurrentPanics(t *testing.T) {
	r := New(interval, t0)
	defer func() {
		if recover() == nil {
			t.Error("nested Record did not panic")
		}
	}()
	_ = r.Record(context.Background(), t0, func(ctx context.Context) error {
		return r.Record(ctx, t0, func(context.Context) error { return nil })
	})
}

func TestRecorder_InFlightSince_watchdog(t *testing.T) {
	// The stall watchdog, fed by InFlightSince, fires at the write's deadline.
	synctest.Test(t, func(t *testing.T) {
		r := New(interval, time.Now())
		received(r, 1)
		time.Sleep(interval)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()

		w := stall.New(stall.Config{HeartbeatInterval: interval}, stall.ProbeFunc(func() stall.Snapshot {
			return stall.Snapshot{HeartbeatSince: r.InFlightSince()}
		}))
		watched := make(chan error, 1)
		go func() { watched <- w.Run(ctx) }()

		release := make(chan struct{})
		recorded := make(chan error, 1)
		go func() {
			recorded <- r.Record(ctx, time.Now(), func(context.Context) error {
				<-release // a driver stuck past its deadline
				return errors.New("driver: bad connection")
			})
		}()
		synctest.Wait()

		time.Sleep(interval - time.Millisecond)
		synctest.Wait()
		select {
		case err := <-watched:
			t.Fatalf("watchdog returned %v before the interval", err)
		default:
		}
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		select {
		case err := <-watched:
			var e *stall.Error
			if !errors.As(err, &e) || e.Detector != stall.Heartbeat || e.For != interval {
				t.Errorf("watchdog returned %v, want a heartbeat stall after exactly %v", err, interval)
			}
		default:
			t.Fatal("watchdog still running after the interval, want a heartbeat stall")
		}
		close(release)
		if err := <-recorded; !errors.Is(err, stall.ErrStalled) {
			t.Errorf("Record()=%v, want a stall", err)
		}
	})
}
