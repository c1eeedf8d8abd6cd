package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/workflow"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// statusNow is the fixed clock of the status golden files; the target's clock is 200 ms ahead.
var (
	statusNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	targetNow = statusNow.Add(200 * time.Millisecond)
)

func at(d time.Duration) int64 { return statusNow.Add(-d).Unix() }

func mustPos(t *testing.T, s string) binlog.Position {
	t.Helper()
	p, err := binlog.ParsePosition(s, "")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// statusCases are the golden files' reports, built at statusNow.
func statusCases(t *testing.T) []struct {
	name string
	rep  *statusReport
} {
	mariaSource := &sourceState{Address: "source.db:3306", Flavor: "mariadb", GTID: mustPos(t, "MariaDB/0-1-1300,1-2-50"),
		Logs: []binlogFile{{"binlog.000001", 1000}, {"binlog.000002", 5000}, {"binlog.000003", 1234}}}
	mysqlSource := &sourceState{Address: "source.db:3306", Flavor: "mysql",
		GTID: mustPos(t, "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-100,5f1c3a8e-0b7e-11ef-a3a5-0242ac120002:1-99000"),
		Logs: []binlogFile{{"binlog.000003", 4000}, {"binlog.000004", 1 << 20}}}
	lease := func(owner string, epoch uint64, in time.Duration) *workflow.Details {
		return &workflow.Details{HasLease: true, HasThrottle: true, HasPause: true, Owner: owner, Epoch: epoch, LeaseUntil: targetNow.Add(in)}
	}
	throttled := lease("db-2:4242:9f3a1c22", 7, 8*time.Second)
	throttled.ThrottleForever, throttled.ThrottleReason = true, "nightly batch"
	paused := lease("db-1:77:0badc0de", 3, 6*time.Second)
	paused.Pause, paused.PauseUntil = "held", targetNow.Add(25*time.Second)
	paused.ThrottleUntil, paused.ThrottleReason = targetNow.Add(90*time.Second), "index build"
	copying := &workflow.CopyProgress{Tables: []workflow.TableCopy{
		{Table: "customers", Rows: 5000, Estimated: 4800, Chunks: 5, Done: true, StartedAt: at(30 * time.Second), UpdatedAt: at(20 * time.Second)},
		{Table: "orders", Rows: 2000, Estimated: 10000, Chunks: 2, StartedAt: at(20 * time.Second), UpdatedAt: at(10 * time.Second),
			DeferredKeys: []string{"KEY `k` (`customer_id`)"}},
		{Table: "zeta", Estimated: 7},
	}}
	copyDone := &workflow.CopyProgress{Tables: []workflow.TableCopy{
		{Table: "orders", Rows: 10, Estimated: 12, Chunks: 1, Done: true, StartedAt: at(time.Hour), UpdatedAt: at(time.Hour)},
	}}
	none := &workflow.CopyProgress{}
	src := func(r workflow.Record, s *sourceState) backlog { return backlogOf(r, s, false) }

	orders := workflow.Record{ID: 1, Workflow: "orders", State: workflow.StateRunning, Pos: "MariaDB/0-1-1300,1-2-50",
		DBName: "shop", TimeUpdated: at(time.Second), TransactionTimestamp: at(2 * time.Hour), TimeHeartbeat: at(time.Second),
		Source:  `{"address":"source.db:3306","user":"repl","flavor":"mariadb","database":"shop","tables":null}`,
		Options: `{"on_ddl":"ignore","vplayer_progress_deadline":"5m0s"}`}
	fleet := []workflowStatus{
		{Rec: workflow.Record{ID: 1, Workflow: "orders", State: workflow.StateRunning,
			Pos:    "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-100,5f1c3a8e-0b7e-11ef-a3a5-0242ac120002:1-98765",
			DBName: "shop", TimeUpdated: at(3 * time.Second), TransactionTimestamp: at(75 * time.Second), TimeHeartbeat: at(10 * time.Minute),
			Source: `{"address":"source.db:3306","flavor":"mysql","database":"shop","tables":["orders","/^order_/"]}`, Options: `{}`},
			Details: throttled, Copy: copyDone},
		{Rec: workflow.Record{ID: 2, Workflow: "customers", State: workflow.StateRunning, Pos: "FilePos/binlog.000003:1234",
			DBName: "crm", TimeUpdated: at(5*time.Minute + 2*time.Second), TransactionTimestamp: at(5*time.Minute + 4*time.Second),
			Message: "relay log I/O stalled: progress stalled; vplayer was unable to replicate the transaction in a timely manner;\nexamine the target; applier busy for 5m2s in UPDATE `crm`.`customers`",
			Source:  `{"address":"source.db:3306"}`, Options: `{}`},
			Details: paused, Copy: none},
		{Rec: workflow.Record{ID: 3, Workflow: "ledger", State: workflow.StateError, Pos: "MariaDB/0-1-7",
			DBName: "ledger", TimeUpdated: at(50 * time.Hour), TransactionTimestamp: at(51 * time.Hour),
			Message: "terminal error: apply INSERT `ledger`.`entries`: Error 1062 (23000): Duplicate entry '42' for key 'PRIMARY'",
			Source:  `not json`, Options: ``},
			Details: &workflow.Details{HasLease: true, HasThrottle: true, HasPause: true, Owner: "db-9:1:aa", Epoch: 12, LeaseUntil: targetNow.Add(-time.Hour)},
			Copy:    none, Logs: []workflow.LogRow{
				{ID: 40, Type: "State", State: "Running", Message: "Running at MariaDB/0-1-5, was Init", Count: 1, CreatedAt: at(52 * time.Hour), UpdatedAt: at(52 * time.Hour)},
				{ID: 41, Type: "Error", State: "Error", Message: "terminal error: apply INSERT `ledger`.`entries`:\nDuplicate entry", Count: 3, CreatedAt: at(51 * time.Hour), UpdatedAt: at(50 * time.Hour)},
			}},
		{Rec: workflow.Record{ID: 4, Workflow: "fresh", State: workflow.StateCopying, Pos: "MariaDB/0-1-1", DBName: "fresh", TimeUpdated: at(0),
			Source: `{"address":"other.db:3306","database":"fresh"}`},
			Details: lease("db-1:77:0badc0de", 1, 9*time.Second), Copy: copying, LogsReason: "unknown: the sidecar has no vreplication_log table"},
		{Rec: workflow.Record{ID: 5, Workflow: "archive", State: workflow.StateStopped, Pos: "MariaDB/0-1-99", StopPos: "MariaDB/0-1-99",
			DBName: "archive", TimeUpdated: at(time.Hour), TransactionTimestamp: at(time.Hour + time.Minute),
			Message: "Stopped at position MariaDB/0-1-99", Source: `{}`, Options: `{}`},
			Details: &workflow.Details{HasLease: true, HasThrottle: true, HasPause: true, Epoch: 4}, Copy: &workflow.CopyProgress{ToPlan: true}},
		{Rec: workflow.Record{ID: 6, Workflow: "skewed", State: workflow.StateRunning, Pos: "MariaDB/0-1-5", DBName: "x",
			TimeUpdated: at(-2 * time.Second), TransactionTimestamp: at(-3 * time.Second)},
			DetailsReason: "not read: the record was created after the look", CopyReason: "unknown: the sidecar has no copy_state table (an older vplayer's)"},
		{Rec: workflow.Record{ID: 7, Workflow: "old", State: workflow.StateRunning, Pos: "MariaDB/0-1-1200", DBName: "old",
			TimeUpdated: at(time.Second), TransactionTimestamp: at(4 * time.Second)},
			Details: &workflow.Details{}, CopyReason: "unknown: the sidecar has no copy_state table (an older vplayer's)"},
	}
	withSource := func(list []workflowStatus, s *sourceState) []workflowStatus {
		out := slices.Clone(list)
		for i := range out {
			out[i].Backlog = src(out[i].Rec, s)
		}
		return out
	}
	fleetMySQL := withSource(fleet, mysqlSource)
	fleetMaria := withSource(fleet, mariaSource)
	return []struct {
		name string
		rep  *statusReport
	}{
		{"empty", &statusReport{Now: statusNow, TargetNow: targetNow}},
		{"caught_up", &statusReport{Now: statusNow, TargetNow: targetNow, Source: mariaSource, Workflows: []workflowStatus{{
			Rec: orders, Details: lease("db-1:77:0badc0de", 4, 9*time.Second), Copy: copyDone, Backlog: src(orders, mariaSource)}}}},
		{"fleet", &statusReport{Now: statusNow, TargetNow: targetNow, Workflows: withSource(fleet, nil), LogsAsked: 2}},
		{"fleet_mysql_source", &statusReport{Now: statusNow, TargetNow: targetNow, Source: mysqlSource, Workflows: fleetMySQL}},
		{"fleet_mariadb_source", &statusReport{Now: statusNow, TargetNow: targetNow, Source: mariaSource, Workflows: fleetMaria, LogsAsked: 2}},
		{"source_unreachable", &statusReport{Now: statusNow, Source: &sourceState{Address: "source.db:3306", Err: errors.New("connect to source: dial tcp: connection refused")},
			Workflows: withSource(fleet[:1], &sourceState{Address: "source.db:3306", Err: errors.New("connect to source: dial tcp: connection refused")})}},
	}
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
	for _, tc := range statusCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			var table, detail, js bytes.Buffer
			if err := renderStatusTable(&table, tc.rep); err != nil {
				t.Fatal(err)
			}
			if err := renderStatusDetail(&detail, tc.rep); err != nil {
				t.Fatal(err)
			}
			if err := renderStatusJSON(&js, tc.rep); err != nil {
				t.Fatal(err)
			}
			if !json.Valid(js.Bytes()) {
				t.Errorf("status JSON is not valid: %s", js.String())
			}
			golden(t, tc.name, "table.golden", table.Bytes())
			golden(t, tc.name, "detail.golden", detail.Bytes())
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
