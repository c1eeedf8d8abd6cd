package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vplayer/vplayer/internal/cli"
)

func TestDelete(t *testing.T) {
	f := newFixture(t)
	del := func(args ...string) result {
		return runMain(t, append([]string{"delete", "--target", f.dsn, "--sidecar-db", f.sidecar}, args...)...)
	}
	lease, _, err := f.store.Acquire(t.Context(), f.orders.ID, "orders", "host-a:42:beef", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release()
	r := del("--workflow", "orders")
	if r.code != cli.ExitError || !strings.Contains(r.stderr, "owned by a live process: host-a:42:beef") || !strings.Contains(r.stderr, "--force") {
		t.Errorf("delete of an owned workflow: %v, want exit 1 naming the owner and --force", r)
	}
	if _, err := f.store.Get(t.Context(), "orders"); err != nil {
		t.Errorf("record after a refused delete: %v, want it kept", err)
	}
	r = del("--workflow", "orders", "--force")
	if r.code != cli.ExitOK || !strings.Contains(r.stdout, "deleted") || !strings.Contains(r.stdout, "host-a:42:beef finds its record gone") {
		t.Errorf("delete --force: %v, want exit 0 naming the owner that stops", r)
	}
	if r := del("--workflow", "customers"); r.code != cli.ExitOK {
		t.Errorf("delete of a workflow nobody owns: %v, want exit 0", r)
	}
	if r := del("--workflow", "customers"); r.code != cli.ExitError || !strings.Contains(r.stderr, "workflow not found") {
		t.Errorf("delete of a deleted workflow: %v, want exit 1, not found", r)
	}
	if r := del(); r.code != cli.ExitUsage || !strings.Contains(r.stderr, "--workflow is required") {
		t.Errorf("delete without --workflow: %v, want exit 2", r)
	}
}

func TestDelete_usage(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr []string
	}{
		{"delete --help", []string{"delete", "--help"}, cli.ExitOK, []string{"--force", "Exit codes"}},
		{"delete unreachable", []string{"delete", "--target", badTarget, "--workflow", "w"}, cli.ExitError, []string{"127.0.0.1:1"}},
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
