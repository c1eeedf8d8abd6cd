package e2e

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/vplayer/vplayer/internal/eventually"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// xaOn runs statements on one new source session, which it then closes: a prepared XA
// transaction outlives its session.
// XIDs are the server's, shared by the tests: each test's names start with its database's.
func (e *env) xaOn(stmts ...string) {
	e.t.Helper()
	db, err := e.source.DB(e.db)
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range stmts {
		q = strings.ReplaceAll(q, "XID_", e.db+"_")
		// The session that prepared the transaction may not be detached from it yet: the
		// server ends a closed session asynchronously, and until then nobody else sees it.
		var err error
		_ = eventually.Wait(5*time.Second, 20*time.Millisecond, func() error {
			if _, err = db.ExecContext(context.Background(), q); err != nil && strings.Contains(err.Error(), "XAER_NOTA") {
				return err
			}
			return nil // done, or failed for good: reported below
		})
		if err != nil {
			e.t.Fatalf("%s: %v", q, err)
		}
	}
}

// preparedOnTarget returns how many XA transactions are prepared on the target, logging them.
func (e *env) preparedOnTarget() int {
	e.t.Helper()
	rows, err := e.dstPool.QueryContext(e.ctx(), "XA RECOVER")
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var format, gl, bl int
		var data []byte
		if err := rows.Scan(&format, &gl, &bl, &data); err != nil {
			e.t.Fatal(err)
		}
		e.t.Logf("prepared on the target: format %d, data %q", format, data)
		n++
	}
	return n
}

// TestXA: committed, rolled back and one-phase XA transactions, and one prepared on the source
// with other transactions committed before its XA COMMIT, and vplayer SIGKILLed between the
// PREPARE and the COMMIT: a prepared transaction's rows reach the target only with its XA
// COMMIT, a rolled-back one leaves nothing, and in the end target == source row for row with no
// XA transaction left prepared on the target.
func TestXA(t *testing.T) {
	e := newEnv(t)
	e.execBoth("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL)", "CREATE TABLE other (id INT PRIMARY KEY)")
	p := e.startVplayer()
	e.waitRunning(30 * time.Second)

	e.xaOn("XA START 'XID_a'", "INSERT INTO t VALUES (1, 1)", "UPDATE t SET v = 2 WHERE id = 1", "XA END 'XID_a'", "XA PREPARE 'XID_a'")
	e.xaOn("XA START 'XID_quiet'", "INSERT INTO other VALUES (1)", "XA END 'XID_quiet'", "XA PREPARE 'XID_quiet'")
	e.execOn(e.src, "INSERT INTO t VALUES (10, 10)", "INSERT INTO t VALUES (11, 11)")
	e.waitCaughtUp(30 * time.Second)
	if got := e.count(e.dst, "t WHERE id = 1"); got != 0 {
		t.Errorf("the prepared transaction's row is on the target before its XA COMMIT")
	}
	if got := e.count(e.dst, "t WHERE id >= 10"); got != 2 {
		t.Errorf("target has %d of the 2 rows committed after the PREPARE", got)
	}
	if got := e.preparedOnTarget(); got < 1 {
		t.Errorf("%d XA transactions prepared on the target, want the source's", got)
	}

	p.cmd.Process.Kill() // between PREPARE and COMMIT
	p.waitKilled(10 * time.Second)
	if out := p.out.String(); strings.Contains(out, "error in stream") {
		t.Errorf("errors while applying XA transactions:\n%s", out)
	}
	e.xaOn("XA COMMIT 'XID_a'")
	e.xaOn("XA COMMIT 'XID_quiet'")
	e.xaOn("XA START 'XID_b'", "INSERT INTO t VALUES (2, 2)", "XA END 'XID_b'", "XA PREPARE 'XID_b'")
	e.execOn(e.src, "INSERT INTO t VALUES (12, 12)")
	e.xaOn("XA ROLLBACK 'XID_b'")
	e.xaOn("XA START 'XID_c'", "INSERT INTO t VALUES (3, 3)", "XA END 'XID_c'", "XA COMMIT 'XID_c' ONE PHASE")
	e.xaOn("XA START 0x6162,0x6364,7", "INSERT INTO t VALUES (4, 4)", "DELETE FROM t WHERE id = 10", "XA END 0x6162,0x6364,7",
		"XA PREPARE 0x6162,0x6364,7")
	e.xaOn("XA COMMIT 0x6162,0x6364,7")

	p2 := e.startVplayer()
	e.waitCaughtUp(60 * time.Second)
	e.assertEqual([]string{"t", "other"})
	if got := e.count(e.dst, "t WHERE id = 2"); got != 0 {
		t.Errorf("the rolled-back XA transaction's row is on the target")
	}
	if got := e.preparedOnTarget(); got != 0 {
		t.Errorf("%d XA transactions left prepared on the target, want 0", got)
	}
	p2.signal(syscall.SIGTERM)
	if code := p2.wait(10 * time.Second); code != 0 {
		t.Errorf("vplayer exited with %d, want 0", code)
	}
	if out := p2.out.String(); strings.Contains(out, "error in stream") {
		t.Errorf("errors while applying XA transactions:\n%s", out)
	}
}

// TestXA_failAtEachCommit: every target commit fails once, just before its COMMIT, as a crash
// there would: after the target's XA PREPARE (its position not yet saved) and after its XA
// COMMIT or ROLLBACK. Each retry finds what the last attempt left (an XA transaction already
// prepared, or already ended) and goes on: target == source, nothing lost or doubled.
func TestXA_failAtEachCommit(t *testing.T) {
	e := newEnv(t)
	e.execBoth("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL)")
	var mu sync.Mutex
	failed := map[string]bool{}
	failures := 0
	cfg := e.streamConfig()
	var rec func() string
	cfg.BeforeCommit = func() error {
		mu.Lock()
		defer mu.Unlock()
		pos := rec()
		if failed[pos] {
			return nil
		}
		failed[pos] = true
		failures++
		return errors.New("injected failure before COMMIT")
	}
	posDB := e.dstPool
	rec = func() string {
		var n int64
		// The record's position as committed: the same for every retry of one commit.
		if err := posDB.QueryRow("SELECT COUNT(*) FROM " + e.db + ".t").Scan(&n); err != nil && err != sql.ErrNoRows {
			return err.Error()
		}
		return fmt.Sprint(e.record().Pos, "/", n)
	}
	stop := e.runStream(cfg)
	e.waitRunning(30 * time.Second)
	e.xaOn("XA START 'XID_a'", "INSERT INTO t VALUES (1, 1)", "XA END 'XID_a'", "XA PREPARE 'XID_a'")
	e.execOn(e.src, "INSERT INTO t VALUES (10, 10)")
	e.xaOn("XA COMMIT 'XID_a'")
	e.xaOn("XA START 'XID_b'", "INSERT INTO t VALUES (2, 2)", "XA END 'XID_b'", "XA PREPARE 'XID_b'")
	e.xaOn("XA ROLLBACK 'XID_b'")
	e.xaOn("XA START 'XID_c'", "UPDATE t SET v = 100 WHERE id = 1", "XA END 'XID_c'", "XA PREPARE 'XID_c'")
	e.execOn(e.src, "INSERT INTO t VALUES (11, 11)")
	e.xaOn("XA COMMIT 'XID_c'")
	e.waitCaughtUp(60 * time.Second)
	e.assertEqual([]string{"t"})
	if got := e.preparedOnTarget(); got != 0 {
		t.Errorf("%d XA transactions left prepared on the target, want 0", got)
	}
	mu.Lock()
	t.Logf("%d commits failed once each", failures)
	if failures < 6 {
		t.Errorf("only %d injected failures: the test did not reach every XA step", failures)
	}
	mu.Unlock()
	if err := stop(); err != nil {
		t.Errorf("stream ended with %v", err)
	}
}
