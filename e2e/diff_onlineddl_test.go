package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDiff_skipsOnlineDDLTables: a pt-online-schema-change in progress on the source has a shadow
// table (_t_new) the stream does not replicate; vplayer diff compares the workflow's tables only,
// so the shadow table, absent from the target, does not make the diff fail.
func TestDiff_skipsOnlineDDLTables(t *testing.T) {
	e := newEnv(t)
	e.execBoth("CREATE TABLE t (id INT NOT NULL PRIMARY KEY, v INT NOT NULL)")
	p := e.startVplayer()
	e.waitRunning(30 * time.Second)
	e.execOn(e.src, "INSERT INTO t VALUES (1, 1), (2, 2)", "CREATE TABLE _t_new LIKE t", "INSERT INTO _t_new SELECT * FROM t")
	e.waitCaughtUp(30 * time.Second)
	r := e.runDiff()
	if r.code != 0 || strings.Contains(r.stdout, "_t_new") {
		t.Errorf("vplayer diff exited %d and named _t_new:\n%s%s; want 0, the shadow table left out", r.code, r.stdout, r.stderr)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(30 * time.Second); code != 0 {
		t.Errorf("vplayer exited with %d, want 0", code)
	}
}
