package preflight

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"

	"github.com/go-sql-driver/mysql"
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
