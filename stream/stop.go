package stream

import (
	"context"
	"errors"
	"time"

	"github.com/vplayer/vplayer/stream/gate"
	"github.com/vplayer/vplayer/workflow"
)

// errStopRequested means the record's state was set to Stopped from outside (vplayer stop).
var errStopRequested = errors.New("stop requested")

// stopPollInterval is how often a running stream checks whether it was asked to stop.
const stopPollInterval = time.Second

// watchStop polls the record and returns errStopRequested once its state is Stopped. It also
// follows the vplayer diff pause (see followPause), polling faster while one is in force, and
// at once when the gate has just paused.
func (s *Stream) watchStop(ctx context.Context, g *gate.Gate) error {
	interval := stopPollInterval
	t := time.NewTicker(interval)
	defer t.Stop()
	var w pauseWatch
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-g.Notify():
		}
		qctx, cancel := context.WithTimeout(ctx, stopPollInterval)
		c, err := s.store.Control(qctx, s.id)
		if err == nil && c.State == workflow.StateStopped {
			cancel()
			return s.stopRequested(ctx)
		}
		if err == nil {
			s.followPause(qctx, c, g, &w)
			s.followThrottle(c)
		}
		s.followHold(qctx, g, &s.holdWatch)
		cancel()
		next := stopPollInterval
		if w.raw != "" {
			next = pausePollInterval
		}
		if next != interval {
			interval = next
			t.Reset(interval)
		}
	}
}

// stopRequested is what a Stopped record means to this process: a vplayer stop (errStopRequested)
// while it holds the workflow's lease; otherwise the loss of the lease, which it reports as such.
// A process cut off from the target while its successor was stopped reads that successor's
// Stopped when it heals: it must say that it lost the workflow, never blame a stop nobody ran.
func (s *Stream) stopRequested(ctx context.Context) error {
	if err := s.own.lostNow(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	return errStopRequested
}
