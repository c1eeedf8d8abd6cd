package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/vplayer/vplayer/internal/cli"
	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
)

func TestMain(m *testing.M) {
	code := mysqltest.Run(m)
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// Passwords that must never be printed.
const (
	dsnPassword = "s3cretpw"
	envPassword = "envs3cret"
)

// Unreachable DSNs: nothing listens on port 1, so an attempt to connect fails with exit code 1
// and a connection error, never with exit code 2.
const (
	badSource = "root:" + dsnPassword + "@tcp(127.0.0.1:1)/srcdb"
	badTarget = "root:" + dsnPassword + "@tcp(127.0.0.1:1)/tgtdb"
)

// result is one cli.Main call.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
}

// mainTimeout bounds one cli.Main call.
const mainTimeout = 15 * time.Second

// runMain calls cli.Main and fails the test if it does not return within mainTimeout.
func runMain(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), mainTimeout)
	defer cancel()
	done := make(chan result, 1)
	go func() {
		var stdout, stderr bytes.Buffer
		code := cli.Main(args, &stdout, &stderr)
		done <- result{code, stdout.String(), stderr.String()}
	}()
	select {
	case r := <-done:
		return r
	case <-ctx.Done():
		t.Fatalf("Main(%q) did not return within %v", args, mainTimeout)
		return result{}
	}
}

// assertNoSecrets fails the test when the output shows a password.
func assertNoSecrets(t *testing.T, r result, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(r.stdout, s) || strings.Contains(r.stderr, s) {
			t.Errorf("output shows the password %q: %v", s, r)
		}
	}
}

func TestMain_topLevel(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"no args", nil, cli.ExitUsage, "", "Usage:"},
		{"unknown command", []string{"frobnicate"}, cli.ExitUsage, "", `unknown command "frobnicate"`},
		{"flag as command", []string{"--workflow"}, cli.ExitUsage, "", `unknown command "--workflow"`},
		{"--help", []string{"--help"}, cli.ExitOK, "Usage:", ""},
		{"-h", []string{"-h"}, cli.ExitOK, "Usage:", ""},
		{"help", []string{"help"}, cli.ExitOK, "Usage:", ""},
		{"run --help", []string{"run", "--help"}, cli.ExitOK, "", "--vplayer-progress-deadline"},
		{"status --help", []string{"status", "--help"}, cli.ExitOK, "", "--json"},
		{"stop --help", []string{"stop", "--help"}, cli.ExitOK, "", "--workflow"},
		{"version", []string{"version"}, cli.ExitOK, "vplayer ", ""},
		{"--version", []string{"--version"}, cli.ExitOK, "(revision ", ""},
		{"version with an argument", []string{"version", "--json"}, cli.ExitUsage, "", "takes no arguments"},
		{"run --help lists --pprof-addr", []string{"run", "--help"}, cli.ExitOK, "", "--pprof-addr"},
		{"run --help lists --log-level", []string{"run", "--help"}, cli.ExitOK, "", "--log-level"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runMain(t, tt.args...)
			if r.code != tt.wantCode {
				t.Errorf("Main(%q): exit %d, want %d (%v)", tt.args, r.code, tt.wantCode, r)
			}
			if !strings.Contains(r.stdout, tt.wantStdout) {
				t.Errorf("Main(%q): stdout %q, want it to contain %q", tt.args, r.stdout, tt.wantStdout)
			}
			if !strings.Contains(r.stderr, tt.wantStderr) {
				t.Errorf("Main(%q): stderr %q, want it to contain %q", tt.args, r.stderr, tt.wantStderr)
			}
			if tt.wantCode == cli.ExitOK && tt.wantStdout != "" && r.stderr != "" {
				t.Errorf("Main(%q): stderr %q, want nothing", tt.args, r.stderr)
			}
		})
	}
}

// runArgs returns valid run arguments over the unreachable DSNs, with the named flags replaced
// (a value of "" drops the flag) and extra arguments appended.
func runArgs(set map[string]string, extra ...string) []string {
	flags := []struct{ name, value string }{
		{"workflow", "orders"},
		{"source", badSource},
		{"target", badTarget},
	}
	args := []string{"run"}
	seen := map[string]bool{}
	for _, f := range flags {
		seen[f.name] = true
		v := f.value
		if nv, ok := set[f.name]; ok {
			v = nv
		}
		if v != "" {
			args = append(args, "--"+f.name, v)
		}
	}
	for name, v := range set {
		if !seen[name] {
			args = append(args, "--"+name, v)
		}
	}
	return append(args, extra...)
}

// badRunTests are run invocations that must fail with exit code 2 before connecting.
var badRunTests = []struct {
	name  string
	set   map[string]string
	extra []string
	// want are substrings of stderr: the flag and why.
	want []string
}{
	{"missing --workflow", map[string]string{"workflow": ""}, nil, []string{"--workflow", "required"}},
	{"workflow too long", map[string]string{"workflow": strings.Repeat("w", 256)}, nil, []string{"--workflow", "at most 255"}},
	{"missing --source", map[string]string{"source": ""}, nil, []string{"--source", "required"}},
	{"missing --target", map[string]string{"target": ""}, nil, []string{"--target", "required"}},
	{"bad --on-ddl", map[string]string{"on-ddl": "drop"}, nil, []string{"--on-ddl", `"drop"`, "ignore, stop, exec or exec_ignore"}},
	{"bad --exec-mode", map[string]string{"exec-mode": "lenient"}, nil, []string{"--exec-mode", `"lenient"`, "strict or idempotent"}},
	{"bad --log-format", map[string]string{"log-format": "xml"}, nil, []string{"--log-format", `"xml"`, "text or json"}},
	{"bad --log-level", map[string]string{"log-level": "verbose"}, nil, []string{"--log-level", `"verbose"`, "debug, info, warn or error"}},
	{"--log-level in upper case", map[string]string{"log-level": "INFO"}, nil, []string{"--log-level", `"INFO"`}},
	{"--heartbeat-update-interval 0", map[string]string{"heartbeat-update-interval": "0"}, nil, []string{"--heartbeat-update-interval", "positive"}},
	{"--heartbeat-update-interval 61s", map[string]string{"heartbeat-update-interval": "61s"}, nil, []string{"--heartbeat-update-interval", "at most 1m0s"}},
	{"--heartbeat-update-interval not a duration", map[string]string{"heartbeat-update-interval": "soon"}, nil, []string{"heartbeat-update-interval", "soon"}},
	{"negative --vplayer-progress-deadline", map[string]string{"vplayer-progress-deadline": "-1s"}, nil, []string{"--vplayer-progress-deadline", "-1s"}},
	{"--source-heartbeat-period 0", map[string]string{"source-heartbeat-period": "0"}, nil, []string{"--source-heartbeat-period", "above 0"}},
	{"--relay-log-max-size 0", map[string]string{"relay-log-max-size": "0"}, nil, []string{"--relay-log-max-size", "at least 1"}},
	{"--relay-log-max-items 0", map[string]string{"relay-log-max-items": "0"}, nil, []string{"--relay-log-max-items", "at least 1"}},
	{"negative --retry-delay", map[string]string{"retry-delay": "-1s"}, nil, []string{"--retry-delay", "negative"}},
	{"negative --max-time-to-retry-on-error", map[string]string{"max-time-to-retry-on-error": "-1s"}, nil, []string{"--max-time-to-retry-on-error", "negative"}},
	{"bad --start-pos", map[string]string{"start-pos": "Oracle/42"}, nil, []string{"--start-pos", "Oracle"}},
	{"bad --start-pos GTID", map[string]string{"start-pos": "MariaDB/not-a-gtid"}, nil, []string{"--start-pos", "not-a-gtid"}},
	{"bad --stop-pos", map[string]string{"stop-pos": "FilePos/binlog.000001:notanumber"}, nil, []string{"--stop-pos"}},
	{"--stop-pos current", map[string]string{"stop-pos": "current"}, nil, []string{"--stop-pos"}},
	{"invalid /regex/ in --tables", map[string]string{"tables": "orders,/ord(ers/"}, nil, []string{"--tables", "/ord(ers/", "regular expression"}},
	{"unix socket source", map[string]string{"source": "root:" + dsnPassword + "@unix(/tmp/mysql.sock)/srcdb"}, nil, []string{"--source", "tcp"}},
	{"unix socket target", map[string]string{"target": "root:" + dsnPassword + "@unix(/tmp/mysql.sock)/tgtdb"}, nil, []string{"--target", "tcp"}},
	{"no source database", map[string]string{"source": "root:" + dsnPassword + "@tcp(127.0.0.1:1)/"}, nil, []string{"source database", "--source-db"}},
	{"malformed source DSN", map[string]string{"source": "root:" + dsnPassword + "@tcp(127.0.0.1:1/srcdb"}, nil, []string{"--source", "DSN"}},
	{"source DSN without slash", map[string]string{"source": "root:" + dsnPassword + "@tcp(127.0.0.1:1)"}, nil, []string{"--source", "DSN"}},
	{"source password with slash, DSN without database", map[string]string{"source": "root:" + dsnPassword + "/x@tcp(127.0.0.1:1)"}, nil, []string{"--source"}},
	{"target password with slash, DSN without database", map[string]string{"target": "root:" + dsnPassword + "/x@tcp(127.0.0.1:1)"}, nil, []string{"--target"}},
	{"bad source port", map[string]string{"source": "root:" + dsnPassword + "@tcp(127.0.0.1:99999)/srcdb"}, nil, []string{"--source", "port"}},
	{"unknown flag", nil, []string{"--frobnicate"}, []string{"frobnicate"}},
	{"extra argument", nil, []string{"leftover"}, []string{"unexpected", "leftover"}},
}

func TestRun_badUsage(t *testing.T) {
	for _, env := range []struct {
		name string
		set  bool
	}{{"dsn password", false}, {"env password", true}} {
		t.Run(env.name, func(t *testing.T) {
			if env.set {
				t.Setenv("VPLAYER_SOURCE_PASSWORD", envPassword)
				t.Setenv("VPLAYER_TARGET_PASSWORD", envPassword)
			}
			for _, tt := range badRunTests {
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
					// No connection was attempted.
					for _, w := range []string{"connection refused", "dial tcp", "not reachable", "127.0.0.1:1:"} {
						if strings.Contains(r.stderr, w) {
							t.Errorf("stderr %q contains %q: a connection was attempted", r.stderr, w)
						}
					}
					assertNoSecrets(t, r, dsnPassword, envPassword)
				})
			}
		})
	}
}

// TestRun_unreachable runs with a source and a target where nothing listens: a server that
// cannot be reached is not a failed preflight (exit 1 would tell a supervisor not to restart):
// the run stays up, logs each retry after --retry-delay naming the server, never prints a
// password, and exits 0 on SIGTERM.
func TestRun_unreachable(t *testing.T) {
	tests := []struct {
		name   string
		set    map[string]string
		setEnv bool
		want   string
	}{
		{"dsn password", nil, false, "preflight: source not reachable: "},
		{"env password", nil, true, "preflight: source not reachable: "},
		{"json logs", map[string]string{"log-format": "json"}, true, "preflight: source not reachable: "},
		{"source unreachable only", map[string]string{"target": "root:" + dsnPassword + "@tcp(127.0.0.1:2)/tgtdb"}, true, "preflight: source not reachable: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.setEnv {
				t.Setenv("VPLAYER_SOURCE_PASSWORD", envPassword)
				t.Setenv("VPLAYER_TARGET_PASSWORD", envPassword)
			}
			set := map[string]string{"retry-delay": "50ms"}
			for k, v := range tt.set {
				set[k] = v
			}
			args := runArgs(set)
			r := runUntilRetried(t, 6, args...)
			if r.code != cli.ExitOK {
				t.Errorf("Main(%q): exit %d after SIGTERM, want %d (%v)", args, r.code, cli.ExitOK, r)
			}
			if !strings.Contains(r.stderr, tt.want) || !strings.Contains(r.stderr, "will retry after 50ms") {
				t.Errorf("stderr %q, want %q and will retry after 50ms", r.stderr, tt.want)
			}
			assertNoSecrets(t, r, dsnPassword, envPassword)
		})
	}
}

// TestRun_sourceUnreachableTargetUp checks that a run waiting for its source writes nothing on
// the target.
func TestRun_sourceUnreachableTargetUp(t *testing.T) {
	_, target := mysqltest.Pair(t)
	name := mysqltest.DBName(t)
	db := mysqltest.DB(t, target, name)
	sidecar := name + "_vt"
	t.Setenv("VPLAYER_SOURCE_PASSWORD", envPassword)
	args := runArgs(map[string]string{"target": target.DSN(name), "sidecar-db": sidecar, "retry-delay": "50ms"})
	r := runUntilRetried(t, 6, args...)
	if r.code != cli.ExitOK {
		t.Errorf("Main(%q): exit %d after SIGTERM, want %d (%v)", args, r.code, cli.ExitOK, r)
	}
	if !strings.Contains(r.stderr, "source not reachable") || strings.Contains(r.stderr, "target not reachable") {
		t.Errorf("stderr %q, want it to blame the source only", r.stderr)
	}
	assertNoSecrets(t, r, dsnPassword, envPassword)
	var n int
	if err := db.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = ?", sidecar).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("sidecar database %s exists after a preflight waiting for the source, want nothing written", sidecar)
	}
}

// runUntilRetried calls cli.Main, waits until it has logged its first retry and then for n more
// retry delays (the repeats are folded by the log's rate limit), sends this process SIGTERM (Main
// has its signal handler installed by then) and returns Main's result, checking that the
// suppressed repeats logged at exit count at least n/3 more retries. It fails the test when Main
// returns before the signal.
func runUntilRetried(t *testing.T, n int, args ...string) result {
	t.Helper()
	const delay = 50 * time.Millisecond // the --retry-delay of the callers
	var stderr syncBuffer
	done := make(chan result, 1)
	go func() {
		var stdout bytes.Buffer
		code := cli.Main(args, &stdout, &stderr)
		done <- result{code, stdout.String(), stderr.String()}
	}()
	deadline := time.After(mainTimeout)
	for !strings.Contains(stderr.String(), "will retry after") {
		select {
		case r := <-done:
			t.Fatalf("Main(%q) returned while a server was unreachable, want it to retry: %v", args, r)
		case <-deadline:
			t.Fatalf("Main(%q) logged no retry within %v; stderr %q", args, mainTimeout, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	select {
	case r := <-done:
		t.Fatalf("Main(%q) returned while a server was unreachable, want it to retry: %v", args, r)
	case <-time.After(time.Duration(n) * delay):
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		m := regexp.MustCompile(`suppressed"?[=:](\d+)`).FindStringSubmatch(r.stderr)
		if m == nil {
			t.Errorf("stderr %q, want the retries folded by the rate limit counted at exit (suppressed=N)", r.stderr)
		} else if got, _ := strconv.Atoi(m[1]); got < n/3 {
			// Each retry also takes the dial and the log; a loaded machine fits fewer.
			t.Errorf("%d retries suppressed within %d retry delays, want at least %d", got, n, n/3)
		}
		return r
	case <-time.After(mainTimeout):
		t.Fatalf("Main(%q) did not return within %v of SIGTERM", args, mainTimeout)
		return result{}
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
