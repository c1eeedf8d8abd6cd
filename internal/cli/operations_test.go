package cli_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

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
		{"--pprof-addr without port", map[string]string{"pprof-addr": "localhost"}, nil, []string{"--pprof-addr", "HOST:PORT"}},
		{"--pprof-addr port too large", map[string]string{"pprof-addr": "127.0.0.1:70000"}, nil, []string{"--pprof-addr", "0 to 65535"}},
		{"--pprof-addr is --metrics-addr", map[string]string{"pprof-addr": ":9100", "metrics-addr": ":9100"}, nil, []string{"--pprof-addr", "--metrics-addr", "listener of their own"}},
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

// TestRun_pprofAddrInUse: a --pprof-addr that cannot be listened on fails the run with exit code
// 1, naming the flag, before any connection.
func TestRun_pprofAddrInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	args := runArgs(map[string]string{"metrics-addr": "127.0.0.1:0", "pprof-addr": ln.Addr().String()})
	r := runMain(t, args...)
	if r.code != cli.ExitError {
		t.Fatalf("Main(%q): exit %d, want %d (%v)", args, r.code, cli.ExitError, r)
	}
	for _, w := range []string{"--pprof-addr " + ln.Addr().String(), "address already in use"} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr %q, want it to contain %q", r.stderr, w)
		}
	}
	if strings.Contains(r.stderr, "not reachable") {
		t.Errorf("stderr %q: a connection was attempted before listening", r.stderr)
	}
}

// servedAddr matches the address a run logs it serves what on.
func servedAddr(what string) *regexp.Regexp {
	return regexp.MustCompile(`msg="serving ` + what + `" .*addr=(\S+)`)
}

// TestRun_pprofOnlyWithItsFlag: the profiles are served on --pprof-addr alone, never on
// --metrics-addr, and never the command line.
func TestRun_pprofOnlyWithItsFlag(t *testing.T) {
	for _, withPprof := range []bool{false, true} {
		t.Run(fmt.Sprintf("pprof %v", withPprof), func(t *testing.T) {
			set := map[string]string{"metrics-addr": "127.0.0.1:0", "retry-delay": "50ms"}
			if withPprof {
				set["pprof-addr"] = "127.0.0.1:0"
			}
			args := runArgs(set)
			var metricsAddr, pprofAddr string
			r := runWhile(t, args, func(stderr string) bool {
				m := servedAddr("metrics").FindStringSubmatch(stderr)
				if m == nil {
					return false
				}
				metricsAddr = m[1]
				if withPprof {
					p := servedAddr("profiles").FindStringSubmatch(stderr)
					if p == nil {
						return false
					}
					pprofAddr = p[1]
				}
				return true
			}, func() {
				for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=1"} {
					if code, _ := httpGet(t, "http://"+metricsAddr+path); code != http.StatusNotFound {
						t.Errorf("--metrics-addr %s: %d, want 404", path, code)
					}
				}
				if !withPprof {
					return
				}
				if code, body := httpGet(t, "http://"+pprofAddr+"/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
					t.Errorf("--pprof-addr /debug/pprof/: %d, want 200 with the profiles", code)
				}
				if code, body := httpGet(t, "http://"+pprofAddr+"/debug/pprof/goroutine?debug=2"); code != http.StatusOK || strings.Contains(body, dsnPassword) {
					t.Errorf("--pprof-addr goroutine stacks: %d (want 200), password shown: %v", code, strings.Contains(body, dsnPassword))
				}
				if code, body := httpGet(t, "http://"+pprofAddr+"/debug/pprof/cmdline"); code != http.StatusNotFound || strings.Contains(body, dsnPassword) {
					t.Errorf("--pprof-addr /debug/pprof/cmdline: %d %q, want 404 without the command line", code, body)
				}
			})
			if r.code != cli.ExitOK {
				t.Errorf("Main(%q): exit %d after SIGTERM, want %d (%v)", args, r.code, cli.ExitOK, r)
			}
			if got := strings.Contains(r.stderr, "serving profiles"); got != withPprof {
				t.Errorf("stderr says serving profiles: %v, want %v: %q", got, withPprof, r.stderr)
			}
			assertNoSecrets(t, r, dsnPassword)
		})
	}
}

// TestRun_logLevel: --log-level drops the lines below it; the retry line carries the error and
// the delay as attributes besides its text (SPEC 4.4).
func TestRun_logLevel(t *testing.T) {
	tests := []struct {
		level, format string
		want, notWant []string
	}{
		{"info", "text", []string{"level=INFO", "level=ERROR", `retry_after=50ms`, `error="preflight: source not reachable: `}, []string{"level=DEBUG"}},
		{"error", "text", []string{"level=ERROR", "will retry after 50ms"}, []string{"level=INFO", "level=WARN"}},
		{"warn", "json", []string{`"level":"ERROR"`, `"retry_after":"50ms"`, `"error":"preflight: source not reachable: `}, []string{`"level":"INFO"`}},
	}
	for _, tt := range tests {
		t.Run(tt.level+" "+tt.format, func(t *testing.T) {
			args := runArgs(map[string]string{"log-level": tt.level, "log-format": tt.format, "retry-delay": "50ms", "metrics-addr": "127.0.0.1:0"})
			r := runUntilRetried(t, 3, args...)
			if r.code != cli.ExitOK {
				t.Errorf("Main(%q): exit %d after SIGTERM, want %d (%v)", args, r.code, cli.ExitOK, r)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("--log-level %s: stderr %q, want %q", tt.level, r.stderr, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(r.stderr, w) {
					t.Errorf("--log-level %s: stderr %q has %q", tt.level, r.stderr, w)
				}
			}
			assertNoSecrets(t, r, dsnPassword)
		})
	}
}

// runWhile calls cli.Main, waits until ready holds of its stderr, calls check, then sends this
// process SIGTERM (Main has its signal handler installed once it logs) and returns Main's result.
func runWhile(t *testing.T, args []string, ready func(stderr string) bool, check func()) result {
	t.Helper()
	var stderr syncBuffer
	done := make(chan result, 1)
	go func() {
		var stdout bytes.Buffer
		code := cli.Main(args, &stdout, &stderr)
		done <- result{code, stdout.String(), stderr.String()}
	}()
	deadline := time.After(mainTimeout)
	for !ready(stderr.String()) {
		select {
		case r := <-done:
			t.Fatalf("Main(%q) returned before it was ready: %v", args, r)
		case <-deadline:
			t.Fatalf("Main(%q) not ready within %v; stderr %q", args, mainTimeout, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	check()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		return r
	case <-time.After(mainTimeout):
		t.Fatalf("Main(%q) did not return within %v of SIGTERM", args, mainTimeout)
		return result{}
	}
}

// httpGet returns the status and body of a GET.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
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
