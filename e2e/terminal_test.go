package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestDuplicateKeyTerminal: a row written directly on the target collides with a replicated
// insert. Whatever path the applier takes for the table (netted per primary key, or grouped when
// another unique key exists), the collision is a duplicate-key error, never a silent overwrite:
// state Error, message "terminal error: ...", exit code 1, one error logged and no retry, the
// target's row left as it was.
func TestDuplicateKeyTerminal(t *testing.T) {
	tests := []struct {
		name   string
		create string
		direct string // written on the target only
		source string // replicated; collides with direct
		check  string // selects the directly written row's value on the target
		want   int
	}{
		{"primary_key_insert", "CREATE TABLE t (id INT NOT NULL PRIMARY KEY, v INT NOT NULL)",
			"INSERT INTO t VALUES (5, 99)", "INSERT INTO t VALUES (4, 4), (5, 5)", "SELECT v FROM t WHERE id = 5", 99},
		{"primary_key_update_moves_key", "CREATE TABLE t (id INT NOT NULL PRIMARY KEY, v INT NOT NULL)",
			"INSERT INTO t VALUES (5, 99)", "UPDATE t SET id = 5 WHERE id = 1", "SELECT v FROM t WHERE id = 5", 99},
		{"unique_key_insert", "CREATE TABLE t (id INT NOT NULL PRIMARY KEY, v INT NOT NULL, UNIQUE KEY (v))",
			"INSERT INTO t VALUES (50, 99)", "INSERT INTO t VALUES (5, 99)", "SELECT id FROM t WHERE v = 99", 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.execBoth(tt.create)
			e.execBoth("INSERT INTO t VALUES (1, 1)")
			p := e.startVplayer()
			e.waitCaughtUp(30 * time.Second)
			e.execOn(e.dst, tt.direct)
			e.execOn(e.src, tt.source)
			if code := p.wait(30 * time.Second); code != 1 {
				t.Fatalf("vplayer exited with %d on a duplicate key, want 1", code)
			}
			r := e.record()
			t.Logf("record: state %s, message %q", r.State, r.Message)
			if r.State != "Error" || !strings.HasPrefix(r.Message, "terminal error: ") || !strings.Contains(r.Message, "Duplicate entry") {
				t.Errorf("record: state %q message %q, want Error, terminal error: ... Duplicate entry ...", r.State, r.Message)
			}
			var got int
			if err := e.dst.QueryRowContext(e.ctx(), tt.check).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("%s on the target = %d, want %d: the replicated change overwrote the target's row", tt.check, got, tt.want)
			}
			var logged int
			if err := e.dstPool.QueryRowContext(e.ctx(), `SELECT COALESCE(SUM(l.count), 0) FROM _vt.vreplication_log l JOIN _vt.vreplication v ON v.id = l.vrepl_id
WHERE v.workflow = ? AND l.type = 'Error'`, e.workflow).Scan(&logged); err != nil {
				t.Fatal(err)
			}
			if out := p.out.String(); logged != 1 || strings.Count(out, "error in stream") != 1 {
				t.Errorf("%d errors in vreplication_log (counting repeats) and %d 'error in stream' log lines, want one of each: no retry", logged, strings.Count(out, "error in stream"))
			}
		})
	}
}

// TestFenceShapedDataErrorTerminal: a replicated row the target refuses with the same error a
// fenced record write fails with (a NOT NULL column named pos set to NULL) is, once the record
// shows the lease is still this process's, the data error it is: terminal, not retried.
func TestFenceShapedDataErrorTerminal(t *testing.T) {
	e := newEnv(t)
	e.execOn(e.src, "CREATE TABLE t (id INT NOT NULL PRIMARY KEY, pos INT NULL)")
	e.execOn(e.dst, "CREATE TABLE t (id INT NOT NULL PRIMARY KEY, pos INT NOT NULL)")
	p := e.startVplayer()
	e.waitRunning(30 * time.Second)
	e.execOn(e.src, "INSERT INTO t VALUES (1, NULL)")
	if code := p.wait(30 * time.Second); code != 1 {
		t.Fatalf("vplayer exited with %d on a NULL for a NOT NULL column, want 1", code)
	}
	r := e.record()
	if r.State != "Error" || !strings.HasPrefix(r.Message, "terminal error: ") || !strings.Contains(r.Message, "Column 'pos' cannot be null") {
		t.Errorf("record: state %q message %q, want Error, terminal error: ... Column 'pos' cannot be null", r.State, r.Message)
	}
	if out := p.out.String(); strings.Count(out, "error in stream") != 1 || strings.Contains(out, "lost ownership") {
		t.Errorf("want one 'error in stream' line and no lost ownership; output:\n%s", out)
	}
}
