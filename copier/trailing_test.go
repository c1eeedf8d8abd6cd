package copier

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/sqlq"
)

// trailingSource are the source tables of the trailing-column tests, trailingTarget the target's
// tables created before the copy: either side has more columns after the ones they share, on
// tables that take LOAD DATA (tgt_more, src_more) and INSERTs (an ENUM or a BIT column, no key).
var (
	trailingSource = []string{
		"CREATE TABLE tgt_more (id int NOT NULL PRIMARY KEY, v int, tx text) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
		"INSERT INTO tgt_more VALUES (1, 1, 'a\\tb'), (2, NULL, NULL), (3, 3, ''), (4, 4, 'ü😀'), (5, 5, '\\\\N'), (6, 6, 'x')",
		"CREATE TABLE src_more (id int NOT NULL PRIMARY KEY, v varchar(20), extra varchar(10) DEFAULT 'e', extra2 blob) ENGINE=InnoDB",
		"INSERT INTO src_more VALUES (1, 'one', 'x', 'b1'), (2, NULL, NULL, NULL), (3, 'three', 'y', '\\0'), (4, 'four', DEFAULT, 'b4'), (5, 'five', 'z', '')",
		"CREATE TABLE tgt_more_ins (id int NOT NULL PRIMARY KEY, e enum('a','b','c'), b bit(8)) ENGINE=InnoDB",
		"INSERT INTO tgt_more_ins VALUES (1, 'a', b'1'), (2, 'c', b'11111111'), (3, NULL, NULL), (4, 'b', b'0'), (5, 'a', b'101')",
		"CREATE TABLE src_more_ins (id int NOT NULL PRIMARY KEY, e enum('a','b'), extra bit(4)) ENGINE=InnoDB",
		"INSERT INTO src_more_ins VALUES (1, 'a', b'1'), (2, 'b', NULL), (3, NULL, b'1111')",
		// The source's primary key has a column the target lacks: the copy's key is the unique
		// key over the shared id.
		"CREATE TABLE src_key (id int NOT NULL, v int, extra int NOT NULL, PRIMARY KEY (extra), UNIQUE KEY uid (id)) ENGINE=InnoDB",
		"INSERT INTO src_key VALUES (5, 50, 1), (4, 40, 2), (3, 30, 3), (2, 20, 4), (1, 10, 5)",
		"CREATE TABLE nokey_more (a int, b varchar(10)) ENGINE=InnoDB",
		"INSERT INTO nokey_more VALUES (1, 'x'), (1, 'x'), (NULL, NULL), (2, 'y')",
	}
	trailingTarget = []string{
		"CREATE TABLE tgt_more (id int NOT NULL PRIMARY KEY, v int, tx text, added int NOT NULL DEFAULT 42, at varchar(8) NOT NULL DEFAULT 'dflt', dbl int AS (v * 2) VIRTUAL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
		"CREATE TABLE src_more (id int NOT NULL PRIMARY KEY, v varchar(20)) ENGINE=InnoDB",
		"CREATE TABLE tgt_more_ins (id int NOT NULL PRIMARY KEY, e enum('a','b','c'), b bit(8), added int NOT NULL DEFAULT 42) ENGINE=InnoDB",
		"CREATE TABLE src_more_ins (id int NOT NULL PRIMARY KEY, e enum('a','b')) ENGINE=InnoDB",
		"CREATE TABLE src_key (id int NOT NULL PRIMARY KEY, v int) ENGINE=InnoDB",
		"CREATE TABLE nokey_more (a int, b varchar(10), added int NOT NULL DEFAULT 42) ENGINE=InnoDB",
	}
	trailingTables = []string{"nokey_more", "src_key", "src_more", "src_more_ins", "tgt_more", "tgt_more_ins"}
)

// newTrailingEnv is a copyEnv with the trailing-column tables on both sides.
func newTrailingEnv(t *testing.T) *copyEnv {
	t.Helper()
	e := newCopyEnv(t, trailingSource...)
	for _, q := range trailingTarget {
		if _, err := e.dst.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return e
}

// copyWith plans and runs the copy of tables with an idle source; each round's catch-up calls
// caughtUp (when set) with the round's number, in place of the stream's changes.
func (e *copyEnv) copyWith(t *testing.T, tables []string, caughtUp func(round int)) (*Copier, error) {
	t.Helper()
	ctx := t.Context()
	if err := Plan(ctx, e.cfg, tables); err != nil {
		return nil, err
	}
	c := New(e.cfg)
	rounds := 0
	err := c.Run(ctx, func(context.Context, binlog.Position) error {
		rounds++
		if caughtUp != nil {
			caughtUp(rounds)
		}
		return nil
	})
	t.Logf("%d rounds", rounds)
	return c, err
}

// sharedRows reads the columns cols of table on db, each row as its values' bytes in hex (N for
// NULL), sorted: the same multiset on both sides when the columns hold the same values.
func sharedRows(t *testing.T, db *sql.DB, table string, cols []string) []string {
	t.Helper()
	exprs := make([]string, len(cols))
	for i, c := range cols {
		exprs[i] = "COALESCE(HEX(CAST(" + sqlq.Ident(c) + " AS BINARY)), 'N')"
	}
	rows, err := db.QueryContext(t.Context(), "SELECT CONCAT_WS(',', "+strings.Join(exprs, ", ")+") FROM "+sqlq.Ident(table))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// sharedColumns lists the columns of trailingTables both sides have.
var sharedColumns = map[string][]string{
	"tgt_more":     {"id", "v", "tx"},
	"src_more":     {"id", "v"},
	"tgt_more_ins": {"id", "e", "b"},
	"src_more_ins": {"id", "e"},
	"src_key":      {"id", "v"},
	"nokey_more":   {"a", "b"},
}

// TestLoadTable_sharedColumns: the copy of a table whose source or target has more columns after
// the ones they share reads and writes the shared ones (but a column the target generates), by
// LOAD DATA when they all read back exactly from text, and keys its chunks on a key among them.
func TestLoadTable_sharedColumns(t *testing.T) {
	e := newTrailingEnv(t)
	tests := []struct {
		table                  string
		cols                   []string
		load                   bool
		key                    []string
		sourceOnly, targetOnly []string
	}{
		{"tgt_more", []string{"id", "v", "tx"}, true, []string{"id"}, nil, []string{"added", "at", "dbl"}},
		{"src_more", []string{"id", "v"}, true, []string{"id"}, []string{"extra", "extra2"}, nil},
		{"tgt_more_ins", []string{"id", "e", "b"}, false, []string{"id"}, nil, []string{"added"}},
		{"src_more_ins", []string{"id", "e"}, false, []string{"id"}, []string{"extra"}, nil},
		{"src_key", []string{"id", "v"}, true, []string{"id"}, []string{"extra"}, nil},
		{"nokey_more", []string{"a", "b"}, true, nil, nil, []string{"added"}},
	}
	for _, tt := range tests {
		t.Run(tt.table, func(t *testing.T) {
			tab, err := loadTable(t.Context(), e.src, e.dst, e.db, e.db, tt.table, false)
			if err != nil {
				t.Fatal(err)
			}
			var cols, key []string
			for _, c := range tab.cols {
				cols = append(cols, c.name)
			}
			for _, k := range tab.key {
				key = append(key, k.Name)
			}
			if !slices.Equal(cols, tt.cols) || !slices.Equal(key, tt.key) || (tab.loadCols != "") != tt.load {
				t.Errorf("columns %q, key %q, LOAD DATA columns %q; want %q, %q, LOAD DATA %v", cols, key, tab.loadCols, tt.cols, tt.key, tt.load)
			}
			if !slices.Equal(tab.sourceOnly, tt.sourceOnly) || !slices.Equal(tab.targetOnly, tt.targetOnly) {
				t.Errorf("source only %q, target only %q; want %q, %q", tab.sourceOnly, tab.targetOnly, tt.sourceOnly, tt.targetOnly)
			}
			if strings.Contains(tab.query(nil, 10), "extra") || strings.Contains(tab.head, "added") {
				t.Errorf("a column one side lacks is read or written: %s; %s", tab.query(nil, 10), tab.head)
			}
		})
	}
}

// TestCopier_Run_trailingColumns: into target tables with more columns than the source's, and
// from source tables with more columns than the target's, the copy writes the shared columns
// exactly, through LOAD DATA and through INSERTs, in chunks of two rows over several rounds, and
// the target's extra columns hold their defaults. A row the stream wrote above a table's last
// copied key (here written by hand into the target) is replaced by the next chunk.
func TestCopier_Run_trailingColumns(t *testing.T) {
	e := newTrailingEnv(t)
	e.cfg.ChunkRows = 2
	ctx := t.Context()
	c, err := e.copyWith(t, trailingTables, func(round int) {
		if round != 2 {
			return
		}
		for _, q := range []string{
			"INSERT INTO tgt_more (id, v, tx, added) VALUES (1000, 1, 'stale', 7)",
			"INSERT INTO tgt_more_ins (id, e) VALUES (1000, 'a')",
		} {
			if _, err := e.dst.ExecContext(ctx, q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	if err != nil {
		t.Fatalf("copy: %v", err)
	}
	if got, want := c.RowsCopied(), int64(28); got != want {
		t.Errorf("RowsCopied()=%d, want %d", got, want)
	}
	for _, table := range trailingTables {
		cols := sharedColumns[table]
		src, dst := sharedRows(t, e.src, table, cols), sharedRows(t, e.dst, table, cols)
		if !slices.Equal(src, dst) || len(src) == 0 {
			t.Errorf("%s (%s): source %q, target %q", table, strings.Join(cols, ", "), src, dst)
		}
	}
	for _, q := range []string{
		"SELECT COUNT(*) FROM tgt_more WHERE added <> 42 OR at <> 'dflt' OR NOT (dbl <=> v * 2)",
		"SELECT COUNT(*) FROM tgt_more_ins WHERE added <> 42",
		"SELECT COUNT(*) FROM nokey_more WHERE added <> 42",
	} {
		var n int
		if err := e.dst.QueryRowContext(ctx, q).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s = %d (%v), want 0: every extra target column at its default", q, n, err)
		}
	}
}

// TestCopy_sharedColumnsDiffer: a target table whose shared columns differ from the source's by
// name or order is an error naming it (ErrColumns, which no retry fixes), at the plan and, for a
// table changed after it, at the copy.
func TestCopy_sharedColumnsDiffer(t *testing.T) {
	e := newCopyEnv(t,
		"CREATE TABLE swapped (id int NOT NULL PRIMARY KEY, a int, b int)",
		"CREATE TABLE later (id int NOT NULL PRIMARY KEY, a int)",
		"INSERT INTO later VALUES (1, 1)")
	ctx := t.Context()
	if _, err := e.dst.ExecContext(ctx, "CREATE TABLE swapped (id int NOT NULL PRIMARY KEY, b int, a int, added int)"); err != nil {
		t.Fatal(err)
	}
	err := Plan(ctx, e.cfg, []string{"swapped"})
	if !errors.Is(err, ErrColumns) || !errors.Is(err, ErrDefinition) || !strings.Contains(err.Error(), e.db+".swapped: column 2 is a on the source but b on the target") {
		t.Fatalf("Plan: %v, want an ErrColumns (and ErrDefinition) naming swapped and its column 2", err)
	}
	if st, err := e.cfg.Store.CopyState(ctx, e.cfg.ID); err != nil || len(st) != 0 {
		t.Errorf("copy state after the failed plan: %+v (%v), want none", st, err)
	}
	if err := Plan(ctx, e.cfg, []string{"later"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.dst.ExecContext(ctx, "ALTER TABLE later CHANGE a renamed int"); err != nil {
		t.Fatal(err)
	}
	err = New(e.cfg).Run(ctx, func(context.Context, binlog.Position) error { return nil })
	if !errors.Is(err, ErrColumns) || !strings.Contains(err.Error(), e.db+".later: column 2 is a on the source but renamed on the target") {
		t.Fatalf("Run: %v, want an ErrColumns naming later and its column 2", err)
	}
}
