package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vplayer/vplayer/internal/eventually"
	"github.com/vplayer/vplayer/workflow"
)

// loggedErrors returns the count of Error rows (repeats counted) in the workflow's log.
func (e *env) loggedErrors() int {
	e.t.Helper()
	var n int
	if err := e.dstPool.QueryRowContext(e.ctx(), `SELECT COALESCE(SUM(l.count), 0) FROM _vt.vreplication_log l JOIN _vt.vreplication v ON v.id = l.vrepl_id
WHERE v.workflow = ? AND l.type = 'Error'`, e.workflow).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// TestPurgedPositionTerminal: the source's binary log after the workflow's position is purged
// while vplayer is down. The restarted vplayer ends when the retry after the first 1236 meets it
// again (state Error, exit 1, two errors, one retry), its message naming the cause and the fix.
func TestPurgedPositionTerminal(t *testing.T) {
	e := newEnv(t)
	e.execBoth("CREATE TABLE t (id INT NOT NULL PRIMARY KEY, v INT NOT NULL)")
	p := e.startVplayer()
	e.waitRunning(30 * time.Second)
	e.execOn(e.src, "INSERT INTO t VALUES (1, 1)")
	e.waitCaughtUp(30 * time.Second)
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Fatalf("vplayer exited with %d after SIGTERM, want 0", code)
	}
	e.execOn(e.src, "INSERT INTO t VALUES (2, 2)", "INSERT INTO t VALUES (3, 3)")
	e.execOn(e.srcPool, "FLUSH BINARY LOGS")
	var file string
	var pos uint64
	var rest [8]any
	for i := range rest {
		rest[i] = new(any)
	}
	row := e.srcPool.QueryRowContext(e.ctx(), "SHOW MASTER STATUS")
	if err := row.Scan(append([]any{&file, &pos}, rest[:2]...)...); err != nil {
		t.Fatal(err)
	}
	// The server keeps a file until its binlog checkpoint is written: purge until it is gone.
	eventually.Must(t, 30*time.Second, 100*time.Millisecond, "PURGE BINARY LOGS TO '"+file+"' to leave "+file+" the source's first", func() error {
		e.execOn(e.srcPool, "PURGE BINARY LOGS TO '"+file+"'")
		var first string
		if err := e.srcPool.QueryRowContext(e.ctx(), "SHOW BINARY LOGS").Scan(&first, new(any)); err != nil {
			t.Fatal(err)
		}
		if first != file {
			return fmt.Errorf("the first is %s", first)
		}
		return nil
	})
	t.Logf("purged the source's binary logs before %s", file)

	p = e.startVplayer()
	if code := p.wait(30 * time.Second); code != 1 {
		t.Fatalf("vplayer exited with %d on a purged position, want 1", code)
	}
	r := e.record()
	t.Logf("record: state %s, message %q", r.State, r.Message)
	for _, want := range []string{"terminal error: ", "ERROR 1236", "purged", "re-create the workflow from a new snapshot"} {
		if !strings.Contains(r.Message, want) {
			t.Errorf("message %q, want it to contain %q", r.Message, want)
		}
	}
	if r.State != workflow.StateError {
		t.Errorf("state %q, want Error", r.State)
	}
	if n, lines := e.loggedErrors(), strings.Count(p.out.String(), "error in stream"); n != 2 || lines != 2 {
		t.Errorf("%d errors in vreplication_log and %d 'error in stream' lines, want 2 and 2: one retry", n, lines)
	}
	if !strings.Contains(p.out.String(), "not retrying: terminal error") {
		t.Errorf("the second error is not reported as terminal:\n%s", p.out.String())
	}
}

// TestTargetTriggers: a trigger on a replicated target table fails preflight with one line
// naming it and the fix; with --allow-target-triggers the stream runs and the trigger fires
// for each replicated row; a trigger created while the stream runs ends it, as a terminal error,
// at its next attempt.
func TestTargetTriggers(t *testing.T) {
	const trigger = "CREATE TRIGGER t_audit AFTER INSERT ON t FOR EACH ROW INSERT INTO audit VALUES (NEW.id)"
	t.Run("refused", func(t *testing.T) {
		e := newEnv(t)
		e.execBoth("CREATE TABLE t (id INT NOT NULL PRIMARY KEY)")
		e.execOn(e.dst, "CREATE TABLE audit (id INT NOT NULL PRIMARY KEY)", trigger)
		p := e.startVplayer()
		if code := p.wait(30 * time.Second); code != 1 {
			t.Fatalf("vplayer exited with %d on a target trigger, want 1", code)
		}
		out := p.out.String()
		line := "target: triggers on replicated target tables would fire a second time (row events already carry their effects): " + e.db + ".t: t_audit: drop them on the target (DROP TRIGGER), or pass --allow-target-triggers"
		if !strings.Contains(out, "preflight failed") || !strings.Contains(out, line) {
			t.Errorf("output %q, want preflight failed and the line %q", out, line)
		}
	})
	t.Run("allowed", func(t *testing.T) {
		e := newEnv(t)
		e.execBoth("CREATE TABLE t (id INT NOT NULL PRIMARY KEY)")
		e.execOn(e.dst, "CREATE TABLE audit (id INT NOT NULL PRIMARY KEY)", trigger)
		p := e.startVplayer("--allow-target-triggers")
		e.waitRunning(30 * time.Second)
		e.execOn(e.src, "INSERT INTO t VALUES (1), (2), (3)")
		e.waitCaughtUp(30 * time.Second)
		e.assertEqual([]string{"t"})
		if got := e.count(e.dst, "audit"); got != 3 {
			t.Errorf("audit has %d rows on the target, want 3: the allowed trigger fires once per replicated row", got)
		}
		if out := p.out.String(); !strings.Contains(out, "allowed by --allow-target-triggers") || !strings.Contains(out, e.db+".t: t_audit") {
			t.Errorf("output %q, want a warning naming the allowed trigger", out)
		}
	})
	t.Run("created while running", func(t *testing.T) {
		e := newEnv(t)
		e.execBoth("CREATE TABLE t (id INT NOT NULL PRIMARY KEY)")
		e.execOn(e.dst, "CREATE TABLE audit (id INT NOT NULL PRIMARY KEY)")
		p := e.startVplayer()
		e.waitRunning(30 * time.Second)
		e.execOn(e.src, "INSERT INTO t VALUES (1)")
		e.waitCaughtUp(30 * time.Second)
		e.execOn(e.dst, trigger)
		// A broken binlog connection makes the stream start a new attempt.
		e.killBinlogDumps()
		if code := p.wait(30 * time.Second); code != 1 {
			t.Fatalf("vplayer exited with %d after a trigger appeared, want 1", code)
		}
		r := e.record()
		if r.State != workflow.StateError || !strings.HasPrefix(r.Message, "terminal error: target: triggers on replicated target tables") || !strings.Contains(r.Message, e.db+".t: t_audit") {
			t.Errorf("record: state %q message %q, want Error, terminal error naming %s.t: t_audit", r.State, r.Message, e.db)
		}
		if got := e.count(e.dst, "audit"); got != 0 {
			t.Errorf("audit has %d rows, want 0", got)
		}
		// Closing the attempt's syncer KILLs its connection, which the server had already
		// dropped: not an error.
		if out := p.out.String(); strings.Contains(out, `level=ERROR msg="kill connection"`) {
			t.Errorf("a KILL of the already dropped binlog connection logged at ERROR; output:\n%s", out)
		}
	})
}

// killBinlogDumps kills every binlog dump thread on the source, as a dropped connection would.
func (e *env) killBinlogDumps() {
	e.t.Helper()
	rows, err := e.srcPool.QueryContext(e.ctx(), "SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND = 'Binlog Dump'")
	if err != nil {
		e.t.Fatal(err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			e.t.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if len(ids) == 0 {
		e.t.Fatal("no binlog dump thread on the source")
	}
	for _, id := range ids {
		e.srcPool.ExecContext(e.ctx(), "KILL ?", id)
	}
}
