package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/stall"
	"github.com/vplayer/vplayer/workflow"
)

// report handles a stream error the moment it happens, before the pipeline is torn down: the
// ERROR log line, a vreplication_log row, and the message handed to the messenger (the record's
// row may be locked). Killing the applier's statement follows, as the pipeline unwinds.
func (s *Stream) report(err error) {
	if errors.Is(err, workflow.ErrLostOwnership) {
		s.verdict.Store(verdictLost) // Run logs it as the loss it is
		return
	}
	terminal := s.terminal(err)
	if terminal {
		if lerr := s.own.lostNow(context.Background()); lerr != nil {
			s.lostErr = lerr
			s.verdict.Store(verdictLost)
			return
		}
		s.verdict.Store(verdictTerminal)
	} else {
		s.verdict.Store(verdictRetry)
	}
	if s.cfg.OnError != nil {
		s.cfg.OnError(err, terminal)
	}
	if terminal {
		text := terminalText(err)
		s.log.Error(fmt.Sprintf("error in stream %s, not retrying: %s", s.cfg.Workflow, text), "error", err.Error(), "terminal", true)
		s.addLog(logTypeError, workflow.StateError, text)
		return
	}
	s.log.Error(fmt.Sprintf("error in stream %s, will retry after %v: %v", s.cfg.Workflow, s.cfg.RetryDelay, err),
		"error", err.Error(), "retry_after", s.cfg.RetryDelay.String())
	s.addLog(logTypeError, workflow.StateRunning, err.Error())
	s.msg.set(err.Error())
}

// resetErrorClock forgets the kind of the last error, so that the next one starts
// --max-time-to-retry-on-error's clock: the stream made progress since.
func (s *Stream) resetErrorClock() {
	s.errMu.Lock()
	s.errKey = ""
	s.errMu.Unlock()
}

// attemptEnded restarts the error clock after an attempt that made progress and ended without
// an error of its own (the copy phase done, a stop position reached): the next attempt's first
// error is then weighed as a first, as it is after an attempt that failed once it had made
// progress (see resetErrorClock's caller in attempt). Without it, a source's refusal (1236) met
// before a whole copy phase and another met right after it counted as one refusal met twice,
// which is terminal.
func (s *Stream) attemptEnded(reported error, progressed bool) {
	if reported == nil && progressed {
		s.resetErrorClock()
	}
}

const (
	verdictRetry    = 1
	verdictTerminal = 2
	verdictLost     = 3 // the lease was lost: the error is reported as that, see owner.lostNow
)

// terminal reports whether err must not be retried: a MySQL error that a retry cannot fix, or
// the same kind of error for longer than --max-time-to-retry-on-error.
func (s *Stream) terminal(err error) bool {
	if isTerminal(err) && !binlog.IsTerminal(err) {
		return true
	}
	key := errorKey(err)
	now := time.Now()
	s.errMu.Lock()
	defer s.errMu.Unlock()
	repeated := key == s.errKey
	if !repeated {
		s.errKey, s.errSince = key, now
	}
	// The source's refusal to serve the position (1236) is terminal when the next attempt meets
	// it again: one retry, for a server that refuses a replica spuriously (Dolt does, while two
	// of its GTID sets disagree for an instant); a purged position fails both.
	if binlog.IsTerminal(err) {
		return repeated
	}
	return s.cfg.MaxTimeToRetryOnError > 0 && now.Sub(s.errSince) > s.cfg.MaxTimeToRetryOnError
}

// errorKey identifies an error's kind for --max-time-to-retry-on-error: a stall by its detector
// (its cause and the statement it names vary from one occurrence to the next), any other error by
// its text without the numbers (durations, positions) that change each time.
func errorKey(err error) string {
	var se *stall.Error
	if errors.As(err, &se) {
		return "stall: " + string(se.Detector)
	}
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return -1
		}
		return r
	}, err.Error())
}
