package e2e

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/internal/eventually"
)

// TestOnDDLExec_endAfterDDL: with --on-ddl exec, an attempt that ends after the target ran a DDL
// and before it recorded the DDL's position (a crash, a lost connection) does not leave the
// stream failing on the DDL forever: the retry finds the DDL marked started, takes the error of
// running it again (what it creates exists, what it drops is gone) for a sign that it ran, logs
// that, and goes on. The target ends equal to the source, the DDL applied once.
func TestOnDDLExec_endAfterDDL(t *testing.T) {
	tests := []struct {
		name    string
		ddl     string
		after   []string // source writes after the DDL
		tables  []string // compared at the end
		columns string   // of t on the target at the end
	}{
		{"add_column", "ALTER TABLE t ADD COLUMN c INT NULL",
			[]string{"INSERT INTO t VALUES (3, 3, 33)", "UPDATE t SET c = 11 WHERE id = 1"}, []string{"t"}, "id,a,c"},
		{"drop_column", "ALTER TABLE t DROP COLUMN a",
			[]string{"INSERT INTO t VALUES (3)", "DELETE FROM t WHERE id = 2"}, []string{"t"}, "id"},
		{"add_index", "ALTER TABLE t ADD INDEX ia (a)",
			[]string{"INSERT INTO t VALUES (3, 3)"}, []string{"t"}, "id,a"},
		{"create_table", "CREATE TABLE t2 (id INT NOT NULL PRIMARY KEY, v INT NULL)",
			[]string{"INSERT INTO t2 VALUES (1, 1)", "INSERT INTO t VALUES (3, 3)"}, []string{"t", "t2"}, "id,a"},
		{"rename_table", "RENAME TABLE t TO t_old",
			[]string{"INSERT INTO t_old VALUES (3, 3)"}, []string{"t_old"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.execBoth("CREATE TABLE t (id INT NOT NULL PRIMARY KEY, a INT NULL)", "INSERT INTO t VALUES (1, 1), (2, 2)")
			var log syncBuffer
			var ended atomic.Int32
			cfg := e.streamConfig()
			cfg.OnDDL = "exec"
			cfg.Logger = newCaptureLogger(&log, e.workflow)
			cfg.AfterDDL = func() error {
				if ended.Add(1) == 1 {
					return errors.New("injected end of the attempt after the DDL")
				}
				return nil
			}
			stop := e.runStream(cfg)
			e.waitRunning(30 * time.Second)
			e.execOn(e.src, tt.ddl)
			e.execOn(e.src, tt.after...)
			e.waitCaughtUp(30 * time.Second)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			out := log.String()
			if ended.Load() < 1 {
				t.Fatalf("the DDL never ran on the target; log:\n%s", out)
			}
			if !strings.Contains(out, "injected end of the attempt after the DDL") {
				t.Errorf("the injected end was not reported; log:\n%s", out)
			}
			if !strings.Contains(out, "DDL already executed by an attempt that ended before recording it") {
				t.Errorf("the retry did not say it skipped the DDL; log:\n%s", out)
			}
			if got := e.columnList(e.dstPool, e.db, "t"); got != tt.columns {
				t.Errorf("target columns of t = %q, want %q", got, tt.columns)
			}
			e.assertIdentical(e.db, tt.tables)
			if r := e.record(); r.State != "Stopped" || r.Message != "" {
				t.Errorf("record: state %q message %q, want Stopped and no message", r.State, r.Message)
			}
			if mark := e.ddlMark(); mark != "" {
				t.Errorf("ddl_pos = %q after the stream moved past the DDL, want none", mark)
			}
		})
	}
}

// TestOnDDLExec_refusedDDLNotSkipped: a DDL the target refuses (here a column an operator already
// added by hand) is not mistaken for one an earlier attempt ran: the refusal clears the mark, so
// every retry fails on it again and the position stays before it.
func TestOnDDLExec_refusedDDLNotSkipped(t *testing.T) {
	e := newEnv(t)
	e.execBoth("CREATE TABLE t (id INT NOT NULL PRIMARY KEY, a INT NULL)")
	e.execOn(e.dst, "ALTER TABLE t ADD COLUMN c INT NULL")
	cfg := e.streamConfig()
	cfg.OnDDL = "exec"
	stop := e.runStream(cfg)
	e.waitRunning(30 * time.Second)
	before := e.sourcePos()
	e.execOn(e.src, "ALTER TABLE t ADD COLUMN c INT NULL")
	atDDL := e.sourcePos()
	// Three attempts refused by the target: the first, and two retries after it.
	eventually.Must(t, 30*time.Second, 50*time.Millisecond, "3 refusals of the DDL logged", func() error {
		if refused := e.logCount("Duplicate column name"); refused < 3 {
			return fmt.Errorf("%d logged", refused)
		}
		return nil
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	r := e.record()
	pos, err := binlog.ParsePosition(r.Pos, "mariadb")
	if err != nil || !pos.Contains(before) || pos.Contains(atDDL) {
		t.Errorf("record pos = %q, want %s: before the refused DDL", r.Pos, before)
	}
	if mark := e.ddlMark(); mark != "" {
		t.Errorf("ddl_pos = %q after the target refused the DDL, want none", mark)
	}
}

// ddlMark returns the workflow's ddl_pos, "" when NULL.
func (e *env) ddlMark() string {
	e.t.Helper()
	var mark string
	if err := e.dstPool.QueryRowContext(e.ctx(), "SELECT COALESCE(ddl_pos, '') FROM _vt.vreplication WHERE workflow = ?", e.workflow).Scan(&mark); err != nil {
		e.t.Fatal(err)
	}
	return mark
}

// logCount returns how many errors containing want _vt.vreplication_log holds for the workflow,
// repeats counted.
func (e *env) logCount(want string) int {
	e.t.Helper()
	var n int
	if err := e.dstPool.QueryRowContext(e.ctx(), `SELECT COALESCE(SUM(l.count), 0) FROM _vt.vreplication_log l JOIN _vt.vreplication v ON v.id = l.vrepl_id
WHERE v.workflow = ? AND l.message LIKE CONCAT('%', ?, '%')`, e.workflow, want).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}
