package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vplayer/vplayer/workflow"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// statusNow is the fixed clock of the status golden files.
var statusNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) int64 { return statusNow.Add(-d).Unix() }

var statusCases = []struct {
	name string
	recs []workflow.Record
}{
	{"empty", nil},
	{"caught_up", []workflow.Record{{
		ID: 1, Workflow: "orders", State: workflow.StateRunning, Pos: "MariaDB/0-1-1234",
		DBName: "shop", TimeUpdated: at(time.Second), TransactionTimestamp: at(2 * time.Hour), TimeHeartbeat: at(time.Second),
		Source:  `{"address":"source.db:3306","user":"repl","flavor":"mariadb","database":"shop","tables":null}`,
		Options: `{"on_ddl":"ignore","vplayer_progress_deadline":"5m0s"}`,
	}}},
	{"fleet", []workflow.Record{
		{
			ID: 1, Workflow: "orders", State: workflow.StateRunning, Pos: "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-100,5f1c3a8e-0b7e-11ef-a3a5-0242ac120002:1-98765",
			DBName: "shop", TimeUpdated: at(3 * time.Second), TransactionTimestamp: at(75 * time.Second), TimeHeartbeat: at(10 * time.Minute),
			Source: `{"address":"source.db:3306"}`, Options: `{}`,
		},
		{
			ID: 2, Workflow: "customers", State: workflow.StateRunning, Pos: "FilePos/binlog.000003:1234",
			DBName: "crm", TimeUpdated: at(5*time.Minute + 2*time.Second), TransactionTimestamp: at(5*time.Minute + 4*time.Second),
			Message: "relay log I/O stalled: progress stalled; vplayer was unable to replicate the transaction in a timely manner;\nexamine the target; applier busy for 5m2s in UPDATE `crm`.`customers`",
			Source:  `{"address":"source.db:3306"}`, Options: `{}`,
		},
		{
			ID: 3, Workflow: "ledger", State: workflow.StateError, Pos: "MariaDB/0-1-7",
			DBName: "ledger", TimeUpdated: at(50 * time.Hour), TransactionTimestamp: at(51 * time.Hour),
			Message: "terminal error: apply INSERT `ledger`.`entries`: Error 1062 (23000): Duplicate entry '42' for key 'PRIMARY'",
			Source:  `not json`, Options: ``,
		},
		{ID: 4, Workflow: "fresh", State: workflow.StateInit, Pos: "MariaDB/0-1-1", DBName: "fresh", TimeUpdated: at(0)},
		{
			ID: 5, Workflow: "archive", State: workflow.StateStopped, Pos: "MariaDB/0-1-99", StopPos: "MariaDB/0-1-99",
			DBName: "archive", TimeUpdated: at(time.Hour), TransactionTimestamp: at(time.Hour + time.Minute),
			Message: "Stopped at position MariaDB/0-1-99", Source: `{}`, Options: `{}`,
		},
		{ID: 6, Workflow: "skewed", State: workflow.StateRunning, Pos: "MariaDB/0-1-5", DBName: "x",
			TimeUpdated: at(-2 * time.Second), TransactionTimestamp: at(-3 * time.Second)},
	}},
}

// golden compares got with testdata/status/<case>/<file>, or rewrites it with -update.
func golden(t *testing.T, name, file string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "status", name, file)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run go test -update after checking the change):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestRenderStatus_golden(t *testing.T) {
	for _, tc := range statusCases {
		t.Run(tc.name, func(t *testing.T) {
			var table, js bytes.Buffer
			if err := renderStatusTable(&table, tc.recs, statusNow); err != nil {
				t.Fatal(err)
			}
			if err := renderStatusJSON(&js, tc.recs, statusNow); err != nil {
				t.Fatal(err)
			}
			if !json.Valid(js.Bytes()) {
				t.Errorf("status JSON is not valid: %s", js.String())
			}
			golden(t, tc.name, "table.golden", table.Bytes())
			golden(t, tc.name, "json.golden", js.Bytes())
		})
	}
}

func TestAbbreviate(t *testing.T) {
	tests := []struct {
		in    string
		width int
		want  string
	}{
		{"MariaDB/0-1-100", 40, "MariaDB/0-1-100"},
		{"abcdefghij", 10, "abcdefghij"},
		{"abcdefghijk", 10, "abc...hijk"},
		{"MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-100", 40, "MySQL56/3e11fa47-7...-c80aa9429562:1-100"},
	}
	for _, tt := range tests {
		got := abbreviate(tt.in, tt.width)
		if got != tt.want || len(got) > tt.width {
			t.Errorf("abbreviate(%q, %d)=%q, want %q", tt.in, tt.width, got, tt.want)
		}
	}
}

func TestFormatSeconds(t *testing.T) {
	for _, tt := range []struct {
		s    int64
		want string
	}{{0, "0s"}, {59, "59s"}, {60, "1m00s"}, {302, "5m02s"}, {3600, "1h00m"}, {47*3600 + 59*60, "47h59m"}, {49 * 3600, "2d01h"}} {
		if got := formatSeconds(tt.s); got != tt.want {
			t.Errorf("formatSeconds(%d)=%q, want %q", tt.s, got, tt.want)
		}
	}
}

func TestWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, terminal := range []bool{false, true} {
			var out syncBuf
			n := 0
			show := func(_ context.Context, w io.Writer) error {
				n++
				_, err := io.WriteString(w, "frame\n")
				return err
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- watch(ctx, &out, terminal, time.Second, show) }()
			time.Sleep(2500 * time.Millisecond)
			synctest.Wait()
			cancel()
			if err := <-done; err != nil {
				t.Errorf("watch after interrupt: %v, want nil", err)
			}
			if n != 3 {
				t.Errorf("terminal=%v: %d refreshes in 2.5s, want 3 (at 0s, 1s, 2s)", terminal, n)
			}
			want := "frame\n\nframe\n\nframe\n"
			if terminal {
				want = strings.Repeat(clearScreen+"frame\n", 3)
			}
			if got := out.String(); got != want {
				t.Errorf("terminal=%v: output %q, want %q", terminal, got, want)
			}
		}
	})
}
