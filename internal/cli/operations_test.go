package cli_test

import (
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vplayer/vplayer/internal/cli"
)

func TestRun_badOperationsFlags(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing-ca.pem")
	tests := []struct {
		name  string
		set   map[string]string
		extra []string
		want  []string
	}{
		{"--metrics-addr without port", map[string]string{"metrics-addr": "localhost"}, nil, []string{"--metrics-addr", "HOST:PORT"}},
		{"--metrics-addr bad port", map[string]string{"metrics-addr": "127.0.0.1:http-ish"}, nil, []string{"--metrics-addr", "port"}},
		{"--metrics-addr port too large", map[string]string{"metrics-addr": ":70000"}, nil, []string{"--metrics-addr", "0 to 65535"}},
		{"bad --source-tls-mode", map[string]string{"source-tls-mode": "on"}, nil, []string{"--source-tls-mode", `"on"`, "verify-identity"}},
		{"bad --target-tls-mode", map[string]string{"target-tls-mode": "strict"}, nil, []string{"--target-tls-mode", `"strict"`}},
		{"missing --target-tls-ca", map[string]string{"target-tls-mode": "verify-ca", "target-tls-ca": missing}, nil, []string{"--target-tls-ca " + missing, "no such file"}},
		{"unreadable --source-tls-ca", map[string]string{"source-tls-ca": dir}, nil, []string{"--source-tls-ca " + dir, "is a directory"}},
		{"--source-tls-cert without key", map[string]string{"source-tls-cert": missing}, nil, []string{"--source-tls-cert and --source-tls-key"}},
		{"unreadable --source-tls-key", map[string]string{"source-tls-mode": "required", "source-tls-cert": missing, "source-tls-key": dir}, nil, []string{"--source-tls-cert " + missing}},
		{"--source-tls-ca with required", map[string]string{"source-tls-mode": "required", "source-tls-ca": missing}, nil, []string{"--source-tls-ca", "verify-ca or verify-identity"}},
		{"tls in the DSN and the flag", map[string]string{"source": badSource + "?tls=skip-verify", "source-tls-mode": "required"}, nil, []string{"--source has tls=skip-verify", "--source-tls-mode"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := runArgs(tt.set, tt.extra...)
			r := runMain(t, args...)
			if r.code != cli.ExitUsage {
				t.Fatalf("Main(%q): exit %d, want %d (%v)", args, r.code, cli.ExitUsage, r)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q, want it to contain %q", r.stderr, w)
				}
			}
			for _, w := range []string{"connection refused", "dial tcp", "not reachable"} {
				if strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q contains %q: a connection was attempted", r.stderr, w)
				}
			}
			assertNoSecrets(t, r, dsnPassword)
		})
	}
}

// TestRun_metricsAddrInUse: a --metrics-addr that cannot be listened on fails the run with exit
// code 1, naming the flag, before any connection.
func TestRun_metricsAddrInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	args := runArgs(map[string]string{"metrics-addr": ln.Addr().String()})
	r := runMain(t, args...)
	if r.code != cli.ExitError {
		t.Fatalf("Main(%q): exit %d, want %d (%v)", args, r.code, cli.ExitError, r)
	}
	for _, w := range []string{"--metrics-addr " + ln.Addr().String(), "address already in use"} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr %q, want it to contain %q", r.stderr, w)
		}
	}
	if strings.Contains(r.stderr, "not reachable") {
		t.Errorf("stderr %q: a connection was attempted before listening", r.stderr)
	}
}

// TestStatus_badTLSFlags: status and stop take the target's TLS flags.
func TestStatus_badTLSFlags(t *testing.T) {
	for _, cmd := range []string{"status", "stop"} {
		args := []string{cmd, "--target", badTarget, "--workflow", "orders", "--target-tls-mode", "verify-ca", "--target-tls-ca", "/nonexistent/ca.pem"}
		r := runMain(t, args...)
		if r.code != cli.ExitUsage || !strings.Contains(r.stderr, "--target-tls-ca /nonexistent/ca.pem") {
			t.Errorf("Main(%q): %v, want exit 2 naming --target-tls-ca", args, r)
		}
		assertNoSecrets(t, r, dsnPassword)
	}
}
