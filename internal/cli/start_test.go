package cli_test

import (
	"strings"
	"testing"

	"github.com/vplayer/vplayer/internal/cli"
	"github.com/vplayer/vplayer/workflow"
)

func TestStart(t *testing.T) {
	f := newFixture(t)
	start := func(name string) result {
		return runMain(t, "start", "--target", f.dsn, "--sidecar-db", f.sidecar, "--workflow", name)
	}
	if err := f.store.SetState(t.Context(), f.orders.ID, workflow.StateStopped, workflow.StopRequestedMessage); err != nil {
		t.Fatal(err)
	}
	r := start("orders")
	if r.code != cli.ExitOK || !strings.Contains(r.stdout, "state set to Init (was Stopped)") || !strings.Contains(r.stdout, "no process owns it now") {
		t.Errorf("start of a stopped workflow: %v, want exit 0, Init, no owner", r)
	}
	if got := mustState(t, f, f.orders.ID); got != workflow.StateInit {
		t.Errorf("state after start=%q, want Init", got)
	}
	if r := start("orders"); r.code != cli.ExitOK || !strings.Contains(r.stdout, "already runnable (state Init)") {
		t.Errorf("start of a runnable workflow: %v, want exit 0, already runnable", r)
	}
	if err := f.store.SetState(t.Context(), f.other.ID, workflow.StateError, "terminal error: boom"); err != nil {
		t.Fatal(err)
	}
	if r := start("customers"); r.code != cli.ExitError || !strings.Contains(r.stderr, "state Error") {
		t.Errorf("start of a workflow in Error: %v, want exit 1 saying so", r)
	}
	if got := mustState(t, f, f.other.ID); got != workflow.StateError {
		t.Errorf("state after a refused start=%q, want Error", got)
	}
	if r := start("nope"); r.code != cli.ExitError || !strings.Contains(r.stderr, "workflow not found") {
		t.Errorf("start of an unknown workflow: %v, want exit 1, not found", r)
	}

	// A stop position already reached: start says that run stops again at once.
	if _, err := f.store.DB().ExecContext(t.Context(), "UPDATE `"+f.sidecar+"`.vreplication SET state = 'Stopped', stop_pos = pos WHERE id = ?", f.orders.ID); err != nil {
		t.Fatal(err)
	}
	if r := start("orders"); r.code != cli.ExitOK || !strings.Contains(r.stdout, "already reached its stop position") {
		t.Errorf("start at the stop position: %v, want a note that it stops again at once", r)
	}
}

func mustState(t *testing.T, f fixture, id int64) string {
	t.Helper()
	s, err := f.store.StateOf(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStart_usage(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr []string
	}{
		{"start --help", []string{"start", "--help"}, cli.ExitOK, []string{"Stopped workflow runnable", "Exit codes"}},
		{"run --help", []string{"run", "--help"}, cli.ExitOK, []string{"--wait-while-stopped"}},
		{"start without --workflow", []string{"start", "--target", badTarget}, cli.ExitUsage, []string{"--workflow is required"}},
		{"start unreachable", []string{"start", "--target", badTarget, "--workflow", "w"}, cli.ExitError, []string{"start workflow w"}},
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
