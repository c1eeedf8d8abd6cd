package binlog

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

func TestIsTerminal(t *testing.T) {
	purged := &mysql.MyError{Code: mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, State: "HY000",
		Message: "Could not find GTID state requested by slave in any binlog files. Probably the slave state is too old and required binlog files have been purged."}
	replaced := &mysql.MyError{Code: mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, State: "HY000",
		Message: "A slave with the same server_uuid/server_id as this slave has connected to the master"}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"purged, wrapped", fmt.Errorf("read binlog event: %w", purged), true},
		{"replaced by the same server id", fmt.Errorf("read binlog event: %w", replaced), false},
		{"other server error", &mysql.MyError{Code: mysql.ER_ACCESS_DENIED_ERROR}, false},
		{"connection", errors.New("connection refused"), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsTerminal(tt.err); got != tt.want {
				t.Errorf("IsTerminal(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestIsReplaced(t *testing.T) {
	mariadb := &mysql.MyError{Code: 4052, State: "HY000",
		Message: "A slave with the same server_uuid/server_id is already connected; the first event '.' at 0, the last event read from 'binlog.000001' at 706, the last byte read from 'binlog.000001' at 832."}
	mysql56 := &mysql.MyError{Code: mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, State: "HY000",
		Message: "A slave with the same server_uuid/server_id as this slave has connected to the master"}
	purged := &mysql.MyError{Code: mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, State: "HY000",
		Message: "Could not find GTID state requested by slave in any binlog files."}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"mariadb 4052, wrapped", fmt.Errorf("read binlog event: %w", mariadb), true},
		{"mysql 1236 same server id", fmt.Errorf("read binlog event: %w", mysql56), true},
		{"purged", purged, false},
		{"connection lost", fmt.Errorf("read binlog event: %w", mysql.ErrBadConn), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsReplaced(tt.err); got != tt.want {
				t.Errorf("IsReplaced(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestCheckHistory(t *testing.T) {
	tests := []struct {
		name    string
		pos     string
		history string
		missing string // "" when the position is in the history; else a substring of the error
	}{
		{"mariadb same server", "MariaDB/0-1-100", "0-1-150", ""},
		{"mariadb equal", "MariaDB/0-1-100,1-2-5", "1-2-5,0-1-100", ""},
		{"mariadb replica after promotion", "MariaDB/0-1-100", "0-1-120,0-2-130", ""},
		{"mariadb empty position", "MariaDB/", "", ""},
		{"mariadb seq ahead", "MariaDB/0-1-100", "0-1-40", "it ends at 0-1-40, before the recorded 0-1-100"},
		{"mariadb server missing", "MariaDB/0-1-100", "0-2-300", "server 1 never logged in domain 0 (recorded 0-1-100)"},
		{"mariadb domain missing", "MariaDB/0-1-100,1-1-3", "0-1-100", "domain 1 (recorded 1-1-3) is not in it"},
		{"mariadb empty source", "MariaDB/0-1-100", "", "domain 0 (recorded 0-1-100) is not in it"},
		{"mysql subset", "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-100", "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-200,\n4e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", ""},
		{"mysql not subset", "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-100", "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-50", "is not a subset of the source's gtid_executed"},
		{"file present", "FilePos/binlog.000003:1234", "binlog.000002,binlog.000003", ""},
		{"file purged", "FilePos/binlog.000001:1234", "binlog.000002,binlog.000003", "binary log file binlog.000001 is not on the source"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pos, err := ParsePosition(tt.pos, "")
			if err != nil {
				t.Fatal(err)
			}
			err = CheckHistory(pos, tt.history)
			switch {
			case tt.missing == "" && err != nil:
				t.Errorf("CheckHistory(%s, %q) = %v, want nil", tt.pos, tt.history, err)
			case tt.missing != "" && (!errors.Is(err, ErrNotInHistory) || !strings.Contains(err.Error(), tt.missing)):
				t.Errorf("CheckHistory(%s, %q) = %v, want ErrNotInHistory saying %q", tt.pos, tt.history, err, tt.missing)
			}
		})
	}
}
