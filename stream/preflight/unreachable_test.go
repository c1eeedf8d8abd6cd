package preflight

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// TestIsUnreachable: a server that cannot be reached or went away is retried; a server that
// answers with a refusal of what was asked (access denied, an unknown database) is not.
func TestIsUnreachable(t *testing.T) {
	dns := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "db"}}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"refused dial, wrapped", fmt.Errorf("acquire workflow 1: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), true},
		{"dns", dns, true},
		{"bad connection", driver.ErrBadConn, true},
		{"invalid connection", fmt.Errorf("x: %w", mysql.ErrInvalidConn), true},
		{"unexpected EOF", io.ErrUnexpectedEOF, true},
		{"timeout", context.DeadlineExceeded, true},
		{"too many connections", &mysql.MySQLError{Number: 1040}, true},
		{"shutdown in progress", &mysql.MySQLError{Number: 1053}, true},
		{"sentinel", fmt.Errorf("target %w: x", ErrUnreachable), true},
		{"access denied", &mysql.MySQLError{Number: 1045, Message: "Access denied"}, false},
		{"unknown database", &mysql.MySQLError{Number: 1049}, false},
		{"other", errors.New("binlog_format is STATEMENT"), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsUnreachable(tt.err); got != tt.want {
				t.Errorf("IsUnreachable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
