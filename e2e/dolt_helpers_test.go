package e2e

import (
	"database/sql"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
	"github.com/vplayer/vplayer/sqlq"
)

// newDoltEnv is newEnv with the shared Dolt sql-server as the source (a MySQL-flavour binlog
// primary) and the shared MariaDB target. Tests on it run one at a time, as one restarts Dolt;
// only TestDolt_HeartbeatPeriod runs in parallel, after every serial test has ended.
func newDoltEnv(t *testing.T) *env {
	t.Helper()
	source := mysqltest.Dolt(t)
	_, target := mysqltest.Pair(t)
	return newEnvOn(t, source, target)
}

// execSource runs statements on the source database, each in its own transaction.
func (e *env) execSource(stmts ...string) {
	e.t.Helper()
	for _, q := range stmts {
		if _, err := e.src.ExecContext(e.ctx(), q); err != nil {
			e.t.Fatalf("source: %s: %v", q, err)
		}
	}
}

// assertJSONEqual compares table's JSON column col, row by row under key, by value: Dolt writes
// every JSON number as a double, so the text differs. It fails on an empty source table.
func (e *env) assertJSONEqual(table, key, col string) {
	e.t.Helper()
	read := func(db *sql.DB) map[string]any {
		q := "SELECT CAST(" + sqlq.Ident(key) + " AS CHAR), " + sqlq.Ident(col) + " FROM " + sqlq.Ident(table)
		rows, err := db.QueryContext(e.ctx(), q)
		if err != nil {
			e.t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		out := map[string]any{}
		for rows.Next() {
			var k string
			var doc sql.NullString
			if err := rows.Scan(&k, &doc); err != nil {
				e.t.Fatal(err)
			}
			var v any
			if doc.Valid {
				if err := json.Unmarshal([]byte(doc.String), &v); err != nil {
					e.t.Fatalf("%s row %s: %q is not JSON: %v", table, k, doc.String, err)
				}
			} else {
				v = "<NULL>"
			}
			out[k] = v
		}
		if err := rows.Err(); err != nil {
			e.t.Fatal(err)
		}
		return out
	}
	src, dst := read(e.src), read(e.dst)
	if len(src) == 0 {
		e.t.Fatalf("%s is empty on the source: nothing compared", table)
	}
	if !reflect.DeepEqual(src, dst) {
		e.t.Errorf("%s.%s differs by value:\nsource %v\ntarget %v", table, col, src, dst)
	}
}

// assertTablesEqual compares tables row by row in key order, every column as the server returns
// it over the text protocol, floats by value (float32 for FLOAT): Dolt refuses HEX() of temporal
// values, which compare.Tables uses. It fails on any difference and on an empty source table.
func (e *env) assertTablesEqual(key string, tables ...string) {
	e.t.Helper()
	e.assertTablesEqualOrdered(sqlq.Ident(key), tables...)
}

// assertTablesEqualOrdered is assertTablesEqual with the ORDER BY list given as SQL.
func (e *env) assertTablesEqualOrdered(order string, tables ...string) {
	e.t.Helper()
	for _, table := range tables {
		names, types := e.columnTypes(table)
		exprs := make([]string, len(names))
		for i, n := range names {
			exprs[i] = sqlq.Ident(n)
			if types[i] == "float" {
				// MariaDB prints a FLOAT with 6 digits; as a DOUBLE it is exact on both servers.
				exprs[i] = "(" + exprs[i] + " + 0e0)"
			}
		}
		read := func(db *sql.DB) [][]sql.NullString {
			q := "SELECT " + strings.Join(exprs, ", ") + " FROM " + sqlq.Ident(table) + " ORDER BY " + order
			rows, err := db.QueryContext(e.ctx(), q)
			if err != nil {
				e.t.Fatalf("%s: %v", q, err)
			}
			defer rows.Close()
			var out [][]sql.NullString
			for rows.Next() {
				row := make([]sql.NullString, len(types))
				ptrs := make([]any, len(row))
				for i := range row {
					ptrs[i] = &row[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					e.t.Fatalf("%s: %v", q, err)
				}
				out = append(out, row)
			}
			if err := rows.Err(); err != nil {
				e.t.Fatal(err)
			}
			return out
		}
		src, dst := read(e.src), read(e.dst)
		if len(src) == 0 {
			e.t.Fatalf("%s is empty on the source: nothing compared", table)
		}
		if len(src) != len(dst) {
			e.t.Errorf("%s: %d rows on the source, %d on the target", table, len(src), len(dst))
			continue
		}
		bad := 0
		for r := range src {
			for c, typ := range types {
				if !doltSameValue(typ, src[r][c], dst[r][c]) {
					bad++
					e.t.Errorf("%s row %s column %s (%s): source %q, target %q", table, src[r][0].String, names[c], typ, src[r][c].String, dst[r][c].String)
				}
			}
		}
		e.t.Logf("%s: %d rows compared, %d values differ", table, len(src), bad)
	}
}

// columnTypes returns the names and DATA_TYPEs of table's columns on the source, in order.
func (e *env) columnTypes(table string) (names, types []string) {
	e.t.Helper()
	rows, err := e.src.QueryContext(e.ctx(), "SELECT COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", e.db, table)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			e.t.Fatal(err)
		}
		names, types = append(names, name), append(types, strings.ToLower(typ))
	}
	if len(names) == 0 {
		e.t.Fatalf("table %s.%s has no columns on the source", e.db, table)
	}
	return names, types
}

// doltSameValue compares one value of a column of type typ: floats by value, everything else as text.
func doltSameValue(typ string, a, b sql.NullString) bool {
	if a.Valid != b.Valid {
		return false
	}
	if !a.Valid {
		return true
	}
	switch typ {
	case "float", "double":
		x, err1 := strconv.ParseFloat(a.String, 64)
		y, err2 := strconv.ParseFloat(b.String, 64)
		return err1 == nil && err2 == nil && x == y
	}
	return a.String == b.String
}

// gtidCount returns the number of transactions in a MySQL GTID set text ("uuid:1-5:7,uuid2:3").
func gtidCount(t *testing.T, set string) int64 {
	t.Helper()
	var n int64
	for _, part := range strings.Split(strings.ReplaceAll(set, "\n", ""), ",") {
		fields := strings.Split(strings.TrimSpace(part), ":")
		for _, iv := range fields[1:] {
			lo, hi, ok := strings.Cut(iv, "-")
			if !ok {
				hi = lo
			}
			a, err1 := strconv.ParseInt(lo, 10, 64)
			b, err2 := strconv.ParseInt(hi, 10, 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("gtid set %q: bad interval %q", set, iv)
			}
			n += b - a + 1
		}
	}
	return n
}
