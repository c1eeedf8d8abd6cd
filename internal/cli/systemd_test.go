package cli

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// systemdDir holds the systemd unit of a workflow and its environment file's example.
var systemdDir = filepath.Join(repoRoot, "deploy", "systemd")

// unitSettings returns the unit file's KEY=value lines by section and key, in order.
func unitSettings(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s: line %q is not KEY=value", path, line)
			}
			settings[section+"."+k] = append(settings[section+"."+k], v)
		}
	}
	return settings
}

// TestSystemdUnit checks vplayer@.service against the command line: the instance name is the
// workflow, the example environment file's flags parse and validate with the real flag set and
// hold no password, the passwords come from the variables vplayer reads, a terminal error (exit
// 1) and bad usage (exit 2) are not restarted, and the stop timeout is above the 2s graceful stop.
func TestSystemdUnit(t *testing.T) {
	u := unitSettings(t, filepath.Join(systemdDir, "vplayer@.service"))
	one := func(key string) string {
		t.Helper()
		if v := u[key]; len(v) == 1 {
			return v[0]
		}
		t.Fatalf("vplayer@.service has %d %s settings, want one", len(u[key]), key)
		return ""
	}
	start := strings.Fields(one("Service.ExecStart"))
	if want := []string{"run", "--workflow=%i", "$VPLAYER_ARGS"}; len(start) != 4 || !slices.Equal(start[1:], want) {
		t.Errorf("ExecStart=%q, want a vplayer binary and %q", start, want)
	}
	if got, want := one("Service.EnvironmentFile"), "/etc/vplayer/%i.env"; got != want {
		t.Errorf("EnvironmentFile=%q, want %q", got, want)
	}
	if got := one("Service.Restart"); got != "on-failure" {
		t.Errorf("Restart=%q, want on-failure", got)
	}
	prevent := strings.Fields(one("Service.RestartPreventExitStatus"))
	for _, code := range []int{ExitError, ExitUsage} {
		if !slices.Contains(prevent, strconv.Itoa(code)) {
			t.Errorf("RestartPreventExitStatus=%q does not hold exit code %d: systemd would restart what a restart cannot fix", prevent, code)
		}
	}
	if got := one("Service.KillSignal"); got != "SIGTERM" {
		t.Errorf("KillSignal=%q, want SIGTERM (the graceful stop)", got)
	}
	stop, err := time.ParseDuration(one("Service.TimeoutStopSec"))
	if err != nil {
		t.Fatalf("TimeoutStopSec: %v", err)
	}
	if stop <= 2*time.Second || stop > 30*time.Second {
		t.Errorf("TimeoutStopSec=%v, want above the 2s graceful stop and at most 30s", stop)
	}

	// The example environment file.
	env := map[string]string{}
	b, err := os.ReadFile(filepath.Join(systemdDir, "orders.env.example"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			k, v, _ := strings.Cut(line, "=")
			env[k] = v
		}
	}
	for _, k := range []string{"VPLAYER_SOURCE_PASSWORD", "VPLAYER_TARGET_PASSWORD", "VPLAYER_ARGS"} {
		if _, ok := env[k]; !ok {
			t.Errorf("orders.env.example does not set %s", k)
		}
	}
	args := append([]string{"--workflow=orders"}, strings.Fields(env["VPLAYER_ARGS"])...)
	fs, f := newRunFlags(io.Discard)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("VPLAYER_ARGS %q: %v", env["VPLAYER_ARGS"], err)
	}
	if err := f.validate(); err != nil {
		t.Errorf("VPLAYER_ARGS %q do not validate: %v", env["VPLAYER_ARGS"], err)
	}
	for name, dsn := range map[string]string{"--source": f.source, "--target": f.target} {
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			t.Errorf("%s %q: %v", name, dsn, err)
		} else if cfg.Passwd != "" {
			t.Errorf("%s DSN in VPLAYER_ARGS holds a password: it belongs in the password variables", name)
		}
	}
}

// TestSystemdUnit_verify runs systemd-analyze verify on an instance of the unit, with ExecStart
// pointed at an executable that exists here (this test's binary: verify checks the path is an
// executable file, not what it does). verify exits 0 on an unknown key or a bad value and only
// warns, so any warning naming the unit fails the test.
func TestSystemdUnit_verify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian package systemd); skipping the unit's verification")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(systemdDir, "vplayer@.service"))
	if err != nil {
		t.Fatal(err)
	}
	const binary = "/usr/local/bin/vplayer"
	if !strings.Contains(string(b), "ExecStart="+binary+" ") {
		t.Fatalf("vplayer@.service's ExecStart does not run %s", binary)
	}
	unit := strings.Replace(string(b), "ExecStart="+binary+" ", "ExecStart="+self+" ", 1)
	check := func(text string) (ok bool, out string) {
		t.Helper()
		path := filepath.Join(t.TempDir(), "vplayer@orders.service")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		o, err := exec.Command(analyze, "verify", "--man=no", path).CombinedOutput()
		out = strings.TrimSpace(string(o))
		return err == nil && !strings.Contains(out, "vplayer@"), out
	}
	if ok, out := check(unit); !ok {
		t.Errorf("systemd-analyze verify vplayer@orders.service:\n%s", out)
	}
	// The check catches a misspelt key and a missing binary.
	for _, bad := range []struct{ name, from, to string }{
		{"a misspelt key", "\nRestart=", "\nRestrat="},
		{"a missing binary", "ExecStart=" + self, "ExecStart=/nonexistent/vplayer"},
	} {
		if ok, _ := check(strings.Replace(unit, bad.from, bad.to, 1)); ok {
			t.Errorf("systemd-analyze verify passed the unit with %s", bad.name)
		}
	}
}
