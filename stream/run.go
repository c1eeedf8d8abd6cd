package stream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vplayer/vplayer/applier"
	"github.com/vplayer/vplayer/workflow"
)

// Run runs the workflow until ctx ends (a requested stop: nil), the stop position or a stop DDL
// is reached (nil), the record is set to Stopped from outside (nil), or a terminal error occurs
// (an error wrapping ErrTerminal). Retryable errors are logged, recorded and retried after the
// retry delay from the committed position.
func (s *Stream) Run(ctx context.Context) error {
	// A server that cannot be reached before the stream owns the workflow is waited for, as
	// after any stream error: only a terminal error or a stop ends the process.
	if err := s.retry.untilReachable(ctx, "start workflow", func() error { return s.prepare(ctx) }); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	lease, err := s.own.acquire(ctx)
	if err != nil || lease == nil {
		return err // nil: stopped while waiting as a standby
	}
	s.own.keep()
	defer s.own.release()
	if err := s.retry.untilReachable(ctx, "configure workflow", func() error { return s.configure(ctx) }); err != nil {
		if ctx.Err() != nil {
			return s.stopped(stopSignal) // owned already: record the stop (SPEC 8)
		}
		return err
	}
	mctx, stopMessenger := context.WithCancel(context.WithoutCancel(ctx))
	s.rep.msg = newMessenger(lease)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.rep.msg.run(mctx)
	}()
	defer func() {
		stopMessenger()
		<-done
	}()
	if s.cfg.WaitWhileStopped {
		if done, err := s.waitIfStopped(ctx); done {
			return err
		}
	}
	return s.attempts(ctx, stopMessenger)
}

// configure writes the settings in force into the record (source, options, stop position).
func (s *Stream) configure(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	return s.store.Configure(cctx, s.id, s.sourceJSON(), s.cfg.Options, s.stopString())
}

// attempts is Run's retry loop: it runs attempts until one ends the stream. An attempt that
// ended on purpose (the copy done, the binlog connection to take back at once) is followed by
// the next at once; a stop ends the loop, or waits for vplayer start under
// --wait-while-stopped; an error is handled by afterError. stopMessenger ends the messenger's
// writes before a terminal error's state is written.
func (s *Stream) attempts(ctx context.Context, stopMessenger func()) error {
	for {
		s.rep.verdict.Store(0)
		err := s.attempt(ctx)
		switch {
		case ctx.Err() != nil:
			return s.stopped(stopSignal)
		case errors.Is(err, applier.ErrStopPosition), errors.Is(err, applier.ErrStoppedAtDDL):
			if done, err := s.stoppedOrWait(ctx, stopReached); done {
				return err
			}
			continue
		case errors.Is(err, errStopRequested):
			if done, err := s.stoppedOrWait(ctx, stopCommand); done {
				return err
			}
			continue
		case errors.Is(err, errCopyDone):
			continue
		case errors.Is(err, errReconnectNow):
			continue // logged by owner.binlogEnded; the new connection ends the other
		}
		if done, err := s.afterError(ctx, err, stopMessenger); done {
			return err
		}
	}
}

// afterError handles the error that ended an attempt: a lost lease ends the stream with the
// loss; a fenced write's failure is asked of the record (lost, or an error of the replicated
// data); an error not reported yet is reported; a terminal one sets the workflow's state Error
// and ends the stream; any other waits --retry-delay (done false: the next attempt follows),
// unless a stop or the lease's loss comes meanwhile.
func (s *Stream) afterError(ctx context.Context, err error, stopMessenger func()) (done bool, _ error) {
	if err == nil {
		err = errors.New("stream ended unexpectedly")
	}
	if errors.Is(err, workflow.ErrLostOwnership) {
		return true, s.own.lost(err)
	}
	var fe *workflow.FenceError
	if errors.As(err, &fe) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		lerr := s.own.lease.Check(cctx)
		cancel()
		if lerr != nil {
			return true, s.own.lost(lerr)
		}
		// Still ours: the server's error was about replicated data, not the fence.
		err = fe.Err
	}
	if s.rep.verdict.Load() == 0 {
		s.rep.report(err)
	}
	if s.rep.verdict.Load() == verdictLost {
		if s.rep.lostErr != nil {
			err = s.rep.lostErr
		}
		return true, s.own.lost(err)
	}
	if s.rep.verdict.Load() == verdictTerminal {
		stopMessenger()
		s.rep.setState(workflow.StateError, terminalText(err))
		if errors.Is(err, ErrTerminal) {
			return true, err // its text begins with ErrTerminal's
		}
		return true, fmt.Errorf("%w: %w", ErrTerminal, err)
	}
	s.rep.notifyState(StateRetrying)
	switch err := s.ctl.waitRetry(ctx, s.running); {
	case errors.Is(err, errStopRequested):
		return s.stoppedOrWait(ctx, stopCommand)
	case errors.Is(err, workflow.ErrLostOwnership):
		return true, s.own.lost(err)
	case err != nil:
		return true, s.stopped(stopSignal)
	}
	return false, nil
}

// stoppedOrWait ends Run for a requested stop (done), as stopped does; with --wait-while-stopped
// it records the stop the same way and then waits for vplayer start (waitWhileStopped): done is
// false once the workflow was started again, and Run goes on with its next attempt.
func (s *Stream) stoppedOrWait(ctx context.Context, cause stopCause) (done bool, err error) {
	if err := s.stopped(cause); err != nil || !s.cfg.WaitWhileStopped {
		return true, err
	}
	return s.ctl.waitWhileStopped(ctx)
}

// waitIfStopped is --wait-while-stopped's look at the record before the first attempt: a
// workflow stopped on purpose, whose message says why (a signal leaves none), is waited on
// instead of resumed. done is set when Run must end (ctx ended, the lease was lost).
func (s *Stream) waitIfStopped(ctx context.Context) (done bool, err error) {
	var rec workflow.Record
	read := func() error {
		cctx, cancel := context.WithTimeout(ctx, setupTimeout)
		defer cancel()
		var err error
		rec, err = s.store.Get(cctx, s.cfg.Workflow)
		return err
	}
	if err := s.retry.untilReachable(ctx, "read workflow", read); err != nil {
		if ctx.Err() != nil {
			return true, nil
		}
		return true, err
	}
	if rec.State != workflow.StateStopped || rec.Message == "" {
		return false, nil
	}
	s.rep.notifyState(workflow.StateStopped)
	s.log.Info("workflow is stopped", "state", rec.State, "message", rec.Message, "pos", rec.Pos)
	return s.ctl.waitWhileStopped(ctx)
}

// stopCause is why Run ends with a requested stop.
type stopCause int

const (
	stopSignal  stopCause = iota // ctx ended: SIGINT or SIGTERM; this process sets Stopped
	stopReached                  // --stop-pos or a stop DDL: the applier set Stopped and its message
	stopCommand                  // vplayer stop set Stopped
)

// stopped ends Run for a requested stop: the record says Stopped (set here for a signal, already
// set otherwise), a State row joins the workflow's log, and one line is logged. Its round trips
// share one second, so a stop stays within SPEC's 2 s even when the target does not answer.
func (s *Stream) stopped(cause stopCause) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s.rep.notifyState(workflow.StateStopped)
	reason, msg := "vplayer stop", "Stopped by vplayer stop"
	switch cause {
	case stopSignal:
		reason, msg = "signal", "Stopped by a signal"
		if err := s.own.lease.SetState(ctx, workflow.StateStopped, ""); err != nil {
			s.log.Warn("could not record the workflow state", "state", workflow.StateStopped, "error", err)
		}
	case stopReached:
		reason, msg = "stop position", "Stopped at the stop position"
		if rec, err := s.store.Get(ctx, s.cfg.Workflow); err == nil && rec.Message != "" {
			reason, msg = rec.Message, rec.Message
		}
	}
	s.rep.addLogCtx(ctx, logTypeState, workflow.StateStopped, msg)
	s.log.Info("workflow stopped", "state", workflow.StateStopped, "reason", reason)
	return nil
}
