package stream

import (
	"context"
	"errors"
	"time"

	"github.com/vplayer/vplayer/workflow"
)

// errStopRequested means the record's state was set to Stopped from outside (vplayer stop).
var errStopRequested = errors.New("stop requested")

// stopPollInterval is how often a running stream checks whether it was asked to stop.
const stopPollInterval = time.Second

// watchStop polls the record and returns errStopRequested once its state is Stopped. It also
// follows the vplayer diff pause (see followPause), polling faster while one is in force, and
// at once when the gate has just paused.
func (s *Stream) watchStop(ctx context.Context, gate *gate) error {
	interval := stopPollInterval
	t := time.NewTicker(interval)
	defer t.Stop()
	var w pauseWatch
	var hw holdWatch
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-gate.notify:
		}
		qctx, cancel := context.WithTimeout(ctx, stopPollInterval)
		c, err := s.store.Control(qctx, s.id)
		if err == nil && c.State == workflow.StateStopped {
			cancel()
			return errStopRequested
		}
		if err == nil {
			s.followPause(qctx, c, gate, &w)
			s.followThrottle(c)
		}
		s.followHold(qctx, gate, &hw)
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
