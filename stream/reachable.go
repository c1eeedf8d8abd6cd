package stream

import (
	"context"
	"fmt"
	"time"

	"github.com/vplayer/vplayer/stream/preflight"
	"github.com/vplayer/vplayer/workflow"
)

// retrier waits out a server that cannot be reached before anything runs (the source or the
// target while the workflow is prepared, the target while the lease is taken or the record
// read): each failure is reported as retried, then --retry-delay passes, until the step
// succeeds, fails otherwise, or ctx ends. Made by New; the owner waits through it while it
// acquires the lease.
type retrier struct {
	rep   *reporter
	delay time.Duration // --retry-delay
}

// untilReachable runs step until it returns nil or an error other than an unreachable server,
// which it returns, waiting out each unreachable error with wait. It returns ctx's error when
// ctx ends while waiting.
func (w retrier) untilReachable(ctx context.Context, what string, step func() error) error {
	retried := false
	for {
		err := step()
		if err == nil && retried {
			w.rep.notifyState(workflow.StateInit)
		}
		if !preflight.IsUnreachable(err) || ctx.Err() != nil {
			return err
		}
		retried = true
		if err := w.wait(ctx, fmt.Errorf("%s: %w", what, err)); err != nil {
			return err
		}
	}
}

// wait handles an unreachable server before anything runs: err reported as retried (the ERROR
// line, OnError not terminal, the Retrying state), then --retry-delay. It returns ctx's error
// when ctx ends first.
func (w retrier) wait(ctx context.Context, err error) error {
	w.rep.retrying(err)
	t := time.NewTimer(w.delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
