package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/vplayer/vplayer/internal/cli"
	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
	"github.com/vplayer/vplayer/workflow"
)

// fixture is a target with two workflow records in a sidecar database of the test's own.
type fixture struct {
	dsn     string // the target, root without a password
	sidecar string
	store   *workflow.Store
	orders  workflow.Record
	other   workflow.Record
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	_, target := mysqltest.Pair(t)
	sidecar := mysqltest.DBName(t) + "_vt"
	if len(sidecar) > 64 {
		t.Fatalf("sidecar name %q is longer than 64 characters: shorten the test name", sidecar)
	}
	db := mysqltest.DB(t, target, sidecar)
	store := workflow.New(db, sidecar)
	if err := store.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	create := func(name, pos string) workflow.Record {
		r, created, err := store.Create(t.Context(), workflow.Record{
			Workflow: name,
			Source:   `{"address":"127.0.0.1:3306","user":"repl","database":"shop"}`,
			Pos:      pos,
			DBName:   "shop_copy",
			Options:  `{"on_ddl":"ignore"}`,
		})
		if err != nil || !created {
			t.Fatalf("Create(%s)=created %v, %v, want created", name, created, err)
		}
		return r
	}
	f := fixture{dsn: target.DSN(""), sidecar: sidecar, store: store}
	f.orders = create("orders", "MariaDB/0-1-100")
	f.other = create("customers", "MariaDB/0-1-7")
	if err := store.SetMessage(t.Context(), f.other.ID, "error in stream:\n\"quoted\" and \\ back"); err != nil {
		t.Fatal(err)
	}
	return f
}

// statusEntry is the part of a status --json workflow that the tests read.
type statusEntry struct {
	ID       int64          `json:"id"`
	Workflow string         `json:"workflow"`
	State    string         `json:"state"`
	Healthy  bool           `json:"healthy"`
	Message  string         `json:"message"`
	Pos      string         `json:"pos"`
	DBName   string         `json:"db_name"`
	Source   map[string]any `json:"source"`
	Options  map[string]any `json:"options"`
	Backlog  struct {
		Known         bool   `json:"known"`
		UnknownReason string `json:"unknown_reason"`
	} `json:"backlog"`
	Lease struct {
		Known bool   `json:"known"`
		Owner string `json:"owner"`
		Live  bool   `json:"live"`
	} `json:"lease"`
	Log *struct {
		Known bool `json:"known"`
		Rows  []struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"rows"`
	} `json:"log"`
}

// statusDoc is the part of the status --json document that the tests read.
type statusDoc struct {
	SchemaVersion int             `json:"schema_version"`
	Source        *map[string]any `json:"source"`
	Workflows     []statusEntry   `json:"workflows"`
}

func parseStatus(t *testing.T, out string) statusDoc {
	t.Helper()
	var d statusDoc
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("status --json printed invalid JSON %q: %v", out, err)
	}
	if d.SchemaVersion != 1 {
		t.Errorf("schema_version=%d, want 1", d.SchemaVersion)
	}
	return d
}

func TestStatus_json(t *testing.T) {
	f := newFixture(t)
	r := runMain(t, "status", "--target", f.dsn, "--sidecar-db", f.sidecar, "--json")
	if r.code != cli.ExitOK {
		t.Fatalf("status --json: %v, want exit 0", r)
	}
	got := parseStatus(t, r.stdout).Workflows
	if len(got) != 2 {
		t.Fatalf("status --json listed %d workflows, want 2: %q", len(got), r.stdout)
	}
	want := []statusEntry{
		{ID: f.orders.ID, Workflow: "orders", State: workflow.StateInit, Pos: "MariaDB/0-1-100", DBName: "shop_copy"},
		{ID: f.other.ID, Workflow: "customers", State: workflow.StateInit, Pos: "MariaDB/0-1-7", DBName: "shop_copy",
			Message: "error in stream:\n\"quoted\" and \\ back"},
	}
	for i, w := range want {
		g := got[i]
		if g.ID != w.ID || g.Workflow != w.Workflow || g.State != w.State || g.Pos != w.Pos || g.DBName != w.DBName || g.Message != w.Message || !g.Healthy {
			t.Errorf("status --json [%d]=%+v, want %+v, healthy", i, g, w)
		}
		if g.Source["database"] != "shop" {
			t.Errorf("status --json [%d].source=%v, want the record's source as an object", i, g.Source)
		}
		if g.Options["on_ddl"] != "ignore" {
			t.Errorf("status --json [%d].options=%v, want the record's options as an object", i, g.Options)
		}
		if g.Backlog.Known || !strings.Contains(g.Backlog.UnknownReason, "no --source") {
			t.Errorf("status --json [%d].backlog=%+v, want unknown for want of --source", i, g.Backlog)
		}
		if !g.Lease.Known || g.Lease.Live || g.Log != nil {
			t.Errorf("status --json [%d]: lease %+v, log %v; want a known lease nobody holds, no log", i, g.Lease, g.Log)
		}
	}

	// One workflow, with its log.
	if err := f.store.AddLog(t.Context(), f.other.ID, "State", workflow.StateRunning, "Running at MariaDB/0-1-7"); err != nil {
		t.Fatal(err)
	}
	r = runMain(t, "status", "--target", f.dsn, "--sidecar-db", f.sidecar, "--json", "--workflow", "customers", "--log", "5")
	if r.code != cli.ExitOK {
		t.Fatalf("status --json --workflow customers: %v, want exit 0", r)
	}
	got = parseStatus(t, r.stdout).Workflows
	if len(got) != 1 || got[0].Workflow != "customers" {
		t.Fatalf("status --json --workflow customers=%+v, want customers only", got)
	}
	if l := got[0].Log; l == nil || !l.Known || len(l.Rows) != 1 || l.Rows[0].Message != "Running at MariaDB/0-1-7" {
		t.Errorf("status --json --log 5: log %+v, want the one row", l)
	}
}

func TestStatus_text(t *testing.T) {
	f := newFixture(t)
	r := runMain(t, "status", "--target", f.dsn, "--sidecar-db", f.sidecar)
	if r.code != cli.ExitOK {
		t.Fatalf("status: %v, want exit 0", r)
	}
	table, note, _ := strings.Cut(strings.TrimRight(r.stdout, "\n"), "\n\n")
	lines := strings.Split(table, "\n")
	if len(lines) != 3 {
		t.Fatalf("status printed %d lines, want a header and one line per workflow: %q", len(lines), r.stdout)
	}
	for _, w := range []string{"WORKFLOW", "STATE", "BEHIND", "OWNER", "HOLD", "POS", "MESSAGE"} {
		if !strings.Contains(lines[0], w) {
			t.Errorf("status header %q lacks %q", lines[0], w)
		}
	}
	for i, w := range [][]string{
		{"orders", workflow.StateInit, "MariaDB/0-1-100"},
		{"customers", workflow.StateInit, "MariaDB/0-1-7", `error in stream: "quoted" and \ back`},
	} {
		for _, s := range w {
			if !strings.Contains(lines[i+1], s) {
				t.Errorf("status line %q lacks %q", lines[i+1], s)
			}
		}
	}
	if !strings.Contains(note, "no --source given") {
		t.Errorf("status without --source: %q, want it to say the backlog is not read for want of --source", r.stdout)
	}

	// One workflow: a field per line.
	r = runMain(t, "status", "--target", f.dsn, "--sidecar-db", f.sidecar, "--workflow", "orders", "--log", "3")
	if r.code != cli.ExitOK {
		t.Fatalf("status --workflow orders: %v, want exit 0", r)
	}
	for _, w := range []string{"workflow:        orders (id ", "state:           Init", "position:        MariaDB/0-1-100",
		"behind:          unknown", "lease:           none: never owned", "throttle:        none", "copy:            none",
		"log of orders (last 3 rows, oldest first):"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("status --workflow orders lacks %q:\n%s", w, r.stdout)
		}
	}
}

// TestStatus_exitCodes: 0 while every workflow shown is healthy, 3 for one in Error, 4 for one
// Stopped, 5 for a workflow that does not exist; the worst of several decides.
func TestStatus_exitCodes(t *testing.T) {
	f := newFixture(t)
	status := func(extra ...string) result {
		return runMain(t, append([]string{"status", "--target", f.dsn, "--sidecar-db", f.sidecar}, extra...)...)
	}
	set := func(r workflow.Record, state string) {
		t.Helper()
		if err := f.store.SetState(t.Context(), r.ID, state, "why"); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		orders, other string
		all, orders1  int
	}{
		{workflow.StateRunning, workflow.StateCopying, cli.ExitOK, cli.ExitOK},
		{workflow.StateStopped, workflow.StateRunning, cli.ExitStatusStopped, cli.ExitStatusStopped},
		{workflow.StateRunning, workflow.StateError, cli.ExitStatusError, cli.ExitOK},
		{workflow.StateStopped, workflow.StateError, cli.ExitStatusError, cli.ExitStatusStopped},
	} {
		set(f.orders, tt.orders)
		set(f.other, tt.other)
		for _, json := range []bool{false, true} {
			var extra []string
			if json {
				extra = append(extra, "--json")
			}
			if r := status(extra...); r.code != tt.all {
				t.Errorf("status %v with orders %s, customers %s: %v, want exit %d", extra, tt.orders, tt.other, r, tt.all)
			}
			if r := status(append(extra, "--workflow", "orders")...); r.code != tt.orders1 {
				t.Errorf("status %v --workflow orders (%s): %v, want exit %d", extra, tt.orders, r, tt.orders1)
			}
		}
	}
	for _, extra := range [][]string{{"--workflow", "nope"}, {"--workflow", "nope", "--json"}} {
		if r := status(extra...); r.code != cli.ExitStatusNotFound || !strings.Contains(r.stderr, "workflow not found: nope") || r.stdout != "" {
			t.Errorf("status %v: %v, want exit %d naming the workflow, nothing on stdout", extra, r, cli.ExitStatusNotFound)
		}
	}
	r := runMain(t, "status", "--target", f.dsn, "--sidecar-db", f.sidecar+"_none", "--workflow", "orders")
	if r.code != cli.ExitStatusNotFound {
		t.Errorf("status --workflow in a sidecar without tables: %v, want exit %d", r, cli.ExitStatusNotFound)
	}
}

// TestStatus_source compares the recorded positions with a real source's: caught up at the
// source's position, behind by the transactions since, and another source's workflow left out
// unless --workflow names it.
func TestStatus_source(t *testing.T) {
	f := newFixture(t)
	source, _ := mysqltest.Pair(t)
	srcDB := mysqltest.DB(t, source, mysqltest.DBName(t))
	if _, err := srcDB.ExecContext(t.Context(), "CREATE TABLE t (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	var gtid string
	if err := srcDB.QueryRowContext(t.Context(), "SELECT @@GLOBAL.gtid_binlog_pos").Scan(&gtid); err != nil {
		t.Fatal(err)
	}
	// orders at the source's position, its record naming the source; customers elsewhere.
	addr := source.Addr()
	if _, err := f.store.DB().ExecContext(t.Context(), "UPDATE `"+f.sidecar+"`.vreplication SET pos = ?, source = ? WHERE id = ?",
		"MariaDB/"+gtid, `{"address":"`+addr+`","database":"shop"}`, f.orders.ID); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := srcDB.ExecContext(t.Context(), "INSERT INTO t VALUES (?)", i); err != nil {
			t.Fatal(err)
		}
	}
	r := runMain(t, "status", "--target", f.dsn, "--sidecar-db", f.sidecar, "--source", source.DSN(""), "--json")
	if r.code != cli.ExitOK {
		t.Fatalf("status --source: %v", r)
	}
	var doc struct {
		Source struct {
			Address string `json:"address"`
			GTIDPos string `json:"gtid_pos"`
		} `json:"source"`
		Workflows []struct {
			Workflow string `json:"workflow"`
			Backlog  struct {
				Known        bool   `json:"known"`
				Reason       string `json:"unknown_reason"`
				CaughtUp     *bool  `json:"caught_up"`
				Transactions *int64 `json:"transactions"`
			} `json:"backlog"`
		} `json:"workflows"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Source.Address != addr || !strings.HasPrefix(doc.Source.GTIDPos, "MariaDB/") {
		t.Errorf("source=%+v, want %s and its GTID position", doc.Source, addr)
	}
	o, c := doc.Workflows[0].Backlog, doc.Workflows[1].Backlog
	if !o.Known || o.CaughtUp == nil || *o.CaughtUp || o.Transactions == nil || *o.Transactions != 3 {
		t.Errorf("orders' backlog=%+v, want 3 transactions behind", o)
	}
	if c.Known || !strings.Contains(c.Reason, "127.0.0.1:3306") {
		t.Errorf("customers' backlog=%+v, want unknown: its record names another source", c)
	}
	r = runMain(t, "status", "--target", f.dsn, "--sidecar-db", f.sidecar, "--source", source.DSN(""), "--workflow", "orders")
	if r.code != cli.ExitOK || !strings.Contains(r.stdout, "behind:          3 transactions") {
		t.Errorf("status --source --workflow orders: %v, want 3 transactions behind", r)
	}
	r = runMain(t, "status", "--target", f.dsn, "--sidecar-db", f.sidecar, "--source", badSource)
	if r.code != cli.ExitOK || !strings.Contains(r.stdout, "WORKFLOW") {
		t.Errorf("status with an unreachable --source: %v, want the status, its backlog unknown", r)
	}
}

func TestStatus_errors(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr []string
	}{
		{"unknown workflow", []string{"--target", f.dsn, "--sidecar-db", f.sidecar, "--workflow", "nope"}, cli.ExitStatusNotFound, []string{"workflow not found", "nope"}},
		{"no sidecar tables", []string{"--target", f.dsn, "--sidecar-db", f.sidecar + "_none"}, cli.ExitError, []string{"vreplication"}},
		{"missing --target", []string{"--sidecar-db", f.sidecar}, cli.ExitUsage, []string{"--target", "required"}},
		{"unknown flag", []string{"--target", f.dsn, "--frobnicate"}, cli.ExitUsage, []string{"frobnicate"}},
		{"extra argument", []string{"--target", f.dsn, "--sidecar-db", f.sidecar, "orders"}, cli.ExitUsage, []string{"orders"}},
		{"negative --log", []string{"--target", f.dsn, "--log", "-1"}, cli.ExitUsage, []string{"--log"}},
		{"bad --source", []string{"--target", f.dsn, "--source", "root@unix(/tmp/x.sock)/"}, cli.ExitUsage, []string{"--source", "tcp"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"status"}, tt.args...)
			r := runMain(t, args...)
			if r.code != tt.wantCode {
				t.Errorf("Main(%q): exit %d, want %d (%v)", args, r.code, tt.wantCode, r)
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q, want it to contain %q", r.stderr, w)
				}
			}
		})
	}
}

func TestStop(t *testing.T) {
	f := newFixture(t)
	r := runMain(t, "stop", "--target", f.dsn, "--sidecar-db", f.sidecar, "--workflow", "orders")
	if r.code != cli.ExitOK {
		t.Fatalf("stop --workflow orders: %v, want exit 0", r)
	}
	if !strings.Contains(r.stdout, "orders") || !strings.Contains(r.stdout, workflow.StateStopped) {
		t.Errorf("stop stdout %q, want it to name the workflow and the Stopped state", r.stdout)
	}
	if got, err := f.store.StateOf(t.Context(), f.orders.ID); err != nil || got != workflow.StateStopped {
		t.Errorf("state after stop=%q, %v, want %q", got, err, workflow.StateStopped)
	}
	if got, err := f.store.StateOf(t.Context(), f.other.ID); err != nil || got != workflow.StateInit {
		t.Errorf("other workflow's state after stop=%q, %v, want %q", got, err, workflow.StateInit)
	}
	got, err := f.store.Get(t.Context(), "orders")
	if err != nil {
		t.Fatal(err)
	}
	if got.Pos != f.orders.Pos {
		t.Errorf("pos after stop=%q, want %q unchanged", got.Pos, f.orders.Pos)
	}

	// Stopping a stopped workflow is fine.
	r = runMain(t, "stop", "--target", f.dsn, "--sidecar-db", f.sidecar, "--workflow", "orders")
	if r.code != cli.ExitOK {
		t.Errorf("second stop: %v, want exit 0", r)
	}
}

func TestStop_errors(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr []string
	}{
		{"unknown workflow", []string{"--target", f.dsn, "--sidecar-db", f.sidecar, "--workflow", "nope"}, cli.ExitError, []string{"workflow not found", "nope"}},
		{"missing --workflow", []string{"--target", f.dsn, "--sidecar-db", f.sidecar}, cli.ExitUsage, []string{"--workflow", "required"}},
		{"missing --target", []string{"--sidecar-db", f.sidecar, "--workflow", "orders"}, cli.ExitUsage, []string{"--target", "required"}},
		{"extra argument", []string{"--target", f.dsn, "--sidecar-db", f.sidecar, "--workflow", "orders", "customers"}, cli.ExitUsage, []string{"customers"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"stop"}, tt.args...)
			r := runMain(t, args...)
			if r.code != tt.wantCode {
				t.Errorf("Main(%q): exit %d, want %d (%v)", args, r.code, tt.wantCode, r)
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q, want it to contain %q", r.stderr, w)
				}
			}
		})
	}
	for _, name := range []string{"orders", "customers"} {
		if got, err := f.store.Get(t.Context(), name); err != nil || got.State != workflow.StateInit {
			t.Errorf("%s after failed stops: state %q, %v, want %q", name, got.State, err, workflow.StateInit)
		}
	}
}

// TestStatusStop_noPassword runs status and stop against unreachable or malformed DSNs that hold
// a password, with and without VPLAYER_TARGET_PASSWORD.
func TestStatusStop_noPassword(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
	}{
		{"status unreachable", []string{"status", "--target", badTarget}, cli.ExitError},
		{"status --json unreachable", []string{"status", "--target", badTarget, "--json"}, cli.ExitError},
		{"status --workflow unreachable", []string{"status", "--target", badTarget, "--workflow", "orders"}, cli.ExitError},
		{"stop unreachable", []string{"stop", "--target", badTarget, "--workflow", "orders"}, cli.ExitError},
		{"status unix socket", []string{"status", "--target", "root:" + dsnPassword + "@unix(/tmp/mysql.sock)/"}, cli.ExitUsage},
		{"stop malformed DSN", []string{"stop", "--target", "root:" + dsnPassword + "@tcp(127.0.0.1:1/", "--workflow", "orders"}, cli.ExitUsage},
		{"status password with slash, DSN without database", []string{"status", "--target", "root:" + dsnPassword + "/x@tcp(127.0.0.1:1)"}, cli.ExitUsage},
	}
	for _, env := range []struct {
		name string
		set  bool
	}{{"dsn password", false}, {"env password", true}} {
		t.Run(env.name, func(t *testing.T) {
			if env.set {
				t.Setenv("VPLAYER_TARGET_PASSWORD", envPassword)
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					r := runMain(t, tt.args...)
					if r.code != tt.wantCode {
						t.Errorf("Main(%q): exit %d, want %d (%v)", tt.args, r.code, tt.wantCode, r)
					}
					if r.stderr == "" {
						t.Errorf("Main(%q): empty stderr, want the reason", tt.args)
					}
					assertNoSecrets(t, r, dsnPassword, envPassword)
				})
			}
		})
	}
}

func TestStatus_usage(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr []string
	}{
		{"status --help", []string{"status", "--help"}, cli.ExitOK, []string{"Exit codes: 0", "3 a\nworkflow shown is in state Error", "--source", "--log"}},
		{"status --log too many", []string{"status", "--target", badTarget, "--log", "1001"}, cli.ExitUsage, []string{"--log is 1001"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runMain(t, tt.args...)
			if r.code != tt.wantCode {
				t.Errorf("Main(%q): exit %d, want %d (%v)", tt.args, r.code, tt.wantCode, r)
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("Main(%q): stderr %q, want it to contain %q", tt.args, r.stderr, w)
				}
			}
			assertNoSecrets(t, r, dsnPassword, envPassword)
		})
	}
}
