package e2e

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vplayer/vplayer/internal/compare"
	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
	"github.com/vplayer/vplayer/sqlq"
)

// TestTablesAndTargetDB: `vplayer run --tables t1,/logs_.*/ --target-db <db>_copy --on-ddl exec`
// replicates only the selected tables, into the other database, DDL included (qualified with the
// source database or not); the other tables, and the target's database of the source's name, are
// left alone, transactions on unselected tables still advance the position, and the selected
// table without a key is warned about at start.
func TestTablesAndTargetDB(t *testing.T) {
	e := newEnv(t)
	copyDB := e.db + "_copy"
	dstCopy := mysqltest.DB(t, e.target, copyDB)
	tables := map[string]string{
		"t1":     "id INT NOT NULL PRIMARY KEY, v VARCHAR(20) NULL",
		"t2":     "id INT NOT NULL PRIMARY KEY, v VARCHAR(20) NULL",
		"logs_a": "id INT NOT NULL PRIMARY KEY, msg VARCHAR(20) NULL",
		"logs_b": "id INT NULL, msg VARCHAR(20) NULL", // no key: warned about at start
		"other":  "id INT NOT NULL PRIMARY KEY",
	}
	for name, def := range tables {
		e.execOn(e.src, "CREATE TABLE "+name+" ("+def+")")
		if name != "other" {
			e.execOn(dstCopy, "CREATE TABLE "+name+" ("+def+")")
		}
	}
	// Sentinels: an unselected table in the target database, and the selected table in the
	// target's database of the source's name, which --target-db must leave alone.
	e.execOn(dstCopy, "INSERT INTO t2 VALUES (999, 'sentinel')")
	e.execOn(e.dst, "CREATE TABLE t1 ("+tables["t1"]+")", "INSERT INTO t1 VALUES (999, 'sentinel')")

	p := e.startVplayer("--tables", "t1,/logs_.*/", "--target-db", copyDB, "--on-ddl", "exec")
	e.waitRunning(30 * time.Second)
	qualified := sqlq.Ident(e.db) + "."
	e.execOn(e.src,
		"INSERT INTO t1 VALUES (1, 'one'), (2, 'two')",
		"INSERT INTO t2 VALUES (1, 'not replicated')",
		"INSERT INTO logs_a VALUES (1, 'a')",
		"INSERT INTO logs_b VALUES (1, 'b'), (2, 'b2')",
		"INSERT INTO other VALUES (1)",
		"UPDATE t1 SET v = 'uno' WHERE id = 1",
		// DDL on a selected table, unqualified and qualified with the source database.
		"ALTER TABLE logs_a ADD COLUMN lvl INT NULL",
		"ALTER TABLE "+qualified+"t1 ADD COLUMN z INT NULL",
		// DDL on an unselected table: not run.
		"ALTER TABLE t2 ADD COLUMN w INT NULL",
		"INSERT INTO t1 VALUES (3, 'three', 3)",
		"UPDATE t1 SET z = 1 WHERE id = 1",
		"INSERT INTO logs_a VALUES (2, 'a2', 7)",
		"DELETE FROM logs_b WHERE id = 1",
	)
	// The last transactions touch only unselected tables: the position must still get there.
	e.execOn(e.src, "BEGIN", "INSERT INTO t2 VALUES (2, 'x', 2)", "INSERT INTO other VALUES (2)", "COMMIT")
	e.waitCaughtUp(30 * time.Second)
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("vplayer exited with %d after SIGTERM, want 0", code)
	}

	selected := []string{"t1", "logs_a", "logs_b"}
	rs, err := compare.Tables(context.Background(), e.src, dstCopy, e.db, copyDB, selected)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if !r.Equal() {
			t.Errorf("target differs from source: %s", r)
		}
	}
	e.assertIdentical(copyDB, selected)
	for _, c := range []struct{ db, table, want string }{
		{copyDB, "t1", "id,v,z"},
		{copyDB, "logs_a", "id,msg,lvl"},
		{copyDB, "t2", "id,v"},
		{copyDB, "other", ""},
		{e.db, "t1", "id,v"},
	} {
		if got := e.columnList(e.dstPool, c.db, c.table); got != c.want {
			t.Errorf("target %s.%s columns = %q, want %q", c.db, c.table, got, c.want)
		}
	}
	for _, c := range []struct{ query, want string }{
		{"SELECT GROUP_CONCAT(id) FROM " + sqlq.Ident(copyDB) + ".t2", "999"},
		{"SELECT GROUP_CONCAT(id) FROM " + sqlq.Ident(e.db) + ".t1", "999"},
		{"SELECT GROUP_CONCAT(id ORDER BY id) FROM " + sqlq.Ident(copyDB) + ".t1", "1,2,3"},
	} {
		var got string
		if err := e.dstPool.QueryRowContext(e.ctx(), c.query).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("target: %s = %q, want %q", c.query, got, c.want)
		}
	}
	out := p.out.String()
	if strings.Contains(out, "level=ERROR") {
		t.Errorf("vplayer logged an error:\n%s", out)
	}
	warn := "table=" + copyDB + ".logs_b"
	if i, j := strings.Index(out, warn), strings.Index(out, "workflow running"); i < 0 || j < 0 || i > j || !strings.Contains(out[:i], "no primary key") {
		t.Errorf("vplayer did not warn at start that %s.logs_b has no key; output:\n%s", copyDB, out)
	}
}
