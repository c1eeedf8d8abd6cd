package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
// 1) and bad usage (exit 2) are not restarted, the stop timeout is above the 2s graceful stop, and
// systemd's watchdog outlasts several of vplayer's pings and stops it gracefully.
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
	// Type=notify: READY=1 after the preflight, the watchdog fed while the stream is live.
	if got, want := one("Service.Type")+" "+one("Service.NotifyAccess"), "notify main"; got != want {
		t.Errorf("Type and NotifyAccess %q, want %q", got, want)
	}
	wd, err := time.ParseDuration(one("Service.WatchdogSec"))
	if err != nil {
		t.Fatalf("WatchdogSec: %v", err)
	}
	if wd < 4*systemdStatusEvery {
		t.Errorf("WatchdogSec=%v, want at least 4 of vplayer's pings (every %v)", wd, systemdStatusEvery)
	}
	if got := one("Service.WatchdogSignal"); got != "SIGTERM" {
		t.Errorf("WatchdogSignal=%q, want SIGTERM: Go exits 2 on the default SIGABRT, which RestartPreventExitStatus keeps down", got)
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

// buildVplayer builds cmd/vplayer into a temporary directory of t, for the unit's ExecStart.
func buildVplayer(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "vplayer")
	if out, err := exec.Command("go", "build", "-o", path, "github.com/vplayer/vplayer/cmd/vplayer").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return path
}

// analyzableUnit returns systemd-analyze's path and the unit's text with ExecStart running a
// vplayer built from this module (verify checks the path is an executable file), skipping the
// test where systemd-analyze is not installed.
func analyzableUnit(t *testing.T) (analyze, binary, unit string) {
	t.Helper()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian package systemd); skipping the unit's verification")
	}
	b, err := os.ReadFile(filepath.Join(systemdDir, "vplayer@.service"))
	if err != nil {
		t.Fatal(err)
	}
	const installed = "/usr/local/bin/vplayer"
	if !strings.Contains(string(b), "ExecStart="+installed+" ") {
		t.Fatalf("vplayer@.service's ExecStart does not run %s", installed)
	}
	binary = buildVplayer(t)
	return analyze, binary, strings.Replace(string(b), "ExecStart="+installed+" ", "ExecStart="+binary+" ", 1)
}

// writeUnit writes text as the unit vplayer@orders.service in a new directory and returns its path.
func writeUnit(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "vplayer@orders.service")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSystemdUnit_verify runs systemd-analyze verify on an instance of the unit. verify exits 0
// on an unknown key or a bad value and only warns, so any warning naming the unit fails the test.
func TestSystemdUnit_verify(t *testing.T) {
	analyze, binary, unit := analyzableUnit(t)
	check := func(text string) (ok bool, out string) {
		t.Helper()
		o, err := exec.Command(analyze, "verify", "--man=no", writeUnit(t, text)).CombinedOutput()
		out = strings.TrimSpace(string(o))
		return err == nil && !strings.Contains(out, "vplayer@"), out
	}
	if ok, out := check(unit); !ok {
		t.Errorf("systemd-analyze verify vplayer@orders.service:\n%s", out)
	}
	// The check catches a misspelt key and a missing binary.
	for _, bad := range []struct{ name, from, to string }{
		{"a misspelt key", "\nRestart=", "\nRestrat="},
		{"a missing binary", "ExecStart=" + binary, "ExecStart=/nonexistent/vplayer"},
	} {
		if ok, _ := check(strings.Replace(unit, bad.from, bad.to, 1)); ok {
			t.Errorf("systemd-analyze verify passed the unit with %s", bad.name)
		}
	}
}

// maxExposure is the highest exposure level systemd-analyze security may give the unit: measured
// at 1.1 OK (6.5 MEDIUM before its hardening), with room for a rating that changes a little
// between systemd versions, and well under 2.0, where a missing system call filter or capability
// bound alone would bring it.
const maxExposure = 1.5

// exposureLine is systemd-analyze security's summary line.
var exposureLine = regexp.MustCompile(`Overall exposure level for vplayer@orders\.service: ([0-9.]+) ([A-Z]+)`)

// unitWarning is a warning of systemd's unit parser about one of the unit's lines.
var unitWarning = regexp.MustCompile(`vplayer@orders\.service:[0-9]+: .*`)

// TestSystemdUnit_security rates the unit with systemd-analyze security --offline (systemd 250
// and later) and checks the exposure level stays at most maxExposure, that the analysis reports
// no problem with the unit's lines, and that the docs quote the level measured.
func TestSystemdUnit_security(t *testing.T) {
	analyze, _, unit := analyzableUnit(t)
	security := func(text string) (level float64, rating, out string) {
		t.Helper()
		cmd := exec.Command(analyze, "security", "--offline=true", "--man=no", writeUnit(t, text))
		o, err := cmd.CombinedOutput()
		out = string(o)
		if err != nil {
			if strings.Contains(out, "--offline") || strings.Contains(out, "unrecognized option") {
				t.Skipf("this systemd-analyze has no --offline (systemd 250 and later):\n%s", out)
			}
			t.Fatalf("systemd-analyze security: %v\n%s", err, out)
		}
		m := exposureLine.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("systemd-analyze security printed no overall exposure level:\n%s", out)
		}
		level, err = strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		return level, m[2], out
	}
	level, rating, out := security(unit)
	if w := unitWarning.FindAllString(out, -1); len(w) > 0 {
		t.Errorf("systemd-analyze security warns about the unit's lines:\n%s", strings.Join(w, "\n"))
	}
	if level > maxExposure {
		t.Errorf("exposure level %.1f %s, want at most %.1f:\n%s", level, rating, maxExposure, out)
	}
	measured := fmt.Sprintf("%.1f %s", level, rating)
	for _, doc := range []string{"README.md", "docs/running.md", "deploy/systemd/vplayer@.service"} {
		if b, err := os.ReadFile(filepath.Join(repoRoot, doc)); err != nil {
			t.Error(err)
		} else if !strings.Contains(strings.Join(strings.Fields(string(b)), " "), measured) {
			t.Errorf("%s does not quote the exposure level measured, %q", doc, measured)
		}
	}
	// The checks catch a misspelt directive and a unit that lost its system call filter.
	if _, _, out := security(strings.Replace(unit, "\nProtectClock=", "\nProtectClocks=", 1)); !unitWarning.MatchString(out) {
		t.Errorf("no warning found for a misspelt directive:\n%s", out)
	}
	if bare, _, _ := security(strings.ReplaceAll(unit, "\nSystemCallFilter=", "\n#SystemCallFilter=")); bare <= maxExposure {
		t.Errorf("without its system call filter the unit rates %.1f, within the threshold %.1f", bare, maxExposure)
	}
}
