package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vplayer/vplayer/internal/workload"
)

// rowImageTables are tables whose rows a session with a partial row image changes: a primary key
// with a DEFAULT column and NOT NULL TEXT and BLOB columns; a second unique key; no key at all.
var rowImageTables = []string{
	"CREATE TABLE pk (id INT NOT NULL PRIMARY KEY, a INT, b INT DEFAULT 42, tx TEXT NOT NULL, bl BLOB NOT NULL, price DECIMAL(14,2) NOT NULL DEFAULT 9.99)",
	"CREATE TABLE uk (id INT NOT NULL PRIMARY KEY, code INT NOT NULL, note TEXT, n INT NOT NULL DEFAULT 7, UNIQUE KEY (code))",
	"CREATE TABLE nokey (a INT, b INT DEFAULT 5, tx TEXT)",
}

// partialSession changes the tables in sessions whose binlog_row_image is image, for n
// transactions, with ids from base: inserts that leave DEFAULT and other columns out, updates of
// one column, updates of the key, deletes.
func partialSession(ctx context.Context, db *sql.DB, image string, base, n int, seed uint64) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET SESSION binlog_row_image = "+image); err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range n {
		id := base + i
		stmts := []string{
			fmt.Sprintf("INSERT INTO pk (id, a, tx, bl) VALUES (%d, %d, REPEAT('t', %d), REPEAT(x'00ff', %d))", id, i, r.IntN(50), r.IntN(50)),
			fmt.Sprintf("INSERT INTO uk (id, code) VALUES (%d, %d)", id, id),
			fmt.Sprintf("INSERT INTO nokey (a) VALUES (%d)", id),
		}
		switch old := base + r.IntN(i+1); r.IntN(6) {
		case 0:
			stmts = append(stmts, fmt.Sprintf("UPDATE pk SET a = a + 1 WHERE id = %d", old))
		case 1:
			stmts = append(stmts, fmt.Sprintf("UPDATE pk SET tx = CONCAT(tx, 'u'), price = price + 0.01 WHERE id = %d", old))
		case 2:
			stmts = append(stmts, fmt.Sprintf("UPDATE uk SET code = code + 1000000 WHERE id = %d", old))
		case 3:
			stmts = append(stmts, fmt.Sprintf("UPDATE nokey SET b = b + 1 WHERE a = %d", old))
		case 4:
			stmts = append(stmts, fmt.Sprintf("DELETE FROM pk WHERE id = %d", old), fmt.Sprintf("DELETE FROM nokey WHERE a = %d", old))
		case 5:
			stmts = append(stmts, fmt.Sprintf("UPDATE pk SET id = id + 1000000 WHERE id = %d", old))
		}
		// Sessions scanning the keyless table deadlock now and then: the transaction is run
		// again, as an application would.
		for try := 0; ; try++ {
			err := runTxn(ctx, conn, stmts)
			if err == nil {
				break
			}
			if !strings.Contains(err.Error(), "Deadlock found") || try == 20 {
				return err
			}
		}
	}
	return nil
}

// runTxn runs stmts in one transaction on conn.
func runTxn(ctx context.Context, conn *sql.Conn, stmts []string) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			tx.Rollback()
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return tx.Commit()
}

// TestPartialRowImages: sessions with binlog_row_image MINIMAL, NOBLOB and FULL change the same
// tables at once, beside the workload, on one and two apply workers and in idempotent mode: the
// target ends equal to the source, column by column, defaults included.
func TestPartialRowImages(t *testing.T) {
	for _, tc := range []struct {
		name    string
		workers int
		mode    string
	}{{"serial", 1, "strict"}, {"parallel", 2, "strict"}, {"idempotent", 1, "idempotent"}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.createWorkload()
			e.execBoth(rowImageTables...)
			cfg := e.streamConfig()
			cfg.ApplyWorkers, cfg.ExecMode = tc.workers, tc.mode
			stop := e.runStream(cfg)
			e.waitRunning(30 * time.Second)

			ctx, cancel := context.WithCancel(e.ctx())
			var wg sync.WaitGroup
			wg.Go(func() { workload.Run(ctx, e.src, e.db, workload.Config{Workers: 2}, nil) })
			errs := make(chan error, 3)
			for n, image := range []string{"MINIMAL", "NOBLOB", "FULL"} {
				wg.Go(func() { errs <- partialSession(e.ctx(), e.src, image, (n+1)*10000, 150, uint64(n)) })
			}
			for range 3 {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
			cancel()
			wg.Wait()
			e.waitCaughtUp(60 * time.Second)
			if err := stop(); err != nil {
				t.Fatalf("stream: %v", err)
			}
			e.assertEqual(append([]string{"pk", "uk", "nokey"}, workload.Tables...))
		})
	}
}

// TestPartialRowImages_globalMinimal: a source whose global binlog_row_image is MINIMAL passes
// preflight and replicates exactly.
func TestPartialRowImages_globalMinimal(t *testing.T) {
	e := newEnv(t)
	e.execBoth(rowImageTables...)
	e.execOn(e.srcPool, "SET GLOBAL binlog_row_image = MINIMAL")
	t.Cleanup(func() { e.srcPool.Exec("SET GLOBAL binlog_row_image = FULL") })
	p := e.startVplayer()
	e.waitRunning(30 * time.Second)
	if err := partialSession(e.ctx(), e.src, "MINIMAL", 1, 200, 7); err != nil {
		t.Fatal(err)
	}
	e.waitCaughtUp(60 * time.Second)
	p.signal(syscall.SIGTERM)
	if code := p.wait(30 * time.Second); code != 0 {
		t.Fatalf("vplayer exited with %d, want 0; output:\n%s", code, p.out.String())
	}
	e.assertEqual([]string{"pk", "uk", "nokey"})
}

// TestPartialRowImages_missingRowTerminal: a partial UPDATE of a row the target lacks cannot be
// written through, even in idempotent mode: terminal, naming the partial image.
func TestPartialRowImages_missingRowTerminal(t *testing.T) {
	e := newEnv(t)
	e.execBoth(rowImageTables[0])
	e.execBoth("INSERT INTO pk (id, a, tx, bl) VALUES (1, 1, 'x', 'y'), (2, 2, 'x', 'y')")
	p := e.startVplayer("--exec-mode", "idempotent")
	e.waitRunning(30 * time.Second)
	e.execOn(e.dst, "DELETE FROM pk WHERE id = 2")
	conn, err := e.src.Conn(e.ctx())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{"SET SESSION binlog_row_image = MINIMAL", "UPDATE pk SET a = 5 WHERE id = 2"} {
		if _, err := conn.ExecContext(e.ctx(), q); err != nil {
			t.Fatal(err)
		}
	}
	if code := p.wait(30 * time.Second); code != 1 {
		t.Fatalf("vplayer exited with %d on a partial update of a missing row, want 1", code)
	}
	r := e.record()
	if r.State != "Error" || !strings.Contains(r.Message, "partial row image") || !strings.Contains(r.Message, "`pk`") {
		t.Errorf("record: state %q message %q, want Error naming the table and the partial row image", r.State, r.Message)
	}
}

// TestStatementFormatTerminal: a session that logs its changes as statements (binlog_format
// STATEMENT or MIXED) ends the stream at its first change of a replicated table, naming the
// statement and its transaction; what came before it is applied, and a statement on a database
// that is not replicated is passed over.
func TestStatementFormatTerminal(t *testing.T) {
	for _, format := range []string{"STATEMENT", "MIXED"} {
		t.Run(format, func(t *testing.T) {
			e := newEnv(t)
			e.execBoth("CREATE TABLE t (id INT NOT NULL PRIMARY KEY, x INT NOT NULL)")
			other := e.db + "_other"
			e.execOn(e.srcPool, "CREATE DATABASE "+other, "CREATE TABLE "+other+".o (id INT PRIMARY KEY, x INT)")
			t.Cleanup(func() { e.srcPool.Exec("DROP DATABASE " + other) })
			p := e.startVplayer()
			e.waitRunning(30 * time.Second)
			e.execOn(e.src, "INSERT INTO t SELECT seq, seq FROM seq_1_to_20")
			e.waitCaughtUp(30 * time.Second)
			before := e.record().Pos
			conn, err := e.src.Conn(e.ctx())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			for _, q := range []string{
				"SET SESSION binlog_format = " + format,
				"INSERT INTO " + other + ".o VALUES (1, 1)",
				"UPDATE t SET x = x + 1 WHERE id < 10",
			} {
				if _, err := conn.ExecContext(e.ctx(), q); err != nil {
					t.Fatal(err)
				}
			}
			if code := p.wait(30 * time.Second); code != 1 {
				t.Fatalf("vplayer exited with %d on a statement-format UPDATE, want 1", code)
			}
			r := e.record()
			t.Logf("record: state %s, message %q", r.State, r.Message)
			for _, want := range []string{"terminal error: ", "as a statement", "UPDATE t SET x = x + 1 WHERE id < 10", "binlog_format=ROW", "source transaction "} {
				if !strings.Contains(r.Message, want) {
					t.Errorf("message %q lacks %q", r.Message, want)
				}
			}
			if r.State != "Error" {
				t.Errorf("state %s, want Error", r.State)
			}
			if r.Pos != before || !strings.Contains(r.Message, "after position "+before) {
				t.Errorf("record at %s, message naming another position, want both at %s, the last transaction before the statement's", r.Pos, before)
			}
			if got := e.count(e.dst, "t"); got != 20 {
				t.Errorf("target has %d rows of t, want the 20 inserted before the statement", got)
			}
			var sum int
			if err := e.dst.QueryRowContext(e.ctx(), "SELECT SUM(x) FROM t").Scan(&sum); err != nil {
				t.Fatal(err)
			}
			if sum != 210 {
				t.Errorf("SUM(x) on the target = %d, want 210: the statement must not be half-applied", sum)
			}
		})
	}
}

// TestTrailingColumns: a schema change rolled out one side first. A target table with a column
// the source lacks, after the shared ones, gets its default; a source table with one is not
// written. Preflight accepts both, and the target's shared columns end equal to the source's.
func TestTrailingColumns(t *testing.T) {
	e := newEnv(t)
	e.execOn(e.src, "CREATE TABLE tgt_more (id INT NOT NULL PRIMARY KEY, v INT NOT NULL, tx TEXT)")
	e.execOn(e.dst, "CREATE TABLE tgt_more (id INT NOT NULL PRIMARY KEY, v INT NOT NULL, tx TEXT, added INT NOT NULL DEFAULT 42)")
	e.execOn(e.src, "CREATE TABLE src_more (id INT NOT NULL PRIMARY KEY, v INT NOT NULL, extra VARCHAR(10) DEFAULT 'e')")
	e.execOn(e.dst, "CREATE TABLE src_more (id INT NOT NULL PRIMARY KEY, v INT NOT NULL)")
	p := e.startVplayer("--apply-workers", "2")
	e.waitRunning(30 * time.Second)
	for i := range 200 {
		e.execTxn(e.src,
			fmt.Sprintf("INSERT INTO tgt_more VALUES (%d, %d, 'x')", i, i),
			fmt.Sprintf("INSERT INTO src_more VALUES (%d, %d, 'y')", i, i),
			fmt.Sprintf("UPDATE tgt_more SET v = v + 1 WHERE id = %d", i/2),
			fmt.Sprintf("UPDATE src_more SET extra = 'z' WHERE id = %d", i/2),
			fmt.Sprintf("DELETE FROM tgt_more WHERE id = %d", i/3),
			fmt.Sprintf("DELETE FROM src_more WHERE id = %d", i/3))
	}
	e.waitCaughtUp(60 * time.Second)
	p.signal(syscall.SIGTERM)
	if code := p.wait(30 * time.Second); code != 0 {
		t.Fatalf("vplayer exited with %d, want 0; output:\n%s", code, p.out.String())
	}
	for _, q := range []struct{ src, dst string }{
		{"SELECT COUNT(*), SUM(v), SUM(LENGTH(tx)) FROM tgt_more", "SELECT COUNT(*), SUM(v), SUM(LENGTH(tx)) FROM tgt_more"},
		{"SELECT COUNT(*), SUM(v), 0 FROM src_more", "SELECT COUNT(*), SUM(v), 0 FROM src_more"},
	} {
		var a, b [3]int64
		if err := e.src.QueryRowContext(e.ctx(), q.src).Scan(&a[0], &a[1], &a[2]); err != nil {
			t.Fatal(err)
		}
		if err := e.dst.QueryRowContext(e.ctx(), q.dst).Scan(&b[0], &b[1], &b[2]); err != nil {
			t.Fatal(err)
		}
		if a != b || a[0] == 0 {
			t.Errorf("%s: source %v, target %v", q.src, a, b)
		}
	}
	var off int
	if err := e.dst.QueryRowContext(e.ctx(), "SELECT COUNT(*) FROM tgt_more WHERE added <> 42").Scan(&off); err != nil {
		t.Fatal(err)
	}
	if off != 0 {
		t.Errorf("%d rows of tgt_more on the target lack the default of the column the source does not have", off)
	}
}
