package binlog

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// TestWarnOnly_killUnknownThread: go-mysql's ERROR for a KILL of a connection the server no
// longer knows (the attempt had lost it) is passed on at Debug only; a KILL that failed for
// another reason, and go-mysql's other errors, stay ERROR; its Info lines stay dropped.
func TestWarnOnly_killUnknownThread(t *testing.T) {
	unknown := fmt.Errorf("trace: %w", &mysql.MyError{Code: mysql.ER_NO_SUCH_THREAD, State: "HY000", Message: "Unknown thread id: 42"})
	denied := &mysql.MyError{Code: mysql.ER_KILL_DENIED_ERROR, State: "HY000", Message: "You are not owner of thread 42"}
	tests := []struct {
		name  string
		level slog.Level // the inner handler's level
		log   func(*slog.Logger)
		want  string // a substring of the output, or "" for none
	}{
		{"unknown thread at info", slog.LevelInfo,
			func(l *slog.Logger) { l.Error("kill connection", slog.Any("error", unknown), slog.Int64("id", 42)) }, ""},
		{"unknown thread at debug", slog.LevelDebug,
			func(l *slog.Logger) { l.Error("kill connection", slog.Any("error", unknown), slog.Int64("id", 42)) },
			`level=DEBUG msg="kill connection: already gone" workflow=w error="trace: ERROR 1094 (HY000): Unknown thread id: 42" id=42`},
		{"kill denied", slog.LevelInfo,
			func(l *slog.Logger) { l.Error("kill connection", slog.Any("error", denied), slog.Int64("id", 42)) },
			`level=ERROR msg="kill connection"`},
		{"other error", slog.LevelInfo,
			func(l *slog.Logger) { l.Error("connection lost", slog.Any("error", errors.New("EOF"))) }, `level=ERROR msg="connection lost"`},
		{"info dropped", slog.LevelDebug,
			func(l *slog.Logger) { l.Info("kill last connection", slog.Int64("id", 42)) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			inner := slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tt.level})
			tt.log(slog.New(warnOnly{inner}).With("workflow", "w"))
			got := buf.String()
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("logged %q, want %q", got, tt.want)
			}
			if tt.want != "" && !strings.Contains(got, "workflow=w") {
				t.Errorf("logged %q without the logger's attributes", got)
			}
		})
	}
}
