package snapshot

import (
	"database/sql/driver"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// TestBinlogStatus: SHOW BINARY LOG STATUS is asked only when the server refuses SHOW MASTER
// STATUS as a statement it does not know (MySQL 8.4); any other failure is the answer, naming
// the statement.
func TestBinlogStatus(t *testing.T) {
	parseError := &mysql.MySQLError{Number: 1064, Message: "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near 'MASTER STATUS' at line 1"}
	denied := &mysql.MySQLError{Number: 1227, Message: "Access denied; you need (at least one of) the SUPER, REPLICATION CLIENT privilege(s) for this operation"}
	tests := []struct {
		name      string
		answers   map[string]error // a statement's error; absent: it succeeds
		wantAsked []string
		wantErr   []string // what the error says; none: no error
		wantIs    error
	}{
		{
			name:      "MariaDB, MySQL before 8.4",
			wantAsked: []string{showMasterStatus},
		},
		{
			name:      "MySQL 8.4",
			answers:   map[string]error{showMasterStatus: parseError},
			wantAsked: []string{showMasterStatus, showBinaryLogStatus},
		},
		{
			name:      "privilege missing",
			answers:   map[string]error{showMasterStatus: denied},
			wantAsked: []string{showMasterStatus},
			wantErr:   []string{"SHOW MASTER STATUS: Error 1227"},
			wantIs:    denied,
		},
		{
			name:      "connection lost",
			answers:   map[string]error{showMasterStatus: driver.ErrBadConn},
			wantAsked: []string{showMasterStatus},
			wantErr:   []string{"SHOW MASTER STATUS: driver: bad connection"},
			wantIs:    driver.ErrBadConn,
		},
		{
			name:      "MySQL 8.4, privilege missing",
			answers:   map[string]error{showMasterStatus: parseError, showBinaryLogStatus: denied},
			wantAsked: []string{showMasterStatus, showBinaryLogStatus},
			wantErr:   []string{"SHOW MASTER STATUS: Error 1064", "SHOW BINARY LOG STATUS: Error 1227"},
			wantIs:    denied,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var asked []string
			got, err := binlogStatus(func(stmt string) (string, error) {
				asked = append(asked, stmt)
				if err := tt.answers[stmt]; err != nil {
					return "", err
				}
				return stmt, nil
			})
			if !slices.Equal(asked, tt.wantAsked) {
				t.Errorf("asked %q, want %q", asked, tt.wantAsked)
			}
			if len(tt.wantErr) == 0 {
				if err != nil || got != tt.wantAsked[len(tt.wantAsked)-1] {
					t.Errorf("binlogStatus() = %q, %v; want %q's answer", got, err, tt.wantAsked[len(tt.wantAsked)-1])
				}
				return
			}
			if err == nil {
				t.Fatalf("binlogStatus() = %q, want an error", got)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q, want it to say %q", err, want)
				}
			}
			if !errors.Is(err, tt.wantIs) {
				t.Errorf("error %q does not wrap %v", err, tt.wantIs)
			}
		})
	}
}
