package stream

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/vplayer/vplayer/stream/gate"
	"github.com/vplayer/vplayer/throttle"
	"github.com/vplayer/vplayer/workflow"
)

// errStopRequested means the record's state was set to Stopped from outside (vplayer stop).
var errStopRequested = errors.New("stop requested")

// stopPollInterval is how often a running stream checks whether it was asked to stop.
const stopPollInterval = time.Second

// controls follows, for the stream, the record's control fields: its state (a vplayer stop, a
// vplayer start), the vplayer diff pause and the manual throttle (vplayer throttle), read each
// second (stopPollInterval) by the stop poller during an attempt, and while the stream waits to
// retry or waits while the workflow is stopped. It keeps across attempts what the record asks
// (the pause request, the manual throttle) and the view of the holds, which it reports into the
// record (a log line, a Hold row, the message), and tells the copy whether the live attempt's
// throttle holds the stream. Made by prepare, with the owner.
type controls struct {
	store      *workflow.Store
	id         int64  // the record's
	flavor     string // go-mysql flavor of the source
	own        *owner
	rep        *reporter
	log        *slog.Logger
	retryDelay time.Duration // --retry-delay

	pause *gate.Request // the vplayer diff pause in force, across attempts
	// manual is the manual throttle (vplayer throttle) as the record last said, across attempts;
	// throttler is the live attempt's.
	manual    atomic.Pointer[throttle.Manual]
	throttler atomic.Pointer[throttle.Throttler]
	// holdWatch is the stop poller's view of the hold, across attempts (one poller at a time),
	// so that a hold that outlives an attempt is one hold, and one that ends at an attempt's end
	// is logged by the next.
	holdWatch holdWatch
}

// watchStop polls the record and returns errStopRequested once its state is Stopped. It also
// follows the vplayer diff pause (see followPause), polling faster while one is in force, and
// at once when the gate has just paused.
func (co *controls) watchStop(ctx context.Context, g *gate.Gate) error {
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
		c, err := co.store.Control(qctx, co.id)
		if err == nil && c.State == workflow.StateStopped {
			cancel()
			return co.own.stopRequested(ctx)
		}
		if err == nil {
			co.followPause(qctx, c, g, &w)
			co.followThrottle(c)
		}
		co.followHold(qctx, g, &co.holdWatch)
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

// waitWhileStopped keeps the process up while the workflow is Stopped (--wait-while-stopped):
// it reads the record every second and returns done=false once its state is anything else
// (vplayer start sets Init). The lease stays held meanwhile, renewed by its keepalive: the
// stopped workflow keeps its owner, so a standby goes on waiting instead of taking over a
// workflow an operator stopped, vplayer status names the process that will resume it, and
// vplayer delete refuses while it waits. Nothing else runs: no binlog connection, no target
// transaction. It returns done with nil when ctx ends (the record stays Stopped, with its
// reason), and with the loss when the lease is lost (taken over after the target did not answer
// its renewals, or the record deleted by vplayer delete --force).
func (co *controls) waitWhileStopped(ctx context.Context) (done bool, err error) {
	co.log.Info("waiting while the workflow is stopped: vplayer start resumes it (--wait-while-stopped)")
	t := time.NewTicker(stopPollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			co.log.Info("exiting while the workflow is stopped", "reason", "signal")
			return true, nil
		case <-co.own.lease.Lost():
			return true, co.own.lost(co.own.lease.Err())
		case <-t.C:
		}
		qctx, cancel := context.WithTimeout(ctx, stopPollInterval)
		c, err := co.store.Control(qctx, co.id)
		cancel()
		if err != nil || c.State == workflow.StateStopped {
			continue // a record that cannot be read now is read again; a deleted one ends the lease
		}
		if err := co.own.holds(ctx); errors.Is(err, workflow.ErrLostOwnership) {
			return true, co.own.lost(err)
		}
		co.log.Info("workflow started again", "state", c.State)
		return false, nil
	}
}

// waitRetry waits --retry-delay before the next attempt, still noticing within a second a
// vplayer stop (errStopRequested) or the end of ctx (its error). running is whether this process
// set the workflow Running: before, a Stopped record is the workflow's old state, not a stop.
func (co *controls) waitRetry(ctx context.Context, running bool) error {
	delay := time.NewTimer(co.retryDelay)
	defer delay.Stop()
	poll := time.NewTicker(stopPollInterval)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-delay.C:
			return nil
		case <-poll.C:
			if !running {
				continue // the workflow was not started yet: a Stopped record is its old state
			}
			qctx, cancel := context.WithTimeout(ctx, stopPollInterval)
			c, err := co.store.Control(qctx, co.id)
			cancel()
			if err == nil && c.State == workflow.StateStopped {
				return co.own.stopRequested(ctx)
			}
		}
	}
}
