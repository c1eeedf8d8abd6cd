package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/stall"
	"github.com/vplayer/vplayer/workflow"
)

// reporter tells what becomes of the stream. It owns the stream's reports and the record's
// writes that tell them: the states (Config.OnState, the record's state, the State rows of the
// workflow's log), the errors (the ERROR line, Config.OnError, the Error rows, the record's
// message through the messenger), and each error's fate (retry, terminal, the lease lost),
// decided once per attempt with the clock of --max-time-to-retry-on-error. Its record writes go
// through the owner's lease, which fences them: a process that lost the workflow writes
// nothing. Made by New; own is set by prepare, msg by Run once the lease is held.
type reporter struct {
	workflow   string
	retryDelay time.Duration // --retry-delay, named in the ERROR line of a retried error
	maxRetry   time.Duration // --max-time-to-retry-on-error; 0: no limit
	onState    func(string)  // Config.OnState, may be nil
	onError    func(error, bool)
	log        *slog.Logger
	own        *owner
	msg        *messenger

	// verdict is the current attempt's reported error's fate: 0 not reported yet, verdictRetry,
	// verdictTerminal or verdictLost. It is decided once, in report, so the log line, OnError and
	// the retry loop never disagree when --max-time-to-retry-on-error runs out between two looks.
	verdict atomic.Int32
	// lostErr is the loss found when a terminal error was about to be reported; written by
	// report, read by the retry loop once the attempt's goroutines have returned.
	lostErr error

	errMu    sync.Mutex
	errKey   string    // kind of the last error, for --max-time-to-retry-on-error
	errSince time.Time // when that kind of error was first seen
}

func newReporter(cfg Config) *reporter {
	return &reporter{workflow: cfg.Workflow, retryDelay: cfg.RetryDelay, maxRetry: cfg.MaxTimeToRetryOnError,
		onState: cfg.OnState, onError: cfg.OnError, log: cfg.Logger}
}

// notifyState tells Config.OnState the stream's state.
func (r *reporter) notifyState(state string) {
	if r.onState != nil {
		r.onState(state)
	}
}

// setState and addLog write the record over the pool with a bounded wait: the record
// row may be locked, and the error path must not hang behind it.
func (r *reporter) setState(state, msg string) {
	r.notifyState(state)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := r.own.lease.SetState(ctx, state, msg); err != nil {
		r.log.Warn("could not record the workflow state", "state", state, "error", err)
	}
}

// Types of vreplication_log rows: a stream error, and a change of the workflow's state.
const (
	logTypeError = "Error"
	logTypeState = "State"
)

func (r *reporter) addLog(typ, state, msg string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	r.addLogCtx(ctx, typ, state, msg)
}

// addStateLog adds the State row of a change already recorded in the record. A stop that lands
// between the two writes must not leave the change out of the history, so the row's write
// outlives ctx's cancellation, within half a second of its own: a stop still ends within SPEC's
// 2 s when the target does not answer.
func (r *reporter) addStateLog(ctx context.Context, state, msg string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stateLogTimeout)
	defer cancel()
	r.addLogCtx(ctx, logTypeState, state, msg)
}

const stateLogTimeout = 500 * time.Millisecond

func (r *reporter) addLogCtx(ctx context.Context, typ, state, msg string) {
	if err := r.own.lease.AddLog(ctx, typ, state, msg); errors.Is(err, workflow.ErrLostOwnership) {
		return // fenced: a process that lost the workflow writes nothing in its history
	} else if err != nil {
		r.log.Warn("could not add to the workflow log", "error", err)
	}
}

// retrying reports an error that is retried after --retry-delay without an attempt's verdict
// (an unreachable server before anything runs): the ERROR line, Config.OnError (not terminal)
// and the Retrying state, for metrics and /healthz.
func (r *reporter) retrying(err error) {
	if r.onError != nil {
		r.onError(err, false)
	}
	r.notifyState(StateRetrying)
	r.log.Error(fmt.Sprintf("error in stream %s, will retry after %v: %v", r.workflow, r.retryDelay, err),
		"error", err.Error(), "retry_after", r.retryDelay.String())
}

// report handles a stream error the moment it happens, before the pipeline is torn down: the
// ERROR log line, a vreplication_log row, and the message handed to the messenger (the record's
// row may be locked). Killing the applier's statement follows, as the pipeline unwinds.
func (r *reporter) report(err error) {
	if errors.Is(err, workflow.ErrLostOwnership) {
		r.verdict.Store(verdictLost) // Run logs it as the loss it is
		return
	}
	terminal := r.terminal(err)
	if terminal {
		if lerr := r.own.lostNow(context.Background()); lerr != nil {
			r.lostErr = lerr
			r.verdict.Store(verdictLost)
			return
		}
		r.verdict.Store(verdictTerminal)
	} else {
		r.verdict.Store(verdictRetry)
	}
	if r.onError != nil {
		r.onError(err, terminal)
	}
	if terminal {
		text := terminalText(err)
		r.log.Error(fmt.Sprintf("error in stream %s, not retrying: %s", r.workflow, text), "error", err.Error(), "terminal", true)
		r.addLog(logTypeError, workflow.StateError, text)
		return
	}
	r.log.Error(fmt.Sprintf("error in stream %s, will retry after %v: %v", r.workflow, r.retryDelay, err),
		"error", err.Error(), "retry_after", r.retryDelay.String())
	r.addLog(logTypeError, workflow.StateRunning, err.Error())
	r.msg.set(err.Error())
}

// resetErrorClock forgets the kind of the last error, so that the next one starts
// --max-time-to-retry-on-error's clock: the stream made progress since.
func (r *reporter) resetErrorClock() {
	r.errMu.Lock()
	r.errKey = ""
	r.errMu.Unlock()
}

// attemptEnded restarts the error clock after an attempt that made progress and ended without
// an error of its own (the copy phase done, a stop position reached): the next attempt's first
// error is then weighed as a first, as it is after an attempt that failed once it had made
// progress (see resetErrorClock's caller in attempt). Without it, a source's refusal (1236) met
// before a whole copy phase and another met right after it counted as one refusal met twice,
// which is terminal.
func (r *reporter) attemptEnded(reported error, progressed bool) {
	if reported == nil && progressed {
		r.resetErrorClock()
	}
}

const (
	verdictRetry    = 1
	verdictTerminal = 2
	verdictLost     = 3 // the lease was lost: the error is reported as that, see owner.lostNow
)

// terminal reports whether err must not be retried: a MySQL error that a retry cannot fix, or
// the same kind of error for longer than --max-time-to-retry-on-error.
func (r *reporter) terminal(err error) bool {
	if isTerminal(err) && !binlog.IsTerminal(err) {
		return true
	}
	key := errorKey(err)
	now := time.Now()
	r.errMu.Lock()
	defer r.errMu.Unlock()
	repeated := key == r.errKey
	if !repeated {
		r.errKey, r.errSince = key, now
	}
	// The source's refusal to serve the position (1236) is terminal when the next attempt meets
	// it again: one retry, for a server that refuses a replica spuriously (Dolt does, while two
	// of its GTID sets disagree for an instant); a purged position fails both.
	if binlog.IsTerminal(err) {
		return repeated
	}
	return r.maxRetry > 0 && now.Sub(r.errSince) > r.maxRetry
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
