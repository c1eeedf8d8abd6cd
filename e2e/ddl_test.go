package e2e

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/vplayer/vplayer/binlog"
)

// execBoth runs each statement on both sides.
func (e *env) execBoth(stmts ...string) {
	e.t.Helper()
	for _, q := range stmts {
		for _, db := range []*sql.DB{e.src, e.dst} {
			if _, err := db.ExecContext(e.ctx(), q); err != nil {
				e.t.Fatalf("%s: %v", q, err)
			}
		}
	}
}

// execOn runs each statement on db.
func (e *env) execOn(db *sql.DB, stmts ...string) {
	e.t.Helper()
	for _, q := range stmts {
		if _, err := db.ExecContext(e.ctx(), q); err != nil {
			e.t.Fatalf("%s: %v", q, err)
		}
	}
}

// execTxn runs stmts on db in one transaction.
func (e *env) execTxn(db *sql.DB, stmts ...string) {
	e.t.Helper()
	tx, err := db.BeginTx(e.ctx(), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	defer tx.Rollback()
	for _, q := range stmts {
		if _, err := tx.ExecContext(e.ctx(), q); err != nil {
			e.t.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		e.t.Fatal(err)
	}
}

// hasIndex reports whether table of schema has an index named index on db's server.
func (e *env) hasIndex(db *sql.DB, schema, table, index string) bool {
	e.t.Helper()
	var n int
	if err := db.QueryRowContext(e.ctx(), "SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = ?", schema, table, index).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n > 0
}

// columnList returns the columns of schema.table on db's server, comma-separated, in order.
func (e *env) columnList(db *sql.DB, schema, table string) string {
	e.t.Helper()
	var s sql.NullString
	if err := db.QueryRowContext(e.ctx(), "SELECT GROUP_CONCAT(COLUMN_NAME ORDER BY ORDINAL_POSITION) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", schema, table).Scan(&s); err != nil {
		e.t.Fatal(err)
	}
	return s.String
}

// TestOnDDL: each --on-ddl policy leaves the record and the target as SPEC section 7 says.
func TestOnDDL(t *testing.T) {
	t.Run("ignore", func(t *testing.T) {
		e := newEnv(t)
		e.execBoth("CREATE TABLE t (id INT NOT NULL PRIMARY KEY, a INT NULL)")
		stop := e.runStream(e.streamConfig())
		e.waitRunning(30 * time.Second)
		e.execOn(e.src, "INSERT INTO t VALUES (1, 1)", "ALTER TABLE t ADD INDEX ia (a)")
		e.waitCaughtUp(30 * time.Second) // the position advances past the DDL
		e.execOn(e.src, "INSERT INTO t VALUES (2, 2)")
		e.waitCaughtUp(30 * time.Second)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if e.hasIndex(e.dstPool, e.db, "t", "ia") {
			t.Errorf("target has index ia: --on-ddl ignore ran the DDL")
		}
		e.assertEqual([]string{"t"})
		if r := e.record(); r.Message != "" {
			t.Errorf("record message = %q, want none", r.Message)
		}
	})

	t.Run("stop", func(t *testing.T) {
		e := newEnv(t)
		e.execBoth("CREATE TABLE t (id INT NOT NULL PRIMARY KEY, a INT NULL)")
		p := e.startVplayer("--on-ddl", "stop")
		e.waitRunning(30 * time.Second)
		const ddl = "ALTER TABLE t ADD COLUMN c INT NULL"
		e.execOn(e.src, "INSERT INTO t VALUES (1, 1)", ddl)
		atDDL := e.sourcePos()
		e.execOn(e.src, "INSERT INTO t VALUES (2, 2, 2)")
		if code := p.wait(30 * time.Second); code != 0 {
			t.Fatalf("vplayer exited with %d at a DDL with --on-ddl stop, want 0; output:\n%s", code, p.out.String())
		}
		r := e.record()
		if r.State != "Stopped" || r.Message != "Stopped at DDL "+ddl {
			t.Errorf("record: state %q message %q, want Stopped, %q", r.State, r.Message, "Stopped at DDL "+ddl)
		}
		if pos, err := binlog.ParsePosition(r.Pos, "mariadb"); err != nil || !pos.Equal(atDDL) {
			t.Errorf("record pos = %q, want the DDL's %s", r.Pos, atDDL)
		}
		if got := e.columnList(e.dstPool, e.db, "t"); got != "id,a" {
			t.Errorf("target columns = %s, want id,a: the DDL ran", got)
		}
		if got := e.count(e.dst, "t"); got != 1 {
			t.Errorf("target has %d rows, want 1: only the row before the DDL", got)
		}
	})

	t.Run("exec", func(t *testing.T) {
		e := newEnv(t)
		e.execBoth("CREATE TABLE t (id INT NOT NULL PRIMARY KEY, a INT NULL)")
		cfg := e.streamConfig()
		cfg.OnDDL = "exec"
		stop := e.runStream(cfg)
		e.waitRunning(30 * time.Second)
		e.execOn(e.src,
			"INSERT INTO t VALUES (1, 1), (2, 2)",
			// A column in the middle: every later row has a new shape.
			"ALTER TABLE t ADD COLUMN c VARCHAR(20) CHARACTER SET utf8mb4 NULL AFTER id",
			"INSERT INTO t VALUES (3, 'drei 😀', 3)",
			"UPDATE t SET c = 'eins' WHERE id = 1",
			"DELETE FROM t WHERE id = 2",
			"ALTER TABLE t DROP COLUMN a, ADD COLUMN d DECIMAL(65,30) NULL",
			"INSERT INTO t VALUES (4, 'vier', '-1.000000000000000000000000000001')",
			"UPDATE t SET d = 0.5, c = NULL WHERE id = 3",
			"CREATE TABLE t2 (id INT NOT NULL PRIMARY KEY, v VARBINARY(10) NULL)",
			"INSERT INTO t2 VALUES (1, X'00FF'), (2, NULL)",
		)
		e.waitCaughtUp(30 * time.Second)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if got := e.columnList(e.dstPool, e.db, "t"); got != "id,c,d" {
			t.Errorf("target columns = %s, want id,c,d", got)
		}
		e.assertIdentical(e.db, []string{"t", "t2"})
		e.assertEqual([]string{"t", "t2"})
	})

	t.Run("exec_ignore", func(t *testing.T) {
		e := newEnv(t)
		e.execBoth("CREATE TABLE t (id INT NOT NULL PRIMARY KEY, a INT NULL)")
		e.execOn(e.dst, "CREATE INDEX ia ON t (a)") // the source's CREATE INDEX will fail here
		cfg := e.streamConfig()
		cfg.OnDDL = "exec_ignore"
		stop := e.runStream(cfg)
		e.waitRunning(30 * time.Second)
		e.execOn(e.src,
			"INSERT INTO t VALUES (1, 1)",
			"CREATE INDEX ia ON t (a)",
			"INSERT INTO t VALUES (2, 2)",
			"ALTER TABLE t ADD COLUMN c INT NULL",
			"INSERT INTO t VALUES (3, 3, 3)",
		)
		e.waitCaughtUp(30 * time.Second)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		r := e.record()
		if r.Message != "" {
			t.Errorf("record message = %q, want none: the failed DDL is skipped", r.Message)
		}
		e.assertIdentical(e.db, []string{"t"})
	})
}

// TestSchemaDrift: a target table whose columns no longer match the binlog's (an extra column, a
// renamed one) stops the stream with a terminal error naming the table and the columns: state
// Error, exit code 1.
func TestSchemaDrift(t *testing.T) {
	tests := []struct {
		name  string
		alter string
		want  []string // in the message
	}{
		// A column added after the last one replicates, as on a native replica (TestTrailingColumns);
		// one added between the columns both tables share shifts them: drift.
		{"extra_column_not_last", "ALTER TABLE t ADD COLUMN extra INT NULL AFTER a", []string{"schema drift", "`t`", "column 3 is b on the source but extra on the target", "id, a, extra, b", "3 columns (id, a, b)"}},
		{"renamed_column", "ALTER TABLE t CHANGE b bb INT NULL", []string{"schema drift", "`t`", "column 3 is b on the source but bb on the target"}},
		{"changed_type", "ALTER TABLE t MODIFY b VARCHAR(10) NULL", []string{"schema drift", "`t`", "column 3 (b on the target) holds integer values on the source but is varchar"}},
		{"changed_signedness", "ALTER TABLE t MODIFY b INT UNSIGNED NULL", []string{"schema drift", "`t`", "column 3 (b) is signed on the source but unsigned on the target"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.execBoth("CREATE TABLE t (id INT NOT NULL PRIMARY KEY, a INT NULL, b INT NULL)")
			p := e.startVplayer()
			e.waitRunning(30 * time.Second)
			e.execOn(e.dst, tt.alter)
			e.execOn(e.src, "INSERT INTO t VALUES (1, 2, 3)")
			if code := p.wait(30 * time.Second); code != 1 {
				t.Fatalf("vplayer exited with %d on schema drift, want 1; output:\n%s", code, p.out.String())
			}
			r := e.record()
			t.Logf("record: state %s, message %q", r.State, r.Message)
			if r.State != "Error" || !strings.HasPrefix(r.Message, "terminal error: ") {
				t.Errorf("record: state %q message %q, want Error, terminal error: ...", r.State, r.Message)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.Message, w) {
					t.Errorf("record message %q does not contain %q", r.Message, w)
				}
			}
			if got := e.count(e.dst, "t"); got != 0 {
				t.Errorf("target has %d rows, want none: a drifted row was written", got)
			}
		})
	}
}
