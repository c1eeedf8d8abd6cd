package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFilePosMovesToGTID: a workflow started at a file:pos position (as one created while the
// source had no GTID yet records it) moves to the source's GTID position at its first
// transaction, so that it can resume by GTID on another server after a failover; the log says so.
func TestFilePosMovesToGTID(t *testing.T) {
	e := newEnv(t)
	e.execBoth("CREATE TABLE t (id INT PRIMARY KEY)")
	e.execOn(e.srcPool, "FLUSH BINARY LOGS")
	var file string
	var pos int64
	rows, err := e.srcPool.Query("SHOW MASTER STATUS")
	if err != nil {
		t.Fatal(err)
	}
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	for i := range vals {
		vals[i] = new(any)
	}
	vals[0], vals[1] = &file, &pos
	if !rows.Next() {
		t.Fatal("SHOW MASTER STATUS: no row")
	}
	if err := rows.Scan(vals...); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	p := e.startVplayer("--start-pos", fmt.Sprintf("%s:%d", file, 4))
	e.waitRunning(30 * time.Second)
	if got := e.record().Pos; !strings.HasPrefix(got, "FilePos/") {
		t.Fatalf("recorded position %q, want a FilePos one to start with", got)
	}
	e.execOn(e.src, "INSERT INTO t VALUES (1), (2)", "INSERT INTO t VALUES (3)")
	e.waitCaughtUp(30 * time.Second)
	if got, want := e.record().Pos, e.sourcePos().String(); got != want {
		t.Errorf("recorded position %q, want the source's GTID position %q", got, want)
	}
	e.assertEqual([]string{"t"})
	p.signal(syscall.SIGTERM)
	p.waitCode(10*time.Second, 0)
	if !strings.Contains(p.out.String(), "the source now logs GTIDs") {
		t.Errorf("no log line about the move to the GTID position:\n%s", p.out.String())
	}
}
