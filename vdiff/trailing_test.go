package vdiff

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestCompareTable_trailingColumns: when the source or the target table has more columns after
// the ones they share, the shared columns are compared (rows identified by a key among them) and
// the result says which columns were not: a change in a shared column is found, one in a column
// only the target has is not.
func TestCompareTable_trailingColumns(t *testing.T) {
	tests := []struct {
		name           string
		src, dst       string
		srcRow, dstRow func(i int) string
		mutate         []string // on the target: none of it changes a shared column
		differ         string   // on the target: changes a shared column
		kind, note     string
		differed       []string
	}{
		{
			name:     "target has more",
			src:      "CREATE TABLE t (id int NOT NULL PRIMARY KEY, v int, tx text)",
			dst:      "CREATE TABLE t (id int NOT NULL PRIMARY KEY, v int, tx text, added int NOT NULL DEFAULT 42)",
			srcRow:   func(i int) string { return fmt.Sprintf("%d, %d, REPEAT('x', %d)", i, i*3, i) },
			dstRow:   func(i int) string { return fmt.Sprintf("%d, %d, REPEAT('x', %d), DEFAULT", i, i*3, i) },
			mutate:   []string{"UPDATE t SET added = 7 WHERE id = 3"},
			differ:   "UPDATE t SET v = -1 WHERE id = 12",
			kind:     KeyPrimary,
			note:     "compared 3 shared columns; target has 1 more: added",
			differed: []string{"id=12"},
		},
		{
			name:     "source has more",
			src:      "CREATE TABLE t (id int NOT NULL PRIMARY KEY, v varchar(10) CHARACTER SET utf8mb4, extra int, extra2 blob)",
			dst:      "CREATE TABLE t (id int NOT NULL PRIMARY KEY, v varchar(10) CHARACTER SET utf8mb4)",
			srcRow:   func(i int) string { return fmt.Sprintf("%d, 'v%d', %d, NULL", i, i, i) },
			dstRow:   func(i int) string { return fmt.Sprintf("%d, 'v%d'", i, i) },
			differ:   "UPDATE t SET v = NULL WHERE id = 20",
			kind:     KeyPrimary,
			note:     "compared 2 shared columns; source has 2 more: extra, extra2",
			differed: []string{"id=20"},
		},
		{
			name:     "the source's primary key has a column the target lacks",
			src:      "CREATE TABLE t (id int NOT NULL, v int, extra int NOT NULL, PRIMARY KEY (extra), UNIQUE KEY uid (id))",
			dst:      "CREATE TABLE t (id int NOT NULL PRIMARY KEY, v int)",
			srcRow:   func(i int) string { return fmt.Sprintf("%d, %d, %d", i, i, 100-i) },
			dstRow:   func(i int) string { return fmt.Sprintf("%d, %d", i, i) },
			differ:   "UPDATE t SET v = 0 WHERE id = 7",
			kind:     KeyUnique + " uid",
			note:     "compared 2 shared columns; source has 1 more: extra",
			differed: []string{"id=7"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPair(t)
			p.exec(p.src, tt.src, "INSERT INTO t VALUES "+values(30, tt.srcRow))
			p.exec(p.dst, tt.dst, "INSERT INTO t VALUES "+values(30, tt.dstRow))
			p.exec(p.dst, tt.mutate...)
			r := p.compare("t", 7)
			if !r.Equal() || r.Compared != 30 || r.KeyKind != tt.kind {
				t.Fatalf("equal shared columns: %+v, want equal, 30 rows compared by %s", r, tt.kind)
			}
			if got := r.ColumnsNote(); got != tt.note {
				t.Errorf("ColumnsNote()=%q, want %q", got, tt.note)
			}
			p.exec(p.dst, tt.differ)
			r = p.compare("t", 7)
			if r.Equal() || !slices.Equal(r.DifferingKeys, tt.differed) || r.Missing != 0 || r.Extra != 0 {
				t.Errorf("after %s: %+v, want %q differing", tt.differ, r, tt.differed)
			}
		})
	}
}

// TestCompareTable_sharedColumnsDiffer: shared columns that differ by name or order, whatever
// follows them, are a problem naming the first that differs.
func TestCompareTable_sharedColumnsDiffer(t *testing.T) {
	p := newPair(t)
	p.exec(p.src, "CREATE TABLE t (id int PRIMARY KEY, a int, b int)")
	p.exec(p.dst, "CREATE TABLE t (id int PRIMARY KEY, b int, a int, added int)")
	r := p.compare("t", 10)
	if r.Equal() || !strings.Contains(r.Problem, "columns differ: source (id, a, b), target (id, b, a, added): column 2 is a on the source but b on the target") {
		t.Errorf("%+v, want a problem naming column 2", r)
	}
	if r.ColumnsNote() != "" {
		t.Errorf("ColumnsNote()=%q for a table not compared, want none", r.ColumnsNote())
	}
}
