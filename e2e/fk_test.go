package e2e

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"
)

// fkSchema is a parent with three levels of dependants: child cascades deletes and key updates,
// grandchild cascades from child, and note sets its reference NULL when the parent goes.
var fkSchema = []string{
	"CREATE TABLE parent (id INT PRIMARY KEY, v INT NOT NULL)",
	`CREATE TABLE child (id INT PRIMARY KEY, pid INT, v INT NOT NULL, KEY (pid),
 FOREIGN KEY (pid) REFERENCES parent (id) ON DELETE CASCADE ON UPDATE CASCADE)`,
	`CREATE TABLE grandchild (id INT PRIMARY KEY, cid INT, KEY (cid),
 FOREIGN KEY (cid) REFERENCES child (id) ON DELETE CASCADE ON UPDATE CASCADE)`,
	`CREATE TABLE note (id INT PRIMARY KEY, pid INT NULL, KEY (pid),
 FOREIGN KEY (pid) REFERENCES parent (id) ON DELETE SET NULL ON UPDATE CASCADE)`,
	// A tree: each row's parent is the row before it.
	`CREATE TABLE tree (id INT PRIMARY KEY, up INT NULL, KEY (up),
 FOREIGN KEY (up) REFERENCES tree (id) ON DELETE CASCADE)`,
}

var fkTables = []string{"parent", "child", "grandchild", "note", "tree"}

// TestForeignKeyCascades: rows that the source changed by cascading (ON DELETE CASCADE over two
// levels, ON DELETE SET NULL, ON UPDATE CASCADE) are not in the row binlog; the target gets them
// by running its own cascades, because vplayer applies each rows event with the foreign-key
// setting of the source session that wrote it. A session with foreign_key_checks=0 on the source
// cascades nothing, and neither does the target for its rows.
func TestForeignKeyCascades(t *testing.T) {
	e := newEnv(t)
	for _, q := range fkSchema {
		mustExec(t, e.src, q)
		mustExec(t, e.dst, q)
	}
	p := e.startVplayer()
	e.waitRunning(30 * time.Second)

	// Many small transactions, so that batches hold several of them and several tables.
	for i := 1; i <= 40; i++ {
		mustExec(t, e.src, "INSERT INTO parent VALUES (?, ?)", i, i)
		for j := 0; j < 3; j++ {
			c := i*10 + j
			mustExec(t, e.src, "INSERT INTO child VALUES (?, ?, ?)", c, i, j)
			mustExec(t, e.src, "INSERT INTO grandchild VALUES (?, ?), (?, ?)", c*10, c, c*10+1, c)
		}
		mustExec(t, e.src, "INSERT INTO note VALUES (?, ?)", i, i)
	}
	mustExec(t, e.src, "DELETE FROM parent WHERE id % 4 = 0")               // cascades to child and grandchild, nulls note
	mustExec(t, e.src, "UPDATE parent SET id = id + 1000 WHERE id % 4 = 1") // cascades the new key to child and note
	mustExec(t, e.src, "UPDATE child SET id = id + 5000 WHERE id % 10 = 2") // cascades to grandchild
	for i := 2; i <= 40; i += 8 {
		// One transaction mixing a parent delete with inserts into the tables it cascades to.
		tx, err := e.src.Begin()
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{
			fmt.Sprintf("INSERT INTO parent VALUES (%d, 0)", 2000+i),
			fmt.Sprintf("INSERT INTO child VALUES (%d, %d, 0)", 20000+i, 2000+i),
			fmt.Sprintf("DELETE FROM parent WHERE id = %d", i),
			fmt.Sprintf("INSERT INTO note VALUES (%d, %d)", 3000+i, 2000+i),
		} {
			if _, err := tx.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	// A session with the checks off: deleting a parent leaves its dependants as they are.
	conn, err := e.src.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mustExecConn(t, conn, "SET SESSION foreign_key_checks = 0")
	mustExecConn(t, conn, "DELETE FROM parent WHERE id = 3")
	mustExecConn(t, conn, "INSERT INTO child VALUES (9999, 777, 0)") // a dangling reference
	mustExecConn(t, conn, "SET SESSION foreign_key_checks = 1")      // the connection goes back to the pool
	conn.Close()
	mustExec(t, e.src, "DELETE FROM parent WHERE id = 7")
	// A self-referencing table whose rows the source deletes leaves first, in one statement: one
	// IN list on the target would delete the root first and cascade the rest away.
	mustExec(t, e.src, "INSERT INTO tree VALUES (1, NULL)")
	for i := 2; i <= 10; i++ {
		mustExec(t, e.src, "INSERT INTO tree VALUES (?, ?)", i, i-1)
	}
	mustExec(t, e.src, "DELETE FROM tree WHERE id >= 4 ORDER BY id DESC")

	e.waitCaughtUp(60 * time.Second)
	e.assertEqual(fkTables)
	if got := e.count(e.dst, "child WHERE pid = 3"); got != 3 {
		t.Errorf("target has %d children of the parent deleted with foreign_key_checks=0, want 3 (no cascade)", got)
	}
	if got := e.count(e.dst, "child WHERE pid = 7"); got != 0 {
		t.Errorf("target has %d children of the parent deleted with the checks on, want 0 (cascaded)", got)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("vplayer exited with %d, want 0", code)
	}
}
