package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vplayer/vplayer/internal/workload"
	"github.com/vplayer/vplayer/workflow"
)

// copyTables are the source tables of the copy tests: the workload's three (order_lines has a
// composite key), one with a binary key and one without any key.
var copyTables = append(append([]string(nil), workload.Tables...), "bins", "nokey")

// createCopySource creates the copy tests' tables on the source only and fills them: the
// workload's tables with txns of its transactions, bins and nokey with rows rows each (nokey
// with duplicate rows).
func (e *env) createCopySource(txns int64, rows int) {
	e.t.Helper()
	if err := workload.Create(e.ctx(), e.db, e.src); err != nil {
		e.t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE bins (id varbinary(16) NOT NULL, v varchar(50) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, n int, f float, PRIMARY KEY (id))",
		"CREATE TABLE nokey (a int, b varchar(20), c blob)",
	} {
		e.exec(e.src, q)
	}
	if err := workload.Run(e.ctx(), e.src, e.db, workload.Config{Workers: 2, Transactions: txns, Seed: 5}, nil); err != nil {
		e.t.Fatal(err)
	}
	var b strings.Builder
	for i := 0; i < rows; i++ {
		if b.Len() == 0 {
			b.WriteString("INSERT INTO bins VALUES ")
		} else {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "(UNHEX('%04x00ff%04x'), 'Ab é %d', %d, %d.5)", i*7919%65536, i, i, i, i)
		if i%500 == 499 || i == rows-1 {
			e.exec(e.src, b.String())
			b.Reset()
		}
	}
	for i := 0; i < rows; i++ {
		if b.Len() == 0 {
			b.WriteString("INSERT INTO nokey VALUES ")
		} else {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "(%d, 'r%d', UNHEX('00%04x'))", i%(rows/2), i%(rows/2), i)
		if i%500 == 499 || i == rows-1 {
			e.exec(e.src, b.String())
			b.Reset()
		}
	}
}

func (e *env) exec(db *sql.DB, stmts ...string) {
	e.t.Helper()
	for _, q := range stmts {
		if _, err := db.ExecContext(e.ctx(), q); err != nil {
			e.t.Fatalf("%s: %v", q, err)
		}
	}
}

// copyWriter changes rows all over bins, nokey and customers (the workload only touches its newest
// rows) until ctx ends: inserts, updates (of the key too) and deletes, one per transaction.
func (e *env) copyWriter(ctx context.Context, rows int, seed uint64, n *atomic.Int64) error {
	rng := rand.New(rand.NewPCG(seed, 1))
	for ctx.Err() == nil {
		i := rng.IntN(rows)
		var q string
		switch rng.IntN(8) {
		case 0:
			q = fmt.Sprintf("INSERT IGNORE INTO bins VALUES (UNHEX('%04x01%04x'), 'new %d', %d, NULL)", rng.IntN(65536), i, i, i)
		case 1:
			q = fmt.Sprintf("UPDATE bins SET v = CONCAT(v, 'x'), n = n + 1 WHERE id >= UNHEX('%04x') ORDER BY id LIMIT 1", rng.IntN(65536))
		case 2:
			q = fmt.Sprintf("DELETE FROM bins WHERE id >= UNHEX('%04x') ORDER BY id LIMIT 1", rng.IntN(65536))
		case 3:
			q = fmt.Sprintf("UPDATE IGNORE bins SET id = UNHEX('%04x02%04x') WHERE id >= UNHEX('%04x') ORDER BY id LIMIT 1", rng.IntN(65536), i, rng.IntN(65536))
		case 4:
			q = fmt.Sprintf("INSERT INTO nokey VALUES (%d, 'w%d', NULL)", i, i)
		case 5:
			q = fmt.Sprintf("UPDATE nokey SET b = CONCAT(b, 'u') WHERE a = %d LIMIT 1", i/2)
		case 6:
			q = fmt.Sprintf("DELETE FROM nokey WHERE a = %d LIMIT 1", i/2)
		default:
			q = fmt.Sprintf("UPDATE customers SET balance = balance + 1 WHERE id >= (SELECT MIN(id) FROM customers) + %d ORDER BY id LIMIT 1", i)
		}
		if _, err := e.src.ExecContext(ctx, q); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("%s: %w", q, err)
		}
		n.Add(1)
	}
	return nil
}

// writeDuring runs the workload and copyWriter until the returned stop is called; stop returns
// the transactions they committed.
func (e *env) writeDuring(rows int) (stop func() int64) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(e.ctx())
	var st workload.Stats
	var n atomic.Int64
	errs := make(chan error, 2)
	go func() { errs <- workload.Run(ctx, e.src, e.db, workload.Config{Workers: 2, Rate: 150, Seed: 9}, &st) }()
	go func() { errs <- e.copyWriter(ctx, rows, 3, &n) }()
	return func() int64 {
		cancel()
		for range 2 {
			if err := <-errs; err != nil {
				e.t.Fatal(err)
			}
		}
		return st.Transactions.Load() + n.Load()
	}
}

// copyState returns the workflow's copy state.
func (e *env) copyState() []workflow.TableCopy {
	e.t.Helper()
	s := workflow.New(e.dstPool, "_vt")
	r, err := s.Get(e.ctx(), e.workflow)
	if err != nil {
		e.t.Fatal(err)
	}
	st, err := s.CopyState(e.ctx(), r.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

// waitRecordState waits, for a record that may not exist yet, until the record's state is want.
func (e *env) waitRecordState(want string, timeout time.Duration) workflow.Record {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	var last workflow.Record
	for time.Now().Before(deadline) {
		r, err := workflow.New(e.dstPool, "_vt").Get(e.ctx(), e.workflow)
		if err == nil {
			last = r
			if r.State == want {
				return r
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("workflow not %s within %v: state %q, message %q", want, timeout, last.State, last.Message)
	return last
}

// TestCopy_onlineUnderWrites: on an empty target, a workflow started without --start-pos creates
// the five tables (a composite key, a binary key with a case-insensitive column, no key at all),
// copies them in small chunks while a workload inserts, updates and deletes all over them, then
// replicates: target == source row for row, and vplayer diff says equal.
func TestCopy_onlineUnderWrites(t *testing.T) {
	e := newEnv(t)
	const rows = 2000
	e.createCopySource(800, rows)
	stop := e.writeDuring(rows)
	began := time.Now()
	p := e.startVplayer("--start-pos=", "--copy-chunk-rows", "250")
	rec := e.waitRecordState(workflow.StateCopying, 30*time.Second)
	t.Logf("copying: %s", rec.Message)
	e.waitRecordState(workflow.StateRunning, 90*time.Second)
	copied := time.Since(began)
	time.Sleep(500 * time.Millisecond) // replication under writes too
	txns := stop()
	e.waitCaughtUp(60 * time.Second)
	t.Logf("copy phase took %v; %d source transactions during the test", copied, txns)
	e.assertEqual(copyTables)
	var chunks, copiedRows int64
	for _, c := range e.copyState() {
		if !c.Done {
			t.Errorf("copy state of %s not done: %+v", c.Table, c)
		}
		chunks += c.Chunks
		copiedRows += c.Rows
	}
	if chunks < 10 {
		t.Errorf("the copy took %d chunks, want many: the chunk bound is 250 rows", chunks)
	}
	t.Logf("%d rows copied in %d chunks", copiedRows, chunks)
	if !strings.Contains(p.out.String(), "copied in one consistent scan") {
		t.Errorf("no warning about the keyless table:\n%s", p.out.String())
	}
	r := e.runDiff()
	if r.code != 0 || !strings.Contains(r.stdout, "equal: 5 tables") {
		t.Errorf("vplayer diff after the copy: exit %d, want 0 and 5 equal tables\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("vplayer exited %d after SIGTERM, want 0", code)
	}
}
