package e2e

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vplayer/vplayer/internal/eventually"
	"github.com/vplayer/vplayer/internal/mysqld"
	"github.com/vplayer/vplayer/workflow"
)

// createUser creates user@'%' with password on s, with the grants, and drops it at the end of the
// test. On a binlog source the statements stay out of the binary log.
func createUser(t *testing.T, s *mysqld.Server, user, password string, grants ...string) {
	t.Helper()
	db, err := s.DB("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stmts := append([]string{
		"SET SESSION sql_log_bin = 0",
		fmt.Sprintf("DROP USER IF EXISTS '%s'@'%%'", user),
		fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'", user, password),
	}, grants...)
	for _, q := range stmts {
		if _, err := conn.ExecContext(context.Background(), strings.ReplaceAll(q, "{user}", "'"+user+"'@'%'")); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		db, err := s.DB("")
		if err != nil {
			return
		}
		defer db.Close()
		conn, err := db.Conn(context.Background())
		if err != nil {
			return
		}
		defer conn.Close()
		conn.ExecContext(context.Background(), "SET SESSION sql_log_bin = 0")
		conn.ExecContext(context.Background(), fmt.Sprintf("DROP USER IF EXISTS '%s'@'%%'", user))
	})
}

// recordIn returns the workflow's record in the sidecar database, or a zero record while there
// is none.
func (e *env) recordIn(sidecar string) workflow.Record {
	r, _ := workflow.New(e.dstPool, sidecar).Get(e.ctx(), e.workflow)
	return r
}

// dumpIn returns every column of the workflow's record and of its log rows, as text.
func (e *env) dumpIn(sidecar string) string {
	e.t.Helper()
	var b strings.Builder
	for _, q := range []string{
		"SELECT * FROM " + sidecar + ".vreplication WHERE workflow = ?",
		"SELECT l.* FROM " + sidecar + ".vreplication_log l JOIN " + sidecar + ".vreplication v ON v.id = l.vrepl_id WHERE v.workflow = ?",
	} {
		rows, err := e.dstPool.QueryContext(e.ctx(), q, e.workflow)
		if err != nil {
			e.t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]sql.RawBytes, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				e.t.Fatal(err)
			}
			for i, v := range vals {
				fmt.Fprintf(&b, "%s=%s\n", cols[i], v)
			}
		}
		rows.Close()
	}
	return b.String()
}

// TestNoPasswordInOutputs runs vplayer with passwords given through VPLAYER_SOURCE_PASSWORD and
// VPLAYER_TARGET_PASSWORD to users created with them, through a stall, status, stop and /metrics,
// and looks for the passwords in every output: the logs, status (table and JSON), the errors,
// the record and its log rows, /metrics and /healthz, and the process's command line.
func TestNoPasswordInOutputs(t *testing.T) {
	e := newEnv(t)
	e.createKV("int")
	for _, db := range []*sql.DB{e.src, e.dst} {
		if _, err := db.ExecContext(e.ctx(), "INSERT INTO kv VALUES (1, 1)"); err != nil {
			t.Fatal(err)
		}
	}
	suffix := make([]byte, 4)
	rand.Read(suffix)
	tag := hex.EncodeToString(suffix)
	srcPass, dstPass := "Src-"+tag+"-pw!", "Dst-"+tag+"-pw!"
	srcUser, dstUser := "vps_"+tag, "vpt_"+tag
	createUser(t, e.source, srcUser, srcPass, "GRANT REPLICATION SLAVE, REPLICATION CLIENT, SELECT ON *.* TO {user}")
	sidecar := "vt_" + tag
	createUser(t, e.target, dstUser, dstPass,
		"GRANT ALL ON `"+e.db+"`.* TO {user}", "GRANT ALL ON `"+sidecar+"`.* TO {user}")
	srcDSN := fmt.Sprintf("%s@tcp(%s)/%s", srcUser, e.source.Addr(), e.db)
	dstDSN := fmt.Sprintf("%s@tcp(%s)/%s", dstUser, e.target.Addr(), e.db)
	env := []string{"VPLAYER_SOURCE_PASSWORD=" + srcPass, "VPLAYER_TARGET_PASSWORD=" + dstPass}

	var outputs []string
	check := func(what, s string) {
		t.Helper()
		outputs = append(outputs, what)
		for _, pw := range []string{srcPass, dstPass, tag + "-pw"} {
			if strings.Contains(s, pw) {
				t.Errorf("%s shows a password (%q):\n%s", what, pw, s)
			}
		}
	}

	// A failed run first: the right user with a wrong password must fail without echoing it.
	code, out := runProc(t, []string{"VPLAYER_SOURCE_PASSWORD=" + srcPass + "x", "VPLAYER_TARGET_PASSWORD=" + dstPass},
		30*time.Second, "run", "--workflow", e.workflow, "--source", srcDSN, "--target", dstDSN, "--sidecar-db", sidecar, "--start-pos", "current")
	if code != 1 || !strings.Contains(out, "Access denied") {
		t.Errorf("run with a wrong source password: exit %d, want 1 and access denied:\n%s", code, out)
	}
	check("output of the run with a wrong password", out)

	p := startProc(t, env, "run", "--workflow", e.workflow, "--source", srcDSN, "--target", dstDSN, "--sidecar-db", sidecar, "--start-pos", "current",
		"--metrics-addr", "127.0.0.1:0", "--vplayer-progress-deadline", "1s", "--retry-delay", "300ms", "--log-format", "json")
	addr := p.metricsAddr(30 * time.Second)
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.cmd.Process.Pid)); err == nil {
		check("the process's command line", string(b))
	}
	eventually.Must(t, 30*time.Second, 50*time.Millisecond, "the workflow Running", func() error {
		if r := e.recordIn(sidecar); r.State != "Running" {
			return fmt.Errorf("state %q, message %q; output:\n%s", r.State, r.Message, p.out.String())
		}
		return nil
	})

	// An error: a stall on a locked row, reported in the log, the record and /healthz.
	release := e.lockRow("SELECT * FROM " + e.db + ".kv WHERE id = 1 FOR UPDATE")
	if _, err := e.src.ExecContext(e.ctx(), "UPDATE kv SET v = 2 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	eventually.Must(t, 15*time.Second, 50*time.Millisecond, "a stall in the record's message", func() error {
		if msg := e.recordIn(sidecar).Message; !strings.Contains(msg, "stalled") {
			return fmt.Errorf("message %q; output:\n%s", msg, p.out.String())
		}
		return nil
	})
	code, body := httpGet("http://" + addr + "/healthz")
	if code != http.StatusServiceUnavailable {
		t.Errorf("/healthz during the stall: %d %q, want 503", code, body)
	}
	check("/healthz", body)
	_, metricsBody := getMetrics(t, addr)
	check("/metrics", metricsBody)

	// The stall is retried, not terminal: the workflow stays Running, which status exits 0 for;
	// an unknown workflow exits 5 (cli.ExitStatusNotFound).
	for _, tc := range []struct {
		args     []string
		wantCode int
	}{
		{[]string{"status", "--target", dstDSN, "--sidecar-db", sidecar}, 0},
		{[]string{"status", "--target", dstDSN, "--sidecar-db", sidecar, "--json"}, 0},
		{[]string{"status", "--target", dstDSN, "--sidecar-db", sidecar, "--workflow", "nope"}, 5},
	} {
		what := strings.TrimSpace("vplayer status " + strings.Join(tc.args[5:], " "))
		code, out := runProc(t, env, 15*time.Second, tc.args...)
		if code != tc.wantCode {
			t.Errorf("%s: exit %d, want %d:\n%s", what, code, tc.wantCode, out)
		}
		check(what, out)
	}
	release()
	eventually.Must(t, 20*time.Second, 50*time.Millisecond, "the update applied after the release", func() error {
		if n := e.count(e.dst, "kv WHERE v = 2"); n != 1 {
			return fmt.Errorf("%d rows with v = 2; output:\n%s", n, p.out.String())
		}
		return nil
	})
	code, out = runProc(t, env, 15*time.Second, "stop", "--target", dstDSN, "--sidecar-db", sidecar, "--workflow", e.workflow)
	if code != 0 {
		t.Errorf("vplayer stop: exit %d:\n%s", code, out)
	}
	check("vplayer stop", out)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("vplayer run exited with %d after vplayer stop, want 0", code)
	}
	log := p.out.String()
	if !strings.Contains(log, "error in stream") {
		t.Errorf("the run's log has no error line, want the stall logged:\n%s", log)
	}
	check("the run's log", log)
	check("the record and its log rows", e.dumpIn(sidecar))
	t.Logf("checked: %s", strings.Join(outputs, "; "))
}

var servingProfiles = regexp.MustCompile(`msg="serving profiles".* addr=(\S+)`)

// TestPprofHidesCommandLine runs vplayer with both passwords inline in its DSNs, where ps shows
// them, and --pprof-addr: the profiles are served, but not /debug/pprof/cmdline, and no profile
// page shows a password; --metrics-addr serves no profile at all. The servers are unreachable:
// the process waits for them, serving, until SIGTERM.
func TestPprofHidesCommandLine(t *testing.T) {
	suffix := make([]byte, 4)
	rand.Read(suffix)
	pw := "Inline-" + hex.EncodeToString(suffix) + "-pw"
	p := startProc(t, nil, "run", "--workflow", "pprof", "--start-pos", "current", "--retry-delay", "100ms",
		"--source", "repl:"+pw+"@tcp(127.0.0.1:1)/shop", "--target", "vplayer:"+pw+"@tcp(127.0.0.1:1)/shop",
		"--metrics-addr", "127.0.0.1:0", "--pprof-addr", "127.0.0.1:0")
	metricsAddr := p.metricsAddr(30 * time.Second)
	var m []string
	eventually.Must(t, 30*time.Second, 20*time.Millisecond, "vplayer to log its profiles address", func() error {
		out := p.out.String()
		if m = servingProfiles.FindStringSubmatch(out); m == nil {
			return errors.New("output:\n" + out)
		}
		return nil
	})
	pprofAddr := m[1]
	// The test means something only if the command line holds the password.
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.cmd.Process.Pid)); err == nil && !strings.Contains(string(b), pw) {
		t.Fatalf("the process's command line lacks the inline password: %q", b)
	}

	if code, body := httpGet("http://" + pprofAddr + "/debug/pprof/cmdline"); code != http.StatusNotFound || strings.Contains(body, pw) {
		t.Errorf("/debug/pprof/cmdline: %d %q, want 404 without the command line", code, body)
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=2", "/debug/pprof/symbol"} {
		code, body := httpGet("http://" + pprofAddr + path)
		if code != http.StatusOK {
			t.Errorf("--pprof-addr %s: %d, want 200", path, code)
		}
		if strings.Contains(body, pw) {
			t.Errorf("--pprof-addr %s shows the password", path)
		}
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline"} {
		if code, _ := httpGet("http://" + metricsAddr + path); code != http.StatusNotFound {
			t.Errorf("--metrics-addr %s: %d, want 404: the profiles are served on --pprof-addr only", path, code)
		}
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("vplayer exited with %d after SIGTERM, want 0", code)
	}
	if strings.Contains(p.out.String(), pw) {
		t.Errorf("the run's log shows the password:\n%s", p.out.String())
	}
}
