package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vplayer/vplayer/internal/eventually"
	"github.com/vplayer/vplayer/workflow"
)

// stateLog returns this workflow's State rows of vreplication_log, oldest first, as
// "state: message".
func (e *env) stateLog() []string {
	e.t.Helper()
	rows, err := e.dstPool.QueryContext(e.ctx(), `SELECT l.state, l.message FROM _vt.vreplication_log l
  JOIN _vt.vreplication v ON v.id = l.vrepl_id WHERE v.workflow = ? AND l.type = 'State' ORDER BY l.id`, e.workflow)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var state, msg string
		if err := rows.Scan(&state, &msg); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, state+": "+msg)
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// waitStateRows waits until the workflow's log holds n State rows.
func (e *env) waitStateRows(n int, timeout time.Duration) {
	e.t.Helper()
	eventually.Must(e.t, timeout, 50*time.Millisecond, fmt.Sprintf("%d State rows in vreplication_log", n), func() error {
		if got := e.stateLog(); len(got) < n {
			return fmt.Errorf("%d rows:\n%s", len(got), strings.Join(got, "\n"))
		}
		return nil
	})
}

// TestStateLog: every state change of the workflow adds a State row to vreplication_log (SPEC 5,
// as Vitess keeps them): started, stopped by a signal, started again, stopped by vplayer stop,
// started again and stopped at --stop-pos.
func TestStateLog(t *testing.T) {
	e := newEnv(t)
	e.execBoth("CREATE TABLE t (id INT PRIMARY KEY)")
	stop := e.runStream(e.streamConfig())
	e.waitRunning(30 * time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	stop = e.runStream(e.streamConfig())
	e.waitRunning(30 * time.Second)
	rec := e.record()
	if err := workflow.New(e.dstPool, "_vt").SetState(e.ctx(), rec.ID, workflow.StateStopped, workflow.StopRequestedMessage); err != nil {
		t.Fatal(err)
	}
	e.waitStateRows(4, 10*time.Second) // the stream noticed and stopped by itself
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	e.execOn(e.src, "INSERT INTO t VALUES (1)")
	cfg := e.streamConfig()
	cfg.StopPos = e.sourcePos().String()
	stop = e.runStream(cfg)
	e.waitStateRows(6, 30*time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	got := e.stateLog()
	t.Logf("State rows:\n%s", strings.Join(got, "\n"))
	want := []string{"Running: Running at MariaDB/", "Stopped: Stopped by a signal",
		"Running: Running at MariaDB/", "Stopped: Stopped by vplayer stop",
		"Running: Running at MariaDB/", "Stopped: Stopped at position MariaDB/"}
	if len(got) != len(want) {
		t.Fatalf("%d State rows, want %d", len(got), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("State row %d is %q, want it to start with %q", i, got[i], want[i])
		}
	}
	for i, prev := range []string{"was Init", "was Stopped", "was Stopped"} {
		if !strings.Contains(got[2*i], prev) {
			t.Errorf("State row %d %q does not say %q", 2*i, got[2*i], prev)
		}
	}
}
