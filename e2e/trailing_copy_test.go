package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vplayer/vplayer/sqlq"
	"github.com/vplayer/vplayer/workflow"
)

// trailingCopyTables are TestTrailingCopy's tables: the source's definition, the target's (the
// same columns, then more on one side), and the columns both have. Two take the copy's LOAD DATA,
// two (an ENUM among the shared columns) its INSERTs.
var trailingCopyTables = []struct {
	name, src, dst string
	shared         []string
}{
	{"tgt_more",
		"CREATE TABLE tgt_more (id int NOT NULL PRIMARY KEY, v int NOT NULL, tx text)",
		"CREATE TABLE tgt_more (id int NOT NULL PRIMARY KEY, v int NOT NULL, tx text, added int NOT NULL DEFAULT 42)",
		[]string{"id", "v", "tx"}},
	{"src_more",
		"CREATE TABLE src_more (id int NOT NULL PRIMARY KEY, v int NOT NULL, tx text, extra varchar(10) DEFAULT 'e')",
		"CREATE TABLE src_more (id int NOT NULL PRIMARY KEY, v int NOT NULL, tx text)",
		[]string{"id", "v", "tx"}},
	{"tgt_more_ins",
		"CREATE TABLE tgt_more_ins (id int NOT NULL PRIMARY KEY, v int NOT NULL, tx enum('a','b','c','d'))",
		"CREATE TABLE tgt_more_ins (id int NOT NULL PRIMARY KEY, v int NOT NULL, tx enum('a','b','c','d'), added int NOT NULL DEFAULT 42)",
		[]string{"id", "v", "tx"}},
	{"src_more_ins",
		"CREATE TABLE src_more_ins (id int NOT NULL PRIMARY KEY, v int NOT NULL, tx enum('a','b','c','d'), extra bit(8))",
		"CREATE TABLE src_more_ins (id int NOT NULL PRIMARY KEY, v int NOT NULL, tx enum('a','b','c','d'))",
		[]string{"id", "v", "tx"}},
}

// trailingWriter inserts, updates and deletes rows all over tables, one change per transaction,
// until ctx ends; updates of the source's extra columns change no shared column.
func (e *env) trailingWriter(ctx context.Context, tables []string, rows int, seed uint64, n *atomic.Int64) error {
	rng := rand.New(rand.NewPCG(seed, 1))
	return e.writeUntil(ctx, n, 250*time.Microsecond, func() string {
		tab := tables[rng.IntN(len(tables))]
		i := 1 + rng.IntN(2*rows)
		tx := fmt.Sprintf("'%c'", 'a'+rng.IntN(4))
		switch rng.IntN(5) {
		case 0:
			return fmt.Sprintf("INSERT IGNORE INTO %s (id, v, tx) VALUES (%d, %d, %s)", tab, i, i, tx)
		case 1:
			return fmt.Sprintf("UPDATE %s SET v = v + 1, tx = %s WHERE id >= %d ORDER BY id LIMIT 1", tab, tx, i)
		case 2:
			return fmt.Sprintf("DELETE FROM %s WHERE id >= %d ORDER BY id LIMIT 1", tab, i)
		case 3:
			switch tab {
			case "src_more":
				return fmt.Sprintf("UPDATE src_more SET extra = 'x%d' WHERE id >= %d ORDER BY id LIMIT 1", rng.IntN(100), i)
			case "src_more_ins":
				return fmt.Sprintf("UPDATE src_more_ins SET extra = %d WHERE id >= %d ORDER BY id LIMIT 1", rng.IntN(256), i)
			}
			return fmt.Sprintf("UPDATE IGNORE %s SET id = id + %d WHERE id >= %d ORDER BY id LIMIT 1", tab, 2*rows, i)
		default:
			return fmt.Sprintf("UPDATE %s SET v = v - 1 WHERE id >= %d ORDER BY id LIMIT 1", tab, i)
		}
	})
}

// sharedRows reads the columns cols of table on db, each row as its values' bytes in hex (N for
// NULL), sorted: the same multiset on both sides when the columns hold the same values.
func (e *env) sharedRows(db *sql.DB, table string, cols []string) []string {
	e.t.Helper()
	exprs := make([]string, len(cols))
	for i, c := range cols {
		exprs[i] = "COALESCE(HEX(CAST(" + sqlq.Ident(c) + " AS BINARY)), 'N')"
	}
	rows, err := db.QueryContext(e.ctx(), "SELECT CONCAT_WS(',', "+strings.Join(exprs, ", ")+") FROM "+sqlq.Ident(table))
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestTrailingCopy: a new workflow copies into target tables that exist, empty, with a column more
// than the source's, and from source tables with a column more than the target's (by LOAD DATA and
// by INSERTs), in small chunks (the latter while the source inserts, updates and deletes all over
// them), then replicates the changes to all four: the shared columns end equal, the target's extra
// column at its default, and the log says what the copy wrote. vplayer diff compares the shared
// columns, says so on each table's line, and finds a change in a shared column but not one in the
// target's extra column.
func TestTrailingCopy(t *testing.T) {
	e := newEnv(t)
	const rows = 1000
	for _, tab := range trailingCopyTables {
		e.exec(e.src, tab.src)
		e.exec(e.dst, tab.dst)
		var b strings.Builder
		fmt.Fprintf(&b, "INSERT INTO %s (id, v, tx) VALUES ", tab.name)
		for i := 1; i <= rows; i++ {
			if i > 1 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "(%d, %d, '%c')", i, i, 'a'+i%4)
		}
		e.exec(e.src, b.String())
	}

	// Changes go to every table during the copy and after it: during the copy, an UPDATE of a
	// row the copy has not written yet is written through (idempotent apply), the target's extra
	// columns at their defaults, as the copy writes them.
	write := func(tables []string, seed uint64, during func()) int64 {
		ctx, cancel := context.WithCancel(e.ctx())
		defer cancel()
		var n atomic.Int64
		werr := make(chan error, 1)
		go func() { werr <- e.trailingWriter(ctx, tables, rows, seed, &n) }()
		during()
		cancel()
		if err := <-werr; err != nil {
			t.Fatal(err)
		}
		return n.Load()
	}
	var p *proc
	copying := write([]string{"tgt_more", "src_more", "tgt_more_ins", "src_more_ins"}, 31, func() {
		p = e.startVplayer("--start-pos=", "--copy-chunk-rows", "50")
		e.waitRecordState(workflow.StateCopying, 30*time.Second)
		e.waitRecordState(workflow.StateRunning, 90*time.Second)
	})
	after := write([]string{"tgt_more", "src_more", "tgt_more_ins", "src_more_ins"}, 37, func() { time.Sleep(time.Second) })
	e.waitCaughtUp(60 * time.Second)
	if copying == 0 || after == 0 {
		t.Errorf("source transactions: %d during the copy, %d after it; want some of both", copying, after)
	}
	t.Logf("%d source transactions during the copy, %d after it", copying, after)

	for _, tab := range trailingCopyTables {
		src, dst := e.sharedRows(e.src, tab.name, tab.shared), e.sharedRows(e.dst, tab.name, tab.shared)
		if !slices.Equal(src, dst) || len(src) < rows/2 {
			t.Errorf("%s (%s): %d source rows, %d target rows, equal %v", tab.name, strings.Join(tab.shared, ", "), len(src), len(dst), slices.Equal(src, dst))
		}
	}
	for _, table := range []string{"tgt_more", "tgt_more_ins"} {
		var off int
		if err := e.dst.QueryRowContext(e.ctx(), "SELECT COUNT(*) FROM "+table+" WHERE added <> 42").Scan(&off); err != nil || off != 0 {
			t.Errorf("%d rows of %s (%v) lack the default of the column the source does not have", off, table, err)
		}
	}
	chunks, copied := e.copyTotals()
	t.Logf("%d rows copied in %d chunks", copied, chunks)
	for _, want := range []string{
		"the target table has more columns than the source's: the copy writes the columns they share, the target's defaults fill the rest",
		"target_only=added", "source_only=extra",
	} {
		if !strings.Contains(p.out.String(), want) {
			t.Errorf("vplayer's log does not say %q", want)
		}
	}

	r := e.runDiff("--chunk-size", "100")
	if r.code != 0 || !strings.Contains(r.stdout, "equal: 4 tables") {
		t.Fatalf("vplayer diff after the copy: exit %d, want 0 and 4 equal tables\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, tab := range trailingCopyTables {
		side, col := "target", "added"
		if strings.HasPrefix(tab.name, "src_") {
			side, col = "source", "extra"
		}
		want := regexp.MustCompile(`(?m)^` + tab.name + `: \d+ rows compared: equal \(compared 3 shared columns; ` + side + ` has 1 more: ` + col + `\)$`)
		if !want.MatchString(r.stdout) {
			t.Errorf("the diff's line for %s does not match %s:\n%s", tab.name, want, r.stdout)
		}
	}

	// The target's extra column is not compared; a shared one is.
	var id int
	if err := e.dst.QueryRowContext(e.ctx(), "SELECT MIN(id) FROM tgt_more").Scan(&id); err != nil {
		t.Fatal(err)
	}
	e.exec(e.dst, fmt.Sprintf("UPDATE tgt_more SET added = 7 WHERE id = %d", id))
	if r := e.runDiff("--tables", "tgt_more"); r.code != 0 {
		t.Errorf("vplayer diff after a change in the target's extra column: exit %d, want 0 (the column is not compared)", r.code)
	}
	e.exec(e.dst, fmt.Sprintf("UPDATE tgt_more SET v = v + 1000 WHERE id = %d", id))
	if r := e.runDiff("--tables", "tgt_more"); r.code != 1 || !strings.Contains(r.stdout, fmt.Sprintf("differing: id=%d", id)) {
		t.Errorf("vplayer diff after a change in a shared column: exit %d, want 1 naming id=%d\n%s", r.code, id, r.stdout)
	}

	p.signal(syscall.SIGTERM)
	if code := p.wait(30 * time.Second); code != 0 {
		t.Errorf("vplayer exited %d after SIGTERM, want 0; output:\n%s", code, p.out.String())
	}
}
