package vdiff

import (
	"database/sql"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
)

func TestMain(m *testing.M) {
	code := mysqltest.Run(m)
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// pair is a database of the test's own on the source and on the target.
type pair struct {
	t        *testing.T
	name     string
	src, dst *sql.DB
}

func newPair(t *testing.T) pair {
	t.Helper()
	source, target := mysqltest.Pair(t)
	name := mysqltest.DBName(t)
	return pair{t: t, name: name, src: mysqltest.DB(t, source, name), dst: mysqltest.DB(t, target, name)}
}

// both runs each statement on the source and the target.
func (p pair) both(stmts ...string) {
	p.t.Helper()
	p.exec(p.src, stmts...)
	p.exec(p.dst, stmts...)
}

func (p pair) exec(db *sql.DB, stmts ...string) {
	p.t.Helper()
	for _, q := range stmts {
		if _, err := db.ExecContext(p.t.Context(), q); err != nil {
			p.t.Fatalf("%s: %v", q, err)
		}
	}
}

func (p pair) compare(table string, chunk int) TableResult {
	p.t.Helper()
	r, err := CompareTable(p.t.Context(), p.src, p.dst, p.name, p.name, table, Options{ChunkSize: chunk, MaxKeys: 5})
	if err != nil {
		p.t.Fatalf("CompareTable(%s): %v", table, err)
	}
	return r
}

// values returns "(row), (row)..." for rows 1..n made by f.
func values(n int, f func(i int) string) string {
	out := make([]string, n)
	for i := range out {
		out[i] = "(" + f(i+1) + ")"
	}
	return strings.Join(out, ", ")
}

// TestCompareTable_onlyDifferingChunksAreRowCompared: 1000 equal rows in chunks of 100 are
// compared by checksums alone; a changed row, a deleted row, an added row, a NULL turned into a
// value and a FLOAT changed in its last bit each make exactly their own chunk be read row by row,
// and each is named by its key.
func TestCompareTable_onlyDifferingChunksAreRowCompared(t *testing.T) {
	p := newPair(t)
	p.both(`CREATE TABLE t (id int NOT NULL PRIMARY KEY, v varchar(40) CHARACTER SET utf8mb4, f float, d decimal(10,2), b blob, n int NULL)`,
		"INSERT INTO t VALUES "+values(1000, func(i int) string {
			return fmt.Sprintf("%d, 'row %d ü😀', %d.25, %d.01, REPEAT('x', %d), NULL", i, i, i, i, i%50)
		}))
	r := p.compare("t", 100)
	// 10 full chunks and the empty one that runs from the last key to the end.
	if !r.Equal() || r.Chunks != 11 || r.RowChunks != 0 || r.SourceRows != 1000 || r.TargetRows != 1000 || r.Compared != 1000 {
		t.Fatalf("equal tables: %+v, want equal, 11 chunks, none compared row by row, 1000 rows", r)
	}
	if r.KeyKind != KeyPrimary {
		t.Errorf("KeyKind=%q, want %q", r.KeyKind, KeyPrimary)
	}

	p.exec(p.src, "UPDATE t SET f = 0.1 WHERE id = 888")
	p.exec(p.dst,
		"UPDATE t SET v = 'changed' WHERE id = 150",          // chunk 2
		"DELETE FROM t WHERE id = 420",                       // chunk 5
		"INSERT INTO t VALUES (5000, 'new', 1, 1, '', NULL)", // the last chunk
		"UPDATE t SET n = 0 WHERE id = 777",                  // chunk 8
		"UPDATE t SET f = 0.10000001 WHERE id = 888",         // chunk 9: the next FLOAT after 0.1
	)
	r = p.compare("t", 100)
	if got, want := r.RowChunks, 5; got != want {
		t.Errorf("chunks compared row by row=%d, want %d (one per difference)", got, want)
	}
	if r.Chunks != 11 {
		t.Errorf("chunks=%d, want 11", r.Chunks)
	}
	if r.Missing != 1 || !slices.Equal(r.MissingKeys, []string{"id=420"}) {
		t.Errorf("missing=%d %q, want 1 [id=420]", r.Missing, r.MissingKeys)
	}
	if r.Extra != 1 || !slices.Equal(r.ExtraKeys, []string{"id=5000"}) {
		t.Errorf("extra=%d %q, want 1 [id=5000]", r.Extra, r.ExtraKeys)
	}
	if r.Differing != 3 || !slices.Equal(r.DifferingKeys, []string{"id=150", "id=777", "id=888"}) {
		t.Errorf("differing=%d %q, want 3 [id=150 id=777 id=888]", r.Differing, r.DifferingKeys)
	}
	if r.SourceRows != 1000 || r.TargetRows != 1000 || r.Compared != 1001 {
		t.Errorf("rows: source %d, target %d, compared %d; want 1000, 1000, 1001", r.SourceRows, r.TargetRows, r.Compared)
	}
}

// TestCompareTable_keys: every kind of row identity, and key types whose order is not their
// text's (ENUM, latin1 bytes, binary bytes), chunk and match correctly: equal tables compare
// equal with every row counted once, and injected differences are found and named.
func TestCompareTable_keys(t *testing.T) {
	tests := []struct {
		name     string
		create   string
		rows     string
		chunk    int
		mutate   []string // on the target
		kind     string
		missing  []string
		extra    []string
		differ   []string
		rowCount int64
	}{
		{
			name:   "composite primary key",
			create: "CREATE TABLE t (a int NOT NULL, b varchar(10) CHARACTER SET utf8mb4 NOT NULL, v int, PRIMARY KEY (a, b))",
			rows: values(60, func(i int) string {
				return fmt.Sprintf("%d, '%c', %d", i%7, 'a'+rune(i%9), i)
			}),
			chunk:    4,
			mutate:   []string{"UPDATE t SET v = -1 WHERE a = 3 AND b = 'c'", "DELETE FROM t WHERE a = 1 AND b = 'b'", "INSERT INTO t VALUES (3, 'zz', 0)"},
			kind:     KeyPrimary,
			missing:  []string{`a=1,b="b"`},
			extra:    []string{`a=3,b="zz"`},
			differ:   []string{`a=3,b="c"`},
			rowCount: 60,
		},
		{
			name:   "unique key over NOT NULL latin1 bytes",
			create: "CREATE TABLE t (u varchar(10) CHARACTER SET latin1 NOT NULL, v int, UNIQUE KEY uk (u))",
			rows: values(40, func(i int) string {
				return fmt.Sprintf("CONCAT(CHAR(%d), 'k', %d), %d", 0xC0+i%30, i, i)
			}),
			chunk:    3,
			mutate:   []string{"UPDATE t SET v = 99 WHERE u = CONCAT(CHAR(0xC5), 'k', 5)"},
			kind:     KeyUnique + " uk",
			differ:   []string{"u=0xC56B35"},
			rowCount: 40,
		},
		{
			name:   "a unique key over a NULL-able column is passed over",
			create: "CREATE TABLE t (a int NULL, u int NOT NULL, v int, UNIQUE KEY a_first (a), UNIQUE KEY uk (u))",
			rows: values(20, func(i int) string {
				return fmt.Sprintf("%s, %d, %d", map[bool]string{true: "NULL", false: fmt.Sprint(i)}[i%4 == 0], i, i)
			}),
			chunk:    3,
			mutate:   []string{"UPDATE t SET v = -1 WHERE u = 5"},
			kind:     KeyUnique + " uk",
			differ:   []string{"u=5"},
			rowCount: 20,
		},
		{
			name:     "enum key sorts by its index",
			create:   "CREATE TABLE t (e enum('zz','mm','aa') NOT NULL, id int NOT NULL, PRIMARY KEY (e, id))",
			rows:     values(30, func(i int) string { return fmt.Sprintf("%d, %d", 1+i%3, i) }),
			chunk:    4,
			mutate:   []string{"DELETE FROM t WHERE e = 'aa' AND id = 2"},
			kind:     KeyPrimary,
			missing:  []string{"e=3,id=2"},
			rowCount: 30,
		},
		{
			name:     "binary key with NUL and 0xFF",
			create:   "CREATE TABLE t (k varbinary(8) NOT NULL PRIMARY KEY, v int)",
			rows:     values(50, func(i int) string { return fmt.Sprintf("CONCAT(CHAR(%d), CHAR(0), CHAR(255)), %d", i*5, i) }),
			chunk:    6,
			mutate:   []string{"INSERT INTO t VALUES ('', 0)", "UPDATE t SET v = 0 WHERE k = CONCAT(CHAR(250), CHAR(0), CHAR(255))"},
			kind:     KeyPrimary,
			extra:    []string{`k=""`},
			differ:   []string{"k=0xFA00FF"},
			rowCount: 50,
		},
		{
			name:   "no key: rows as a multiset",
			create: "CREATE TABLE t (a int, b varchar(10))",
			rows: values(20, func(i int) string {
				return fmt.Sprintf("%d, %s", i%4, map[bool]string{true: "NULL", false: "'x'"}[i%5 == 0])
			}),
			chunk:    3,
			mutate:   []string{"DELETE FROM t WHERE a = 1 AND b = 'x' LIMIT 1", "INSERT INTO t VALUES (1, NULL)"},
			kind:     KeyNone,
			missing:  []string{`a=1,b="x"`},
			extra:    []string{"a=1,b=NULL"},
			rowCount: 20,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPair(t)
			p.both(tt.create, "INSERT INTO t VALUES "+tt.rows)
			r := p.compare("t", tt.chunk)
			if !r.Equal() || r.RowChunks != 0 || r.SourceRows != tt.rowCount || r.TargetRows != tt.rowCount {
				t.Fatalf("equal tables: %+v, want equal with %d rows on each side", r, tt.rowCount)
			}
			if r.KeyKind != tt.kind {
				t.Errorf("KeyKind=%q, want %q", r.KeyKind, tt.kind)
			}
			p.exec(p.dst, tt.mutate...)
			r = p.compare("t", tt.chunk)
			if !slices.Equal(r.MissingKeys, tt.missing) || !slices.Equal(r.ExtraKeys, tt.extra) || !slices.Equal(r.DifferingKeys, tt.differ) {
				t.Errorf("missing %q, extra %q, differing %q; want %q, %q, %q", r.MissingKeys, r.ExtraKeys, r.DifferingKeys, tt.missing, tt.extra, tt.differ)
			}
			if int(r.Missing) != len(tt.missing) || int(r.Extra) != len(tt.extra) || int(r.Differing) != len(tt.differ) {
				t.Errorf("counts missing %d, extra %d, differing %d; want %d, %d, %d", r.Missing, r.Extra, r.Differing, len(tt.missing), len(tt.extra), len(tt.differ))
			}
			if r.Equal() {
				t.Error("Equal()=true after changes on the target")
			}
		})
	}
}

func TestCompareTable_schemaProblems(t *testing.T) {
	p := newPair(t)
	p.exec(p.src, "CREATE TABLE only_source (id int PRIMARY KEY)", "CREATE TABLE cols (id int PRIMARY KEY, a int, b int)")
	p.exec(p.dst, "CREATE TABLE cols (id int PRIMARY KEY, b int, a int)")
	if r := p.compare("only_source", 10); r.Equal() || !strings.Contains(r.Problem, "does not exist on the target") {
		t.Errorf("missing target table: %+v, want a problem naming it", r)
	}
	if r := p.compare("cols", 10); r.Equal() || !strings.Contains(r.Problem, "columns differ: source (id, a, b), target (id, b, a)") {
		t.Errorf("reordered columns: %+v, want a problem listing both", r)
	}
}
