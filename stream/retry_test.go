package stream

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vplayer/vplayer/stall"
	"github.com/vplayer/vplayer/workflow"
)

// TestErrorKey_stallByDetector: stalls of one detector are one kind of error for
// --max-time-to-retry-on-error whatever their cause or statement, so that a persisting stall
// whose cause reads differently from one attempt to the next still runs out of time.
func TestErrorKey_stallByDetector(t *testing.T) {
	a := errorKey(&stall.Error{Detector: stall.Heartbeat, Cause: errors.New("recording took longer than 2s")})
	b := errorKey(fmt.Errorf("attempt: %w", &stall.Error{Detector: stall.Heartbeat, Cause: context.DeadlineExceeded}))
	c := errorKey(&stall.Error{Detector: stall.Applier, Statement: "UPDATE `s`.`t`", For: time.Minute})
	if a != b {
		t.Errorf("heartbeat stalls with other causes have keys %q and %q, want one", a, b)
	}
	if a == c {
		t.Errorf("a heartbeat stall and an applier stall share the key %q", a)
	}
}

// TestRun_stopWhileRetrying: vplayer stop while the stream waits to retry is noticed within a
// second, like a stop while it runs: Run returns nil and the record stays Stopped rather than
// being set Running again by the next attempt.
func TestRun_stopWhileRetrying(t *testing.T) {
	cfg, store := testConfig(t)
	cfg.Source.Port = 1 // every attempt fails at the binlog connection
	cfg.RetryDelay = time.Minute
	retrying := make(chan struct{}, 1)
	cfg.OnState = func(state string) {
		if state == StateRetrying {
			select {
			case retrying <- struct{}{}:
			default:
			}
		}
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case <-retrying:
	case err := <-done:
		t.Fatalf("Run = %v before retrying", err)
	case <-ctx.Done():
		t.Fatal("the stream never waited to retry")
	}
	rec, err := store.Get(ctx, cfg.Workflow)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.SetState(ctx, rec.ID, workflow.StateStopped, workflow.StopRequestedMessage); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after vplayer stop = %v, want nil", err)
		}
	case <-ctx.Done():
		t.Fatal("Run did not return after vplayer stop while it waited a minute to retry")
	}
	// SPEC 8: noticed within a second, then stopped within 2s.
	if took := time.Since(stopped); took > 3*time.Second {
		t.Errorf("Run returned %v after vplayer stop, want within 1s to notice and 2s to stop", took)
	}
	if r, _ := store.Get(context.Background(), cfg.Workflow); r.State != workflow.StateStopped || r.Message != workflow.StopRequestedMessage {
		t.Errorf("record state %q message %q, want Stopped, %q", r.State, r.Message, workflow.StopRequestedMessage)
	}
}

// TestTerminal_clockRestartsAfterProgress: one kind of error for longer than
// --max-time-to-retry-on-error is terminal, but after progress the clock starts again, so that a
// stall days after the last one is retried like a first. An attempt that made progress and
// ended without an error of its own (the copy phase done) restarts it too: a Dolt source's
// spurious refusal (1236) met before a copy phase and another met after it were taken for one
// refusal met twice, which is terminal. An attempt that ended with its error, or without
// progress, keeps the clock.
func TestTerminal_clockRestartsAfterProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &reporter{maxRetry: time.Minute}
		stalled := &stall.Error{Detector: stall.Heartbeat, Cause: errors.New("recording took longer than 2s")}
		if r.terminal(stalled) {
			t.Fatal("the first stall is terminal, want a retry")
		}
		time.Sleep(2 * time.Minute)
		if !r.terminal(stalled) {
			t.Fatal("the same stall two minutes on is not terminal with a one-minute limit")
		}
		r.resetErrorClock()
		if r.terminal(stalled) {
			t.Error("a stall after progress is terminal at once, want the clock started again")
		}
		time.Sleep(2 * time.Minute)
		r.attemptEnded(stalled, true)
		r.attemptEnded(nil, false)
		if !r.terminal(stalled) {
			t.Fatal("after attempts that ended with their error or without progress, the clock started again")
		}
		r.attemptEnded(nil, true)
		if r.terminal(stalled) {
			t.Error("a stall after an attempt that made progress and ended well is terminal, want the clock started again")
		}
	})
}
