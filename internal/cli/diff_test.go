package cli_test

import (
	"strings"
	"testing"

	"github.com/vplayer/vplayer/internal/cli"
)

// TestDiff_badUsage: bad diff flags exit 2 naming the flag, before any connection, and never
// print a password.
func TestDiff_badUsage(t *testing.T) {
	t.Setenv("VPLAYER_SOURCE_PASSWORD", envPassword)
	ok := []string{"diff", "--workflow", "orders", "--source", badSource, "--target", badTarget}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"missing --workflow", []string{"diff", "--source", badSource, "--target", badTarget}, []string{"--workflow", "required"}},
		{"missing --source", []string{"diff", "--workflow", "orders", "--target", badTarget}, []string{"--source", "required"}},
		{"missing --target", []string{"diff", "--workflow", "orders", "--source", badSource}, []string{"--target", "required"}},
		{"--chunk-size 0", append(ok, "--chunk-size", "0"), []string{"--chunk-size", "at least 1"}},
		{"--max-keys 0", append(ok, "--max-keys", "0"), []string{"--max-keys", "at least 1"}},
		{"--wait-timeout 0", append(ok, "--wait-timeout", "0"), []string{"--wait-timeout", "above 0"}},
		{"bad --tables", append(ok, "--tables", "/x(/"), []string{"--tables", "/x(/"}},
		{"bad --log-format", append(ok, "--log-format", "xml"), []string{"--log-format"}},
		{"bad --log-level", append(ok, "--log-level", "loud"), []string{"--log-level", `"loud"`}},
		{"malformed DSN", []string{"diff", "--workflow", "orders", "--source", "root:" + dsnPassword + "@tcp(127.0.0.1:1/x", "--target", badTarget}, []string{"--source", "DSN"}},
		{"extra argument", append(ok, "leftover"), []string{"unexpected", "leftover"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runMain(t, tt.args...)
			if r.code != cli.ExitUsage {
				t.Fatalf("exit %d, want %d (%v)", r.code, cli.ExitUsage, r)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q, want it to contain %q", r.stderr, w)
				}
			}
			if strings.Contains(r.stderr, "connection refused") || strings.Contains(r.stderr, "dial tcp") {
				t.Errorf("stderr %q: a connection was attempted", r.stderr)
			}
			assertNoSecrets(t, r, dsnPassword, envPassword)
		})
	}
}

// TestDiff_unreachable: unreachable servers fail with exit 1 and no password shown.
func TestDiff_unreachable(t *testing.T) {
	t.Setenv("VPLAYER_TARGET_PASSWORD", envPassword)
	r := runMain(t, "diff", "--workflow", "orders", "--source", badSource, "--target", badTarget)
	if r.code != cli.ExitError {
		t.Errorf("exit %d, want %d (%v)", r.code, cli.ExitError, r)
	}
	assertNoSecrets(t, r, dsnPassword, envPassword)
}

func TestDiff_help(t *testing.T) {
	r := runMain(t, "diff", "--help")
	if r.code != cli.ExitOK || !strings.Contains(r.stderr, "--chunk-size") {
		t.Errorf("diff --help: %v, want exit 0 and the flags", r)
	}
}
