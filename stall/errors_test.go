package stall

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestError_Error(t *testing.T) {
	stalled := ErrStalled.Error()
	for _, tc := range []struct {
		name string
		err  *Error
		want string
	}{
		{
			name: "relay log, statement known",
			err:  &Error{Detector: RelayLog, For: 5 * time.Minute, Statement: "UPDATE `shop`.`orders`", StatementFor: 5*time.Minute + 2*time.Second + 300*time.Millisecond},
			want: "relay log I/O stalled: " + stalled + "; applier busy for 5m2s in UPDATE `shop`.`orders`",
		},
		{
			name: "relay log, sub-second statement",
			err:  &Error{Detector: RelayLog, Statement: "COMMIT", StatementFor: 100*time.Millisecond + 300*time.Microsecond},
			want: "relay log I/O stalled: " + stalled + "; applier busy for 100ms in COMMIT",
		},
		{
			name: "relay log, statement start unknown",
			err:  &Error{Detector: RelayLog, Statement: "COMMIT"},
			want: "relay log I/O stalled: " + stalled + "; applier busy in COMMIT",
		},
		{
			name: "relay log, no statement",
			err:  &Error{Detector: RelayLog, For: time.Minute},
			want: "relay log I/O stalled: " + stalled + "; applier holds no open statement",
		},
		{
			name: "applier",
			err:  &Error{Detector: Applier, For: 5 * time.Minute, Statement: "DELETE FROM `shop`.`carts`", StatementFor: time.Minute},
			want: "applier stalled: no progress for 5m0s while applying DELETE FROM `shop`.`carts`: " + stalled,
		},
		{
			name: "applier, no statement",
			err:  &Error{Detector: Applier, For: 1500 * time.Millisecond},
			want: "applier stalled: no progress for 1.5s with no statement in flight: " + stalled,
		},
		{
			name: "heartbeat, deadline",
			err:  &Error{Detector: Heartbeat, Cause: context.DeadlineExceeded},
			want: "failed to record heartbeat: context deadline exceeded: " + stalled,
		},
		{
			name: "heartbeat, too long",
			err:  &Error{Detector: Heartbeat, For: time.Second, Cause: errors.New("recording took longer than 1s")},
			want: "failed to record heartbeat: recording took longer than 1s: " + stalled,
		},
		{
			name: "heartbeat, no cause",
			err:  &Error{Detector: Heartbeat},
			want: "failed to record heartbeat: " + stalled,
		},
		{
			name: "unknown detector",
			err:  &Error{Detector: "disk"},
			want: "disk stalled: " + stalled,
		},
		{
			name: "zero value",
			err:  &Error{},
			want: stalled,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error()=%q\nwant     %q", got, tc.want)
			}
		})
	}
}

func TestError_Unwrap(t *testing.T) {
	var err error = &Error{Detector: Heartbeat, Cause: context.DeadlineExceeded}
	if !errors.Is(err, ErrStalled) {
		t.Errorf("errors.Is(%v, ErrStalled)=false, want true", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("errors.Is(%v, context.DeadlineExceeded)=false, want true", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Errorf("errors.Is(%v, context.Canceled)=true, want false", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Detector != Heartbeat {
		t.Errorf("errors.As(%v) gave %+v, want a heartbeat *Error", err, e)
	}
	if got, want := len((&Error{Detector: RelayLog}).Unwrap()), 1; got != want {
		t.Errorf("len(Unwrap()) without Cause=%d, want %d", got, want)
	}
}

func TestRound(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   time.Duration
		want string
	}{
		{name: "negative", in: -time.Second, want: "0s"},
		{name: "zero", in: 0, want: "0s"},
		{name: "just over a millisecond", in: 1234567 * time.Nanosecond, want: "1ms"},
		{name: "sub-millisecond", in: 567890 * time.Nanosecond, want: "568µs"},
		{name: "milliseconds", in: 100*time.Millisecond + 400*time.Microsecond, want: "100ms"},
		{name: "seconds", in: 1549 * time.Millisecond, want: "1.5s"},
		{name: "one second", in: time.Second, want: "1s"},
		{name: "minutes", in: 5*time.Minute + 2400*time.Millisecond, want: "5m2s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := round(tc.in).String(); got != tc.want {
				t.Errorf("round(%v)=%s, want %s", tc.in, got, tc.want)
			}
		})
	}
}
