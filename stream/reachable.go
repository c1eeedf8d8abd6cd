package stream

import (
	"context"
	"fmt"
	"time"

	"github.com/vplayer/vplayer/stream/preflight"
	"github.com/vplayer/vplayer/workflow"
)

// untilReachable runs step until it returns nil or an error other than an unreachable server,
// which it returns, waiting out each unreachable error with retryWait. It returns ctx's error
// when ctx ends while waiting.
func (s *Stream) untilReachable(ctx context.Context, what string, step func() error) error {
	retried := false
	for {
		err := step()
		if err == nil && retried {
			s.rep.notifyState(workflow.StateInit)
		}
		if !preflight.IsUnreachable(err) || ctx.Err() != nil {
			return err
		}
		retried = true
		if err := s.retryWait(ctx, fmt.Errorf("%s: %w", what, err)); err != nil {
			return err
		}
	}
}

// retryWait handles an unreachable server before anything runs: the stream's ERROR line, the
// error reported (not terminal) with the Retrying state, for metrics and /healthz, then
// --retry-delay. It returns ctx's error when ctx ends first.
func (s *Stream) retryWait(ctx context.Context, err error) error {
	s.rep.retrying(err)
	t := time.NewTimer(s.cfg.RetryDelay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
