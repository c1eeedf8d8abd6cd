package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vplayer/vplayer/workflow"
)

// versionedTables are MariaDB system-versioned tables, and plain ones with an INVISIBLE column:
// the same statements on both sides. vt's period is hidden (row_start, row_end), ve names its
// own, vk has no key; vt references parent, so that its copy waits for parent's, while the
// stream applies vt's changes.
var versionedTables = []struct{ name, def, history string }{
	{"parent", "id INT NOT NULL PRIMARY KEY, inv INT INVISIBLE DEFAULT 3", ""},
	{"vt", "id INT NOT NULL PRIMARY KEY, v VARCHAR(20), n INT, nv INT WITHOUT SYSTEM VERSIONING, inv INT INVISIBLE DEFAULT 7, p INT, KEY kn (n), FOREIGN KEY (p) REFERENCES parent (id)",
		"id, v, n, nv, inv, row_start, row_end"},
	{"ve", "id INT NOT NULL, v INT, s TIMESTAMP(6) GENERATED ALWAYS AS ROW START INVISIBLE, e TIMESTAMP(6) GENERATED ALWAYS AS ROW END INVISIBLE, PERIOD FOR SYSTEM_TIME (s, e), PRIMARY KEY (id)",
		"id, v, s, e"},
	{"vk", "a INT, b VARCHAR(10)", "a, b, row_start, row_end"},
	{"plain", "id INT NOT NULL PRIMARY KEY, v INT, inv INT INVISIBLE DEFAULT 3", ""},
}

// createVersioned creates versionedTables on db.
func (e *env) createVersioned(db *sql.DB) []string {
	e.t.Helper()
	var names []string
	for _, tb := range versionedTables {
		q := "CREATE TABLE " + tb.name + " (" + tb.def + ")"
		if tb.history != "" {
			q += " WITH SYSTEM VERSIONING"
		}
		e.execOn(db, q)
		names = append(names, tb.name)
	}
	return names
}

// versionedHistory writes rows into versionedTables and changes them, so that each versioned
// table has history: updates of one and several rows, of the key, of a column without
// versioning alone, deletes, REPLACE, an upsert, a row inserted, changed and deleted in one
// transaction, history rows inserted as they are, and DELETE HISTORY.
func (e *env) versionedHistory(db *sql.DB, base int) {
	e.t.Helper()
	id := func(i int) int { return base + i }
	var parents []string
	for i := 1; i <= 10; i++ {
		parents = append(parents, fmt.Sprintf("(%d)", id(i)))
	}
	e.execOn(db,
		"INSERT INTO parent (id) VALUES "+strings.Join(parents, ", "),
		fmt.Sprintf("INSERT INTO vt (id, v, n, nv, p) VALUES (%d, 'a', 1, 1, %d), (%d, 'b', 2, 2, %d), (%d, 'c', 3, 3, NULL), (%d, 'd', 4, 4, NULL), (%d, 'e', 5, 5, NULL)", id(1), id(1), id(2), id(2), id(3), id(4), id(5)),
		fmt.Sprintf("INSERT INTO vt (id, v, n, nv, inv) VALUES (%d, 'f', 6, 6, 60)", id(6)),
		fmt.Sprintf("INSERT INTO ve (id, v) VALUES (%d, 1), (%d, 2), (%d, 3)", id(1), id(2), id(3)),
		fmt.Sprintf("INSERT INTO vk VALUES (%d, 'x'), (%d, 'y'), (%d, NULL)", id(1), id(2), id(3)),
		fmt.Sprintf("INSERT INTO plain (id, v, inv) VALUES (%d, 1, 10), (%d, 2, 20)", id(1), id(2)),
	)
	e.execOn(db,
		fmt.Sprintf("UPDATE vt SET v = CONCAT(v, '2') WHERE id = %d", id(1)),
		fmt.Sprintf("UPDATE vt SET n = n + 10 WHERE id BETWEEN %d AND %d", id(2), id(4)),
		fmt.Sprintf("UPDATE vt SET nv = nv + 100 WHERE id = %d", id(5)),
		fmt.Sprintf("UPDATE vt SET id = %d WHERE id = %d", id(7), id(6)),
		fmt.Sprintf("UPDATE vt SET inv = inv + 1, p = %d WHERE id = %d", id(3), id(7)),
		fmt.Sprintf("DELETE FROM vt WHERE id = %d", id(3)),
		fmt.Sprintf("REPLACE INTO vt (id, v, n, nv) VALUES (%d, 'r', 40, 40)", id(4)),
		fmt.Sprintf("INSERT INTO vt (id, v, n, nv) VALUES (%d, 'u', 0, 0) ON DUPLICATE KEY UPDATE v = 'upserted'", id(2)),
		fmt.Sprintf("UPDATE ve SET v = v * 10 WHERE id >= %d", id(1)),
		fmt.Sprintf("DELETE FROM ve WHERE id = %d", id(3)),
		fmt.Sprintf("UPDATE vk SET b = 'z' WHERE a = %d", id(2)),
		fmt.Sprintf("DELETE FROM vk WHERE a = %d", id(3)),
		fmt.Sprintf("UPDATE plain SET v = v + 1, inv = inv + 1 WHERE id = %d", id(1)),
		fmt.Sprintf("DELETE FROM plain WHERE id = %d", id(2)),
	)
	e.execTxn(db,
		fmt.Sprintf("INSERT INTO vt (id, v) VALUES (%d, 'tx')", id(8)),
		fmt.Sprintf("UPDATE vt SET v = 'tx2' WHERE id = %d", id(8)),
		fmt.Sprintf("UPDATE vt SET v = 'tx3' WHERE id = %d", id(8)),
		fmt.Sprintf("DELETE FROM vt WHERE id = %d", id(8)),
		fmt.Sprintf("INSERT INTO vt (id, v) VALUES (%d, 'again')", id(8)),
	)
	// History rows written as they are, as a restore of a dump with its history does.
	e.execOn(db, "SET SESSION system_versioning_insert_history = 1",
		fmt.Sprintf("INSERT INTO vt (id, v, n, row_start, row_end) VALUES (%d, 'old', 0, '2001-01-01 00:00:00.000001', '2002-01-01 00:00:00.5'), (%d, 'older', 0, '2000-01-01', '2001-01-01')", id(9), id(9)),
		fmt.Sprintf("INSERT INTO ve (id, v, s, e) VALUES (%d, -1, '2001-01-01', '2001-06-01 12:00:00.25')", id(9)),
		"SET SESSION system_versioning_insert_history = 0",
	)
	// Retention: the oldest history goes.
	e.execOn(db, "DELETE HISTORY FROM vt BEFORE SYSTEM_TIME '2001-06-01'", "DELETE HISTORY FROM ve BEFORE SYSTEM_TIME '2001-06-01 12:00:00.250001'")
}

// versionedRows reads every row of a versioned table, its history too, as bytes, in the order of
// all its columns.
func (e *env) versionedRows(db *sql.DB, table, cols string) [][]sql.RawBytes {
	e.t.Helper()
	var casts []string
	for _, c := range strings.Split(cols, ", ") {
		casts = append(casts, "CAST("+c+" AS BINARY)")
	}
	q := "SELECT " + strings.Join(casts, ", ") + " FROM " + table + " FOR SYSTEM_TIME ALL ORDER BY " + strings.Join(casts, ", ")
	rows, err := db.QueryContext(e.ctx(), q)
	if err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out [][]sql.RawBytes
	for rows.Next() {
		r := make([]sql.RawBytes, len(casts))
		ptrs := make([]any, len(r))
		for i := range r {
			ptrs[i] = &r[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			e.t.Fatal(err)
		}
		for i := range r {
			if r[i] != nil {
				r[i] = append(sql.RawBytes{}, r[i]...)
			}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// assertSameHistory compares every row of each versioned table, history rows included, their
// row start and row end too, byte for byte; each must have history rows.
func (e *env) assertSameHistory() {
	e.t.Helper()
	for _, tb := range versionedTables {
		if tb.history == "" {
			continue
		}
		src, dst := e.versionedRows(e.src, tb.name, tb.history), e.versionedRows(e.dst, tb.name, tb.history)
		cols := strings.Split(tb.history, ", ")
		var hist int
		if err := e.src.QueryRowContext(e.ctx(), "SELECT COUNT(*) FROM "+tb.name+" FOR SYSTEM_TIME ALL WHERE "+cols[len(cols)-1]+" < NOW(6)").Scan(&hist); err != nil {
			e.t.Fatal(err)
		}
		if hist == 0 {
			e.t.Errorf("%s: no history rows on the source: the test versioned nothing", tb.name)
		}
		if len(src) != len(dst) {
			e.t.Errorf("%s: source has %d rows with its history, target %d", tb.name, len(src), len(dst))
		}
		for i := range min(len(src), len(dst)) {
			for j := range src[i] {
				if !bytes.Equal(src[i][j], dst[i][j]) || (src[i][j] == nil) != (dst[i][j] == nil) {
					e.t.Errorf("%s row %d (%s): column %d: source %q, target %q", tb.name, i+1, tb.history, j+1, src[i][j], dst[i][j])
				}
			}
		}
		e.t.Logf("%s: %d rows, %d of them history, equal with their periods", tb.name, len(src), hist)
	}
}

// versionedWriter changes vt on the source, one statement a transaction, until ctx ends.
func (e *env) versionedWriter(ctx context.Context, n *atomic.Int64) error {
	var i int
	return e.writeUntil(ctx, n, 2*time.Millisecond, func() string {
		i++
		switch i % 5 {
		case 0:
			return fmt.Sprintf("INSERT INTO vt (id, v, n) VALUES (%d, 'w', %d)", 5000+i, i)
		case 1:
			return fmt.Sprintf("UPDATE vt SET v = 'w%d', n = n + 1 WHERE id = %d", i, 1+i%12)
		case 2:
			return fmt.Sprintf("UPDATE vt SET nv = %d WHERE id = %d", i, 1+i%12)
		case 3:
			return fmt.Sprintf("DELETE FROM vt WHERE id = %d", 5000+i-3)
		default:
			return fmt.Sprintf("UPDATE ve SET v = %d WHERE id = %d", i, 1+i%3)
		}
	})
}

// TestVersioned: system-versioned tables (a hidden period, a named one, no key), with history,
// are copied onto a target that lacks them in chunks of two rows while the source keeps
// changing them, then replicated through every kind of change a versioned table logs (updates
// that keep history rows, deletes that end rows, REPLACE, upserts, history rows inserted as
// they are, DELETE HISTORY). The target ends with the source's current rows and its history,
// byte for byte, row start and row end included; `vplayer diff` finds them equal, then finds a
// current row changed on the target, by its value and by its row start.
func TestVersioned(t *testing.T) {
	e := newEnv(t)
	names := e.createVersioned(e.src)
	e.versionedHistory(e.src, 0)
	for i := 10; i <= 12; i++ {
		e.execOn(e.src, fmt.Sprintf("INSERT INTO vt (id, v, n) VALUES (%d, 'k', %d)", i, i))
	}

	ctx, cancel := context.WithCancel(e.ctx())
	var n atomic.Int64
	done := make(chan error, 1)
	go func() { done <- e.versionedWriter(ctx, &n) }()
	cfg := e.streamConfig()
	cfg.StartPos, cfg.CopyChunkRows = "", 2
	stop := e.runStream(cfg)
	e.waitRecordState(workflow.StateRunning, 60*time.Second)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d transactions written during the copy", n.Load())
	var chunks int64
	for _, c := range e.copyState() {
		chunks += c.Chunks
	}
	if chunks <= int64(len(names)) {
		t.Errorf("copied in %d chunks, want the tables cut in chunks of two rows", chunks)
	}

	e.versionedHistory(e.src, 100)
	e.waitCaughtUp(30 * time.Second)
	if err := stop(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if r := e.record(); r.Message != "" {
		t.Errorf("record message = %q, want none", r.Message)
	}
	e.assertIdentical(e.db, names)
	e.assertEqual(names)
	e.assertSameHistory()

	r := e.runDiff("--chunk-size", "2")
	if r.code != 0 {
		t.Fatalf("vplayer diff exited %d on equal data, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if want := fmt.Sprintf("equal: %d tables", len(names)); !strings.Contains(r.stdout, want) {
		t.Errorf("diff report lacks %q:\n%s", want, r.stdout)
	}
	// One row changed, one changed and changed back: the same values, a later row start.
	e.execOn(e.dst, "UPDATE vt SET v = 'tampered' WHERE id = 1", "UPDATE vt SET n = n + 1 WHERE id = 2", "UPDATE vt SET n = n - 1 WHERE id = 2")
	r = e.runDiff("--chunk-size", "2")
	if r.code != 1 {
		t.Fatalf("vplayer diff exited %d with differences, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"differing: id=1; id=2\n", fmt.Sprintf("DIFFERENT: 1 of %d tables", len(names))} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("diff report lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestVersioned_stream: the same tables created on both sides, with a sequence a versioned
// table takes its keys from, replicated from the current position by four apply workers: the
// target ends with the source's current rows, history and sequence.
func TestVersioned_stream(t *testing.T) {
	e := newEnv(t)
	var names []string
	for _, db := range []*sql.DB{e.src, e.dst} {
		names = e.createVersioned(db)
		e.execOn(db, "CREATE SEQUENCE sq START WITH 100 INCREMENT BY 5 CACHE 2",
			"CREATE TABLE vs (id INT NOT NULL PRIMARY KEY DEFAULT (NEXT VALUE FOR sq), v INT) WITH SYSTEM VERSIONING")
	}
	cfg := e.streamConfig()
	cfg.ApplyWorkers = 4
	stop := e.runStream(cfg)
	e.waitRunning(30 * time.Second)
	e.versionedHistory(e.src, 0)
	for i := range 20 {
		e.execOn(e.src, fmt.Sprintf("INSERT INTO vs (v) VALUES (%d), (%d)", i, -i), fmt.Sprintf("UPDATE vs SET v = v + 1000 WHERE v = %d", i))
	}
	e.execOn(e.src, "DELETE FROM vs WHERE v < 0 AND v > -10")
	e.waitCaughtUp(30 * time.Second)
	if err := stop(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if r := e.record(); r.Message != "" {
		t.Errorf("record message = %q, want none", r.Message)
	}
	e.assertIdentical(e.db, append(names, "vs"))
	e.assertSameHistory()
	src, dst := e.versionedRows(e.src, "vs", "id, v, row_start, row_end"), e.versionedRows(e.dst, "vs", "id, v, row_start, row_end")
	if fmt.Sprint(src) != fmt.Sprint(dst) || len(src) < 60 {
		t.Errorf("vs with its history: source %d rows, target %d, not the same", len(src), len(dst))
	}
	var s, d string
	if err := e.src.QueryRowContext(e.ctx(), "SELECT CONCAT_WS(',', next_not_cached_value, cache_size) FROM sq").Scan(&s); err != nil {
		t.Fatal(err)
	}
	if err := e.dst.QueryRowContext(e.ctx(), "SELECT CONCAT_WS(',', next_not_cached_value, cache_size) FROM sq").Scan(&d); err != nil {
		t.Fatal(err)
	}
	if s != d {
		t.Errorf("sequence sq: source %s, target %s", s, d)
	}
}
