package stream

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/vplayer/vplayer/workflow"
)

// ErrUnreachable is wrapped by the errors of a server that cannot be reached now (refused,
// reset or timed-out connections, a server shutting down or out of connections): a retry may
// fix them, so they are retried with --retry-delay, never an exit.
var ErrUnreachable = errors.New("not reachable")

// Server error numbers that mean "not now" rather than "not this way".
const (
	erConCount          = 1040 // too many connections
	erServerShutdown    = 1053
	erConnectionKilled  = 1927 // MariaDB: connection killed
	erClientInteraction = 4031 // MySQL 8: disconnected by the server for inactivity
)

// IsUnreachable reports whether err says a server could not be reached or went away, rather
// than refusing what was asked of it: wrapping ErrUnreachable, a network error, a broken
// connection, or a server error that a later connection may not get.
func IsUnreachable(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	var me *mysql.MySQLError
	switch {
	case errors.Is(err, ErrUnreachable), errors.As(err, &ne),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, mysql.ErrInvalidConn),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, context.DeadlineExceeded):
		return true
	case errors.As(err, &me):
		switch me.Number {
		case erConCount, erServerShutdown, erConnectionKilled, erClientInteraction:
			return true
		}
	}
	return false
}

// untilReachable runs step until it returns nil or an error other than an unreachable server,
// which it returns, waiting out each unreachable error with retryWait. It returns ctx's error
// when ctx ends while waiting.
func (s *Stream) untilReachable(ctx context.Context, what string, step func() error) error {
	retried := false
	for {
		err := step()
		if err == nil && retried {
			s.notifyState(workflow.StateInit)
		}
		if !IsUnreachable(err) || ctx.Err() != nil {
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
	if s.cfg.OnError != nil {
		s.cfg.OnError(err, false)
	}
	s.notifyState(StateRetrying)
	s.log.Error(fmt.Sprintf("error in stream %s, will retry after %v: %v", s.cfg.Workflow, s.cfg.RetryDelay, err),
		"error", err.Error(), "retry_after", s.cfg.RetryDelay.String())
	t := time.NewTimer(s.cfg.RetryDelay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
