package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vplayer/vplayer/internal/eventually"
	"github.com/vplayer/vplayer/workflow"
)

// pkChild is a child whose primary key starts with its reference: a parent's key update moves
// its rows within its key order.
const pkChild = `CREATE TABLE pkchild (pid INT NOT NULL, n INT NOT NULL, PRIMARY KEY (pid, n),
 FOREIGN KEY (pid) REFERENCES parent (id) ON DELETE CASCADE ON UPDATE CASCADE)`

// fillFKSource fills fkSchema's tables and pkchild on the source: n parents, three children
// each, a grandchild per child, a note per parent, two pkchild rows per parent, and a tree of 4n
// rows in which row i hangs under row i/2.
func (e *env) fillFKSource(n int) {
	e.t.Helper()
	var p, c, g, no, tr, pc []string
	for i := 1; i <= n; i++ {
		p = append(p, fmt.Sprintf("(%d, %d)", i, i))
		no = append(no, fmt.Sprintf("(%d, %d)", i, i))
		pc = append(pc, fmt.Sprintf("(%d, 0), (%d, 1)", i, i))
		for j := range 3 {
			c = append(c, fmt.Sprintf("(%d, %d, %d)", i*10+j, i, j))
			g = append(g, fmt.Sprintf("(%d, %d)", i*10+j, i*10+j))
		}
	}
	for i := 1; i <= 4*n; i++ {
		up := "NULL"
		if i > 1 {
			up = fmt.Sprint(i / 2)
		}
		tr = append(tr, fmt.Sprintf("(%d, %s)", i, up))
	}
	for _, q := range []string{
		"INSERT INTO parent VALUES " + strings.Join(p, ","),
		"INSERT INTO child VALUES " + strings.Join(c, ","),
		"INSERT INTO grandchild VALUES " + strings.Join(g, ","),
		"INSERT INTO note VALUES " + strings.Join(no, ","),
		"INSERT INTO tree VALUES " + strings.Join(tr, ","),
		"INSERT INTO pkchild VALUES " + strings.Join(pc, ","),
	} {
		mustExec(e.t, e.src, q)
	}
}

// fkWriter changes fkSchema's tables all over their key ranges until ctx ends, one statement a
// transaction with the source's foreign-key checks on: new children of existing parents, parents
// deleted (cascading to child and grandchild, nulling note) and re-keyed (cascading the new key),
// children moved between parents, subtrees of tree inserted under and deleted, rows of pkchild
// added.
func (e *env) fkWriter(ctx context.Context, n int, done *atomic.Int64) error {
	rng := rand.New(rand.NewPCG(23, 1))
	next := 1_000_000
	// About a thousand a second: the copy's rounds see many.
	return e.writeUntil(ctx, done, time.Millisecond, func() string {
		r, r2 := rng.IntN(n*10), rng.IntN(n*10)
		next++
		switch rng.IntN(17) {
		case 0, 1:
			return fmt.Sprintf("INSERT INTO parent VALUES (%d, 0)", next)
		case 2, 3, 4:
			return fmt.Sprintf("INSERT INTO child SELECT %d, id, 1 FROM parent WHERE id >= %d ORDER BY id LIMIT 1", next, r/10)
		case 5:
			return fmt.Sprintf("DELETE FROM parent WHERE id >= %d ORDER BY id LIMIT 1", r/10)
		case 6:
			return fmt.Sprintf("UPDATE parent SET id = %d WHERE id >= %d ORDER BY id LIMIT 1", -next, r/10)
		case 7, 8:
			return fmt.Sprintf("INSERT INTO grandchild SELECT %d, id FROM child WHERE id >= %d ORDER BY id LIMIT 1", next, r)
		case 9, 10:
			return fmt.Sprintf("UPDATE child SET pid = (SELECT MIN(id) FROM parent WHERE id >= %d), v = v + 1 WHERE id >= %d ORDER BY id LIMIT 1", r2/10, r)
		case 11:
			return fmt.Sprintf("INSERT INTO note SELECT %d, id FROM parent WHERE id >= %d ORDER BY id LIMIT 1", next, r/10)
		case 12, 13:
			return fmt.Sprintf("INSERT INTO tree SELECT %d, id FROM tree WHERE id >= %d ORDER BY id LIMIT 1", next, r*4/10)
		case 14:
			return fmt.Sprintf("DELETE FROM tree WHERE id >= %d ORDER BY id LIMIT 1", n/2+r*4/10)
		case 15:
			return fmt.Sprintf("INSERT INTO pkchild SELECT id, %d FROM parent WHERE id >= %d ORDER BY id LIMIT 1", next, r/10)
		default:
			return fmt.Sprintf("DELETE FROM child WHERE id >= %d ORDER BY id LIMIT 1", r)
		}
	})
}

// TestCopy_foreignKeys: an empty target, a source whose tables are linked by foreign keys (two
// levels of ON DELETE CASCADE, ON DELETE SET NULL, ON UPDATE CASCADE, a tree referencing itself
// with ON DELETE CASCADE, a child whose primary key a parent's key update changes) under writes
// that cascade all over them. The copy, in small chunks over many rounds, never applies a change
// its target cannot check (a child of a parent not copied yet) and misses no cascade (the binlog
// has none of the rows a cascade changed). vplayer is killed in the middle of the tree's copy,
// which then starts again from its first row, and twice more at random moments; it catches up,
// and target == source.
func TestCopy_foreignKeys(t *testing.T) {
	e := newEnv(t)
	for _, q := range append(fkSchema, pkChild) {
		mustExec(t, e.src, q)
	}
	tables := append(fkTables, "pkchild")
	const n = 300
	e.fillFKSource(n)
	ctx, cancel := context.WithCancel(e.ctx())
	var writes atomic.Int64
	werr := make(chan error, 1)
	go func() { werr <- e.fkWriter(ctx, n, &writes) }()
	args := []string{"--start-pos=", "--copy-chunk-rows", "40", "--retry-delay", "200ms", "--lease-ttl", "1s"}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	var logs strings.Builder // of the killed processes
	for kill := range 3 {
		p := e.startVplayer(args...)
		e.waitRecordState(workflow.StateCopying, 30*time.Second)
		inTree := func(st []workflow.TableCopy) bool {
			tree := chunksByTable(st)["tree"]
			return tree.Chunks > 0 && !tree.Done
		}
		before := copyProgress(chunksByTable(e.copyState()))
		eventually.Must(t, 30*time.Second, 2*time.Millisecond, fmt.Sprintf("kill %d: the copy's progress", kill), func() error {
			st := e.copyState()
			if kill == 0 && inTree(st) || kill > 0 && copyProgress(chunksByTable(st)) != before {
				return nil
			}
			return fmt.Errorf("%d chunks committed, tree %+v", copyProgress(chunksByTable(st)), chunksByTable(st)["tree"])
		})
		if kill > 0 {
			time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		}
		p.cmd.Process.Kill()
		p.waitKilled(10 * time.Second)
		logs.WriteString(p.out.String())
		st := e.copyState()
		t.Logf("kill %d: %d chunks committed, tree %+v", kill, copyProgress(chunksByTable(st)), chunksByTable(st)["tree"])
		if kill == 0 && !inTree(st) {
			t.Errorf("the first kill did not land in the middle of the tree's copy: %+v", chunksByTable(st)["tree"])
		}
		if copierDone(st) {
			break
		}
	}
	p := e.startVplayer(args...)
	eventually.Must(t, 120*time.Second, 20*time.Millisecond, "the workflow Running after the copy", func() error {
		rec := e.record()
		if rec.State == workflow.StateError {
			t.Fatalf("workflow %s, not Running: %s", rec.State, rec.Message)
		}
		if rec.State != workflow.StateRunning {
			return fmt.Errorf("state %s, message %q", rec.State, rec.Message)
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond) // replication under the same writes
	cancel()
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	e.waitCaughtUp(60 * time.Second)
	t.Logf("%d source transactions during the test", writes.Load())
	e.assertEqual(tables)
	chunks, rows := e.copyTotals()
	t.Logf("%d rows copied in %d chunks", rows, chunks)
	if !strings.Contains(logs.String(), "copied whole in one round") {
		t.Errorf("no warning about the tables copied whole:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), `msg="the copy of the table starts again from its first row" workflow=`+e.workflow+" table="+e.db+".tree") {
		t.Errorf("the copy of tree, killed in its middle, did not start again from its first row:\n%s", logs.String())
	}
	if strings.Contains(p.out.String(), "error in stream") {
		t.Errorf("the copy hit stream errors:\n%s", p.out.String())
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("vplayer exited %d after SIGTERM, want 0", code)
	}
}
