package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStartPosWithRecord: once a workflow has a record, its position wins: `--start-pos current`
// is ignored (and logged), and an explicit --start-pos that differs from the record's position
// exits 1 with a message that says so and how to go on, without touching the record.
func TestStartPosWithRecord(t *testing.T) {
	e := newEnv(t)
	e.execBoth("CREATE TABLE t (id INT PRIMARY KEY)")
	p := e.startVplayer()
	e.waitRunning(30 * time.Second)
	e.execOn(e.src, "INSERT INTO t VALUES (1)")
	e.waitCaughtUp(30 * time.Second)
	p.signal(syscall.SIGTERM)
	p.waitCode(10*time.Second, 0)
	recorded := e.record().Pos

	e.execOn(e.src, "INSERT INTO t VALUES (2)")
	other := strings.TrimPrefix(e.sourcePos().String(), "MariaDB/")
	code, out := runProc(t, nil, 30*time.Second, "run", "--workflow", e.workflow, "--source", e.source.DSN(e.db),
		"--target", e.target.DSN(e.db), "--start-pos", other)
	if code != 1 || !strings.Contains(out, "differs from workflow") || !strings.Contains(out, "drop --start-pos to resume") {
		t.Errorf("--start-pos %s on a record at %s: exit %d, output:\n%s\nwant exit 1 naming the difference", other, recorded, code, out)
	}
	if got := e.record().Pos; got != recorded {
		t.Errorf("record's position %q after the refused run, want %q unchanged", got, recorded)
	}

	p2 := e.startVplayer("--start-pos", "current")
	e.waitCaughtUp(30 * time.Second)
	e.assertEqual([]string{"t"})
	p2.signal(syscall.SIGTERM)
	p2.waitCode(10*time.Second, 0)
	if !strings.Contains(p2.out.String(), "--start-pos current ignored") {
		t.Errorf("no log line saying --start-pos current was ignored:\n%s", p2.out.String())
	}
}
