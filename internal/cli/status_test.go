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

// statusEntry is the part of status --json that the tests read.
type statusEntry struct {
	ID       int64          `json:"id"`
	Workflow string         `json:"workflow"`
	State    string         `json:"state"`
	Message  string         `json:"message"`
	Pos      string         `json:"pos"`
	DBName   string         `json:"db_name"`
	Source   map[string]any `json:"source"`
	Options  map[string]any `json:"options"`
}

func TestStatus_json(t *testing.T) {
	f := newFixture(t)
	r := runMain(t, "status", "--target", f.dsn, "--sidecar-db", f.sidecar, "--json")
	if r.code != cli.ExitOK {
		t.Fatalf("status --json: %v, want exit 0", r)
	}
	var got []statusEntry
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("status --json printed invalid JSON %q: %v", r.stdout, err)
	}
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
		if g.ID != w.ID || g.Workflow != w.Workflow || g.State != w.State || g.Pos != w.Pos || g.DBName != w.DBName || g.Message != w.Message {
			t.Errorf("status --json [%d]=%+v, want %+v", i, g, w)
		}
		if g.Source["database"] != "shop" {
			t.Errorf("status --json [%d].source=%v, want the record's source as an object", i, g.Source)
		}
		if g.Options["on_ddl"] != "ignore" {
			t.Errorf("status --json [%d].options=%v, want the record's options as an object", i, g.Options)
		}
	}

	// One workflow.
	r = runMain(t, "status", "--target", f.dsn, "--sidecar-db", f.sidecar, "--json", "--workflow", "customers")
	if r.code != cli.ExitOK {
		t.Fatalf("status --json --workflow customers: %v, want exit 0", r)
	}
	got = nil
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("status --json --workflow printed invalid JSON %q: %v", r.stdout, err)
	}
	if len(got) != 1 || got[0].Workflow != "customers" {
		t.Errorf("status --json --workflow customers=%+v, want customers only", got)
	}
}

func TestStatus_text(t *testing.T) {
	f := newFixture(t)
	r := runMain(t, "status", "--target", f.dsn, "--sidecar-db", f.sidecar)
	if r.code != cli.ExitOK {
		t.Fatalf("status: %v, want exit 0", r)
	}
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("status printed %d lines, want a header and one line per workflow: %q", len(lines), r.stdout)
	}
	for _, w := range []string{"WORKFLOW", "STATE", "POS", "MESSAGE"} {
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
}

func TestStatus_errors(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr []string
	}{
		{"unknown workflow", []string{"--target", f.dsn, "--sidecar-db", f.sidecar, "--workflow", "nope"}, cli.ExitError, []string{"workflow not found", "nope"}},
		{"no sidecar tables", []string{"--target", f.dsn, "--sidecar-db", f.sidecar + "_none"}, cli.ExitError, []string{"vreplication"}},
		{"missing --target", []string{"--sidecar-db", f.sidecar}, cli.ExitUsage, []string{"--target", "required"}},
		{"unknown flag", []string{"--target", f.dsn, "--frobnicate"}, cli.ExitUsage, []string{"frobnicate"}},
		{"extra argument", []string{"--target", f.dsn, "--sidecar-db", f.sidecar, "orders"}, cli.ExitUsage, []string{"orders"}},
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
