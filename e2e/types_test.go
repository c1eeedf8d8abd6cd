package e2e

import (
	"bytes"
	"database/sql"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vplayer/vplayer/sqlq"
)

// zooTable is one table of the type zoo: its columns after the id, and the statements that
// fill, change and empty it on the source ({t} stands for the table's name).
type zooTable struct {
	name string
	cols string
	dml  []zooStep
}

// zooStep is statements run in order on one source connection with the session settings given,
// in one transaction when tx is set.
type zooStep struct {
	sqlMode  string // "" for the zoo's default, strict with invalid dates allowed
	timeZone string // "" for +00:00
	tx       bool
	stmts    []string
}

const zooSQLMode = "STRICT_ALL_TABLES,ALLOW_INVALID_DATES"

// frac cuts the fractional seconds of a temporal literal to n digits (to none when n is 0), so
// that the server neither rounds nor carries: '23:59:59.999999' rounded to 0 digits would be the
// next day.
func frac(s string, n int) string {
	dot := strings.LastIndexByte(s, '.')
	if dot < 0 {
		return s
	}
	if n == 0 {
		return s[:dot]
	}
	return s[:min(len(s), dot+1+n)]
}

// temporalRow is a row of the temporal table: one value per kind, cut per column to its digits.
func temporalRow(id int, date, datetime, timestamp, tm string) string {
	q := func(s string) string {
		if s == "NULL" {
			return s
		}
		return "'" + s + "'"
	}
	vals := []string{fmt.Sprint(id), q(date)}
	for n := 0; n <= 6; n++ {
		vals = append(vals, q(frac(datetime, n)))
	}
	for n := 0; n <= 6; n++ {
		vals = append(vals, q(frac(timestamp, n)))
	}
	for n := 0; n <= 6; n++ {
		vals = append(vals, q(frac(tm, n)))
	}
	return "(" + strings.Join(vals, ", ") + ")"
}

func temporalCols() string {
	cols := []string{"d DATE NULL"}
	for n := 0; n <= 6; n++ {
		cols = append(cols, fmt.Sprintf("dt%d DATETIME(%d) NULL", n, n))
	}
	for n := 0; n <= 6; n++ {
		cols = append(cols, fmt.Sprintf("ts%d TIMESTAMP(%d) NULL DEFAULT NULL", n, n))
	}
	for n := 0; n <= 6; n++ {
		cols = append(cols, fmt.Sprintf("t%d TIME(%d) NULL", n, n))
	}
	return strings.Join(cols, ", ")
}

// setTemporal is "dt0 = '...', dt1 = '...', ..." for a datetime (or timestamp or time) value.
func setTemporal(prefix, v string) string {
	var parts []string
	for n := 0; n <= 6; n++ {
		if v == "NULL" {
			parts = append(parts, fmt.Sprintf("%s%d = NULL", prefix, n))
		} else {
			parts = append(parts, fmt.Sprintf("%s%d = '%s'", prefix, n, frac(v, n)))
		}
	}
	return strings.Join(parts, ", ")
}

// set64 is a SET of 64 members, m0 to m63: the full set is all 64 bits.
func set64() string {
	var m []string
	for i := range 64 {
		m = append(m, fmt.Sprintf("'m%d'", i))
	}
	return "SET(" + strings.Join(m, ",") + ")"
}

func set64Full() string {
	var m []string
	for i := range 64 {
		m = append(m, fmt.Sprintf("m%d", i))
	}
	return strings.Join(m, ",")
}

// zooJSON is a nested JSON document with unicode, escapes, the integer limits and extreme doubles.
const zooJSON = `{"a": [1, 2, {"b": "\u00fc\ud83d\ude00 é 😀"}], "big": 18446744073709551615, "neg": -9223372036854775808, "dbl": 1.5e300, "tiny": -2.5e-300, "pi": 3.141592653589793, "one": 1.0, "t": true, "f": false, "n": null, "esc": "q\"b\\s\n", "deep": {"x": {"y": {"z": [[], {}, ""]}}}}`

// typeZoo is every column type of SPEC section 7 with its edge values, inserted, updated and
// deleted. Each table also exists without any key (name_nokey), where the same changes are
// applied by matching every column.
var typeZoo = []zooTable{
	{
		name: "nums",
		cols: "ti TINYINT NULL, tu TINYINT UNSIGNED NULL, si SMALLINT NULL, su SMALLINT UNSIGNED NULL, " +
			"mi MEDIUMINT NULL, mu MEDIUMINT UNSIGNED NULL, i INT NULL, iu INT UNSIGNED NULL, " +
			"bi BIGINT NULL, bu BIGINT UNSIGNED NULL, dc DECIMAL(65,30) NULL, d0 DECIMAL(10,0) NULL, " +
			"f FLOAT NULL, d DOUBLE NULL, b1 BIT(1) NULL, b7 BIT(7) NULL, b64 BIT(64) NULL, y YEAR NULL",
		dml: []zooStep{
			{tx: true, stmts: []string{
				// Minimums.
				"INSERT INTO {t} VALUES (1, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0, " +
					"'-99999999999999999999999999999999999.999999999999999999999999999999', -9999999999, " +
					"-3.4028234663852886e38, -1.7976931348623157e308, b'0', b'0000000', 0, 1901)",
				// Maximums; BIT(64) all ones.
				"INSERT INTO {t} VALUES (2, 127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295, 9223372036854775807, 18446744073709551615, " +
					"'99999999999999999999999999999999999.999999999999999999999999999999', 9999999999, " +
					"3.4028234663852886e38, 1.7976931348623157e308, b'1', b'1111111', 0xFFFFFFFFFFFFFFFF, 2155)",
				// The smallest magnitudes: subnormals, one unit in the last decimal place, YEAR 0000.
				"INSERT INTO {t} VALUES (3, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, " +
					"'0.000000000000000000000000000001', 0, 1.401298464324817e-45, 4.9406564584124654e-324, b'1', b'0000001', 1, 0)",
			}},
			{stmts: []string{
				// Decimal fractions that binary floats cannot hold, -0, the normal minimums, the
				// largest subnormal, the top bit of BIT(64).
				"INSERT INTO {t} VALUES (4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9223372036854775808, " +
					"'-0.000000000000000000000000000001', -1, 0.1, -0.0, NULL, NULL, 0x8000000000000000, 2000)",
				"INSERT INTO {t} VALUES (5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, '12345678901234567890123456789012345.123456789012345678901234567890', 42, " +
					"1.17549435e-38, 2.2250738585072014e-308, b'0', b'1010101', 0x0123456789ABCDEF, 1999)",
				"INSERT INTO {t} VALUES (6, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
				"INSERT INTO {t} (id, f, d) VALUES (7, 16777217, 9007199254740993), (8, 3.14159274, 2.225073858507201e-308), (9, 0.1, 0.1), (10, 1e-40, 1e-310)",
			}},
			{tx: true, stmts: []string{
				// Every column from its minimum to its maximum and back.
				"UPDATE {t} SET ti = 127, tu = 255, si = 32767, su = 65535, mi = 8388607, mu = 16777215, i = 2147483647, iu = 4294967295, " +
					"bi = 9223372036854775807, bu = 18446744073709551615, dc = -dc, f = -f, d = -d, b1 = b'1', b7 = b'1111111', b64 = 0xFFFFFFFFFFFFFFFF, y = 0 WHERE id = 1",
				"UPDATE {t} SET ti = -128, tu = 0, bu = 0, f = 1.401298464324817e-45, d = -4.9406564584124654e-324, b64 = 0, y = 1901 WHERE id = 2",
				"UPDATE {t} SET id = 103 WHERE id = 3",
				"UPDATE {t} SET ti = 1, f = NULL, d = NULL, b64 = NULL, dc = NULL WHERE id = 5",
				"UPDATE {t} SET ti = -1, tu = 255, bu = 18446744073709551615, f = -0.0, d = 1e308, b1 = 0, b64 = 0xFFFFFFFFFFFFFFFE, y = 2155 WHERE id = 6",
				"UPDATE {t} SET f = f * 3, d = d / 3 WHERE id IN (7, 8, 9)",
			}},
			{stmts: []string{
				"DELETE FROM {t} WHERE id = 4",
				"DELETE FROM {t} WHERE id IN (9, 10)",
			}},
			{tx: true, stmts: []string{
				"INSERT INTO {t} (id, bu, f, d, b64) VALUES (11, 18446744073709551615, 0.3, 0.3, 0xFFFFFFFFFFFFFFFF)",
				"UPDATE {t} SET f = 0.7 WHERE id = 11",
				"DELETE FROM {t} WHERE id = 11",
			}},
		},
	},
	{
		name: "temporal",
		cols: temporalCols(),
		dml: []zooStep{
			{timeZone: "+09:00", tx: true, stmts: []string{
				"INSERT INTO {t} VALUES " + strings.Join([]string{
					temporalRow(1, "0000-00-00", "0000-00-00 00:00:00.000000", "0000-00-00 00:00:00.000000", "00:00:00.000000"),
					temporalRow(2, "2020-00-00", "2020-01-00 10:11:12.123456", "NULL", "-838:59:59.000000"),
					// TIMESTAMP's maximum, 2038-01-19 03:14:07.999999 UTC, written at +09:00.
					temporalRow(3, "9999-12-31", "9999-12-31 23:59:59.999999", "2038-01-19 12:14:07.999999", "838:59:59.000000"),
					temporalRow(4, "2021-06-15", "2021-06-15 12:34:56.123456", "2021-06-15 12:34:56.123456", "-00:00:00.123456"),
					// TIMESTAMP's minimum, 1970-01-01 00:00:01 UTC.
					temporalRow(5, "1000-01-01", "1000-01-01 00:00:00.000001", "1970-01-01 09:00:01.000001", "-00:00:01.000001"),
					temporalRow(6, "2021-02-31", "2021-02-29 23:59:59.500000", "NULL", "-12:34:56.789012"),
					temporalRow(7, "NULL", "NULL", "NULL", "NULL"),
					temporalRow(8, "2000-00-15", "0000-01-01 00:00:00.100000", "2000-02-29 23:59:59.999999", "00:00:00.000001"),
				}, ", "),
			}},
			{timeZone: "-07:00", stmts: []string{
				"UPDATE {t} SET d = '9999-12-31', " + setTemporal("dt", "0000-00-00 00:00:00.000000") + ", " + setTemporal("t", "838:59:59.000000") + " WHERE id = 1",
				"UPDATE {t} SET d = '0000-00-00', " + setTemporal("ts", "2000-01-01 00:00:00.000001") + ", " + setTemporal("t", "-00:00:00.000001") + " WHERE id = 3",
				"UPDATE {t} SET id = 104, " + setTemporal("ts", "1999-12-31 23:59:59.999999") + " WHERE id = 4",
				"UPDATE {t} SET d = '2024-02-30', " + setTemporal("dt", "NULL") + ", " + setTemporal("ts", "0000-00-00 00:00:00.000000") + " WHERE id = 7",
				"DELETE FROM {t} WHERE id IN (2, 8)",
			}},
		},
	},
	{
		name: "strs",
		cols: "cu CHAR(10) CHARACTER SET utf8mb4 NULL, vu VARCHAR(200) CHARACTER SET utf8mb4 NULL, tu TEXT CHARACTER SET utf8mb4 NULL, " +
			"cl CHAR(10) CHARACTER SET latin1 NULL, vl VARCHAR(200) CHARACTER SET latin1 NULL, tl TEXT CHARACTER SET latin1 NULL, " +
			"vb VARCHAR(50) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL, bn BINARY(8) NULL, vbin VARBINARY(64) NULL, " +
			"bl BLOB NULL, lb LONGBLOB NULL, e ENUM('a','b','c') NULL, s SET('x','y','z') NULL, s64 " + set64() + " NULL, j JSON NULL",
		dml: []zooStep{
			{tx: true, stmts: []string{
				// Empty strings and sets.
				"INSERT INTO {t} VALUES (1, '', '', '', '', '', '', '', '', '', '', '', NULL, '', '', '[]')",
				// 4-byte UTF-8, latin1 bytes above 0x7f, NUL bytes, BINARY padding, full SETs.
				"INSERT INTO {t} VALUES (2, '😀🎉', 'ñandú — 漢字 𝄞 😀', '🎉 x', X'E9FFA0', X'C0FFEE80', X'FF00E9', 'Ünïcødé', X'41', X'00FF0000', X'0001020300', X'00', 'c', 'x,y,z', '" + set64Full() + "', ?)",
				// Quotes, backslashes, control bytes, a NUL character in utf8mb4 text, trailing spaces.
				"INSERT INTO {t} VALUES (3, 'a''b\\\\c', 'it''s \\\\ \"q\" \\n\\r\\t\\Z end  ', CONCAT('a', CHAR(0), 'b'), 'x  ', 'y \\\\', CHAR(0, 10, 13, 26 USING latin1), 'trail ', X'0000000000000000', X'', X'', X'5C27', 'a', 'z', 'm0,m63', '\"\"')",
				// Case and trailing spaces that collations ignore.
				"INSERT INTO {t} VALUES (4, 'ABC', 'abc  ', 'ABC', 'É', 'é', 'abc', 'ABC', X'4100000000000042', X'41', X'41', X'41', 'b', 'y', 'm1', '{\"k\": \"ABC\"}')",
				"INSERT INTO {t} VALUES (5, NULL, REPEAT('é', 200), REPEAT('😀', 5000), NULL, REPEAT(X'FE', 200), REPEAT(X'E9', 20000), NULL, X'FFFFFFFFFFFFFFFF', REPEAT(X'00', 64), REPEAT(X'00FF', 30000), REPEAT(X'00FFEE', 70000), NULL, NULL, NULL, NULL)",
				"INSERT INTO {t} VALUES (6, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
			}},
			// A non-strict source stores ENUM's error value (index 0, shown as '') for a value
			// outside the list.
			{sqlMode: "ALLOW_INVALID_DATES", stmts: []string{
				"INSERT INTO {t} (id, e, s) VALUES (7, 'bogus', 'x')",
				"UPDATE {t} SET e = 'nope' WHERE id = 4",
			}},
			{tx: true, stmts: []string{
				"UPDATE {t} SET cu = 'abc', vu = 'ABC  ', tu = 'abc', vb = 'abc', bn = X'42', vbin = X'4100', e = 'c', s = '', s64 = '" + set64Full() + "', j = '{\"k\": \"abc\"}' WHERE id = 4",
				"UPDATE {t} SET id = 102, bn = X'00', j = JSON_SET(j, '$.n', 'x') WHERE id = 2",
				"UPDATE {t} SET e = 'a', lb = CONCAT(lb, X'00') WHERE id = 5",
				"UPDATE {t} SET cu = '😀', s64 = 'm62,m63' WHERE id = 7",
				"DELETE FROM {t} WHERE id = 1",
			}},
			{stmts: []string{
				"DELETE FROM {t} WHERE id = 3",
				"UPDATE {t} SET cu = 'x', vu = 'y', tu = 'z', cl = X'FF', vl = X'FF', tl = X'FF', vb = 'b', bn = X'FF', vbin = X'FF', bl = X'FF', lb = X'FF', e = 'b', s = 'y', s64 = 'm5', j = 'null' WHERE id = 6",
			}},
		},
	},
	{
		// Values whose binlog length takes two bytes, BINARY padding over 255 bytes, and
		// DECIMALs without an integer part or unsigned.
		name: "wide",
		cols: "cw CHAR(255) CHARACTER SET utf8mb4 NULL, bw BINARY(255) NULL, vw VARCHAR(1000) CHARACTER SET latin1 NULL, " +
			"dz DECIMAL(5,5) NULL, du DECIMAL(30,10) UNSIGNED NULL, d1 DECIMAL(1,0) NULL",
		dml: []zooStep{
			{stmts: []string{
				"INSERT INTO {t} VALUES (1, REPEAT('😀', 255), X'41', REPEAT(X'FF', 1000), -0.99999, 99999999999999999999.9999999999, -9)",
				"INSERT INTO {t} VALUES (2, CONCAT(REPEAT('é', 254), ' '), REPEAT(X'00', 254), REPEAT('a', 256), 0.00001, 0, 9)",
				"INSERT INTO {t} VALUES (3, 'x', REPEAT(X'7F', 255), '', 0, 0.0000000001, 0)",
				"UPDATE {t} SET cw = REPEAT('ß', 200), bw = X'FFFF', dz = 0.5 WHERE id = 1",
				"UPDATE {t} SET id = 20, vw = REPEAT(X'E9', 999) WHERE id = 2",
				"DELETE FROM {t} WHERE id = 3",
			}},
		},
	},
	{
		// Generated columns are not written: the target computes them.
		name: "gen",
		cols: "a INT NULL, v INT AS (a * 2) VIRTUAL, p INT AS (a + 1) PERSISTENT, s VARCHAR(20) AS (CONCAT('x', a)) STORED, z VARCHAR(10) NULL",
		dml: []zooStep{
			{stmts: []string{
				"INSERT INTO {t} (id, a, z) VALUES (1, 1, 'one'), (2, 2, 'two'), (3, NULL, NULL)",
				"UPDATE {t} SET a = 10 WHERE id = 1",
				"UPDATE {t} SET id = 20, z = 'moved' WHERE id = 2",
				"DELETE FROM {t} WHERE id = 3",
			}},
		},
	},
}

// keyZoo are tables whose key columns are the hard cases: a primary key over BINARY (whose
// padding the binlog drops) and DOUBLE, a unique key over FLOAT and a case-insensitive string.
var keyZoo = []zooTable{
	{
		name: "bkey",
		cols: "k BINARY(4) NOT NULL, d DOUBLE NOT NULL, v INT NULL, PRIMARY KEY (k, d)",
		dml: []zooStep{
			{stmts: []string{
				"INSERT INTO {t} (k, d, v) VALUES (X'41', 0.1, 1), (X'41000042', 1e-300, 2), (X'00', -1.5, 3), (X'FFFFFFFF', 4.9406564584124654e-324, 4), ('', 0, 5)",
				"UPDATE {t} SET v = 10 WHERE v = 1",
				"UPDATE {t} SET k = X'42', d = 0.2 WHERE v = 2",
				"DELETE FROM {t} WHERE v IN (3, 4)",
				"UPDATE {t} SET v = 50 WHERE v = 5",
			}},
		},
	},
	{
		name: "ukey",
		cols: "f FLOAT NOT NULL, u VARCHAR(10) NOT NULL, v INT NULL, UNIQUE KEY fu (f, u)",
		dml: []zooStep{
			{stmts: []string{
				"INSERT INTO {t} (f, u, v) VALUES (0.1, 'a', 1), (3.4028234663852886e38, 'B', 2), (1.401298464324817e-45, 'c ', 3), (0.1, 'b', 4)",
				"UPDATE {t} SET v = 10 WHERE v = 1",
				"UPDATE {t} SET f = 0.3, u = 'b' WHERE v = 2",
				"UPDATE {t} SET u = 'C' WHERE v = 3",
				"DELETE FROM {t} WHERE v IN (4, 10)",
			}},
		},
	},
}

// nokeyExtra are changes only a table without a key can take: rows that are exact duplicates,
// and rows that differ only where a collation or a float rounding would not see it.
var nokeyExtra = map[string][]string{
	"nums": {
		"INSERT INTO {t} SELECT * FROM {t} WHERE id = 5",
		"INSERT INTO {t} (id, f, d) VALUES (50, 0.1, 0.1), (50, 0.10000001, 0.1), (50, 0.1, 0.10000000000000002)",
		"UPDATE {t} SET ti = 99 WHERE id = 50 AND f > 0.1 LIMIT 1",
		"UPDATE {t} SET ti = 98 WHERE id = 50 AND d > 0.1 LIMIT 1",
		"DELETE FROM {t} WHERE id = 5 LIMIT 1",
	},
	"strs": {
		"INSERT INTO {t} (id, vu, tu, vb) VALUES (50, 'abc', 'abc', 'abc'), (50, 'ABC', 'abc', 'abc'), (50, 'abc ', 'abc', 'abc'), (50, 'abc', 'abc ', 'abc')",
		"UPDATE {t} SET cu = 'upper' WHERE id = 50 AND vu = 'ABC' COLLATE utf8mb4_bin",
		"UPDATE {t} SET cu = 'space' WHERE id = 50 AND vu = 'abc ' COLLATE utf8mb4_bin AND LENGTH(vu) = 4",
		"DELETE FROM {t} WHERE id = 50 AND tu = 'abc ' AND LENGTH(tu) = 4",
		"INSERT INTO {t} SELECT * FROM {t} WHERE id = 102",
		"UPDATE {t} SET vu = 'one of two' WHERE id = 102 LIMIT 1",
	},
	"temporal": {
		"INSERT INTO {t} SELECT * FROM {t} WHERE id = 1",
		"DELETE FROM {t} WHERE id = 1 LIMIT 1",
		"INSERT INTO {t} SELECT * FROM {t} WHERE id = 6",
		"UPDATE {t} SET t0 = '00:00:01' WHERE id = 6 LIMIT 1",
	},
}

// createZoo creates each table on both sides, with its key (id INT NOT NULL PRIMARY KEY) and,
// when nokey is set, a copy without any key named <name>_nokey.
func (e *env) createZoo(tables []zooTable, nokey bool) []string {
	e.t.Helper()
	var names []string
	for _, z := range tables {
		defs := map[string]string{}
		if strings.Contains(z.cols, "KEY") {
			defs[z.name] = z.cols
		} else {
			defs[z.name] = "id INT NOT NULL PRIMARY KEY, " + z.cols
			if nokey {
				defs[z.name+"_nokey"] = "id INT NULL, " + z.cols
			}
		}
		for _, name := range []string{z.name, z.name + "_nokey"} {
			def, ok := defs[name]
			if !ok {
				continue
			}
			names = append(names, name)
			for _, db := range []*sql.DB{e.src, e.dst} {
				if _, err := db.ExecContext(e.ctx(), "CREATE TABLE "+sqlq.Ident(name)+" ("+def+") DEFAULT CHARSET=utf8mb4"); err != nil {
					e.t.Fatalf("create %s: %v", name, err)
				}
			}
		}
	}
	return names
}

// runZoo runs the zoo's changes on the source, for every table created by createZoo.
func (e *env) runZoo(tables []zooTable, nokey bool) {
	e.t.Helper()
	ctx := e.ctx()
	conn, err := e.src.Conn(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close()
	exec := func(q string) {
		var args []any
		if strings.Contains(q, "?") {
			args = append(args, zooJSON)
		}
		if _, err := conn.ExecContext(ctx, q, args...); err != nil {
			e.t.Fatalf("source: %.200s: %v", q, err)
		}
	}
	for _, z := range tables {
		names := []string{z.name}
		if nokey && !strings.Contains(z.cols, "KEY") {
			names = append(names, z.name+"_nokey")
		}
		for _, name := range names {
			sub := func(q string) string { return strings.ReplaceAll(q, "{t}", sqlq.Ident(name)) }
			for _, st := range z.dml {
				mode, tz := st.sqlMode, st.timeZone
				if mode == "" {
					mode = zooSQLMode
				}
				if tz == "" {
					tz = "+00:00"
				}
				exec("SET SESSION sql_mode = '" + mode + "', time_zone = '" + tz + "'")
				if st.tx {
					exec("BEGIN")
				}
				for _, q := range st.stmts {
					exec(sub(q))
				}
				if st.tx {
					exec("COMMIT")
				}
			}
			if strings.HasSuffix(name, "_nokey") {
				exec("SET SESSION sql_mode = '" + zooSQLMode + "', time_zone = '+00:00'")
				for _, q := range nokeyExtra[z.name] {
					exec(sub(q))
				}
			}
		}
	}
}

// assertIdentical compares each table on both sides column by column, in the order of all its
// columns: every column as HEX(), FLOAT and DOUBLE also by their bits (HEX() of a float is of its
// rounded integer), TIMESTAMP also as UNIX_TIMESTAMP() (independent of the session's zone). The
// query is a prepared statement, so that values come in the binary protocol, floats as floats.
// Each difference is reported with its table, row id and column.
func (e *env) assertIdentical(db string, tables []string) {
	e.t.Helper()
	for _, name := range tables {
		rows, err := e.src.QueryContext(e.ctx(), "SELECT COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", e.db, name)
		if err != nil {
			e.t.Fatal(err)
		}
		var labels, exprs, order []string
		for rows.Next() {
			var col, typ string
			if err := rows.Scan(&col, &typ); err != nil {
				e.t.Fatal(err)
			}
			q := sqlq.Ident(col)
			labels = append(labels, "HEX("+col+")")
			exprs = append(exprs, "HEX("+q+")")
			switch typ {
			case "float", "double":
				labels = append(labels, col+" bits")
				exprs = append(exprs, q)
			case "timestamp":
				labels = append(labels, "UNIX_TIMESTAMP("+col+")")
				exprs = append(exprs, "UNIX_TIMESTAMP("+q+")")
			}
			order = append(order, "HEX("+q+")")
		}
		rows.Close()
		query := "SELECT " + strings.Join(exprs, ", ") + " FROM %s." + sqlq.Ident(name) + " WHERE ? = 1 ORDER BY " + strings.Join(order, ", ")
		src := e.readAll(e.src, fmt.Sprintf(query, sqlq.Ident(e.db)), len(exprs))
		dst := e.readAll(e.dst, fmt.Sprintf(query, sqlq.Ident(db)), len(exprs))
		if len(src) != len(dst) {
			e.t.Errorf("%s: source has %d rows, target %d", name, len(src), len(dst))
		}
		if len(src) == 0 {
			e.t.Errorf("%s: source has no rows: the test changed nothing", name)
		}
		for i := range min(len(src), len(dst)) {
			for j := range exprs {
				if !sameValue(src[i][j], dst[i][j]) {
					e.t.Errorf("%s row %d (%s %s): %s: source %s, target %s", name, i+1, labels[0], show(src[i][0]), labels[j], show(src[i][j]), show(dst[i][j]))
				}
			}
		}
		e.t.Logf("%s: %d rows, %d columns compared", name, len(src), len(exprs))
	}
}

func (e *env) readAll(db *sql.DB, query string, n int) [][]any {
	e.t.Helper()
	rows, err := db.QueryContext(e.ctx(), query, 1)
	if err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		vals := make([]any, n)
		ptrs := make([]any, n)
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// sameValue compares two values of the binary protocol exactly: floats by their bits.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case float32:
		y, ok := b.(float32)
		return ok && math.Float32bits(x) == math.Float32bits(y)
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	}
	return reflect.DeepEqual(a, b)
}

func show(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		if len(x) > 80 {
			return fmt.Sprintf("%q... (%d bytes)", x[:80], len(x))
		}
		return fmt.Sprintf("%q", x)
	case float32:
		return fmt.Sprintf("%v (bits %08x)", x, math.Float32bits(x))
	case float64:
		return fmt.Sprintf("%v (bits %016x)", x, math.Float64bits(x))
	}
	return fmt.Sprintf("%v", v)
}

// expectTarget checks values on the target that the zoo means to exercise, so that a source
// that silently changed them (a subnormal flushed to zero, an ENUM error value refused) cannot
// make the comparison vacuous.
func (e *env) expectTarget(checks []struct{ query, want string }) {
	e.t.Helper()
	for _, c := range checks {
		var got sql.NullString
		if err := e.dst.QueryRowContext(e.ctx(), c.query).Scan(&got); err != nil {
			e.t.Errorf("target: %s: %v", c.query, err)
			continue
		}
		if got.String != c.want {
			e.t.Errorf("target: %s = %q, want %q", c.query, got.String, c.want)
		}
	}
}

// TestTypeZoo: every column type of SPEC section 7 with its edge values, inserted, updated and
// deleted on the source, in tables with a key and without one, ends byte for byte identical on the
// target.
func TestTypeZoo(t *testing.T) {
	e := newEnv(t)
	tables := e.createZoo(typeZoo, true)
	tables = append(tables, e.createZoo(keyZoo, false)...)
	stop := e.runStream(e.streamConfig())
	e.waitRunning(30 * time.Second)

	start := time.Now()
	e.runZoo(typeZoo, true)
	e.runZoo(keyZoo, false)
	e.waitCaughtUp(30 * time.Second)
	t.Logf("zoo replicated in %v", time.Since(start))
	if err := stop(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if r := e.record(); r.Message != "" {
		t.Errorf("record message = %q, want none", r.Message)
	}
	e.assertIdentical(e.db, tables)
	e.assertEqual(tables)
	e.expectTarget(zooChecks)
}

// zooChecks are the zoo's edge values as the target must hold them.
var zooChecks = []struct{ query, want string }{
	{"SELECT HEX(b64) FROM nums WHERE id = 1", "FFFFFFFFFFFFFFFF"},
	{"SELECT bu FROM nums WHERE id = 6", "18446744073709551615"},
	{"SELECT CAST(y AS CHAR) FROM nums WHERE id = 103", "0000"},
	{"SELECT dc FROM nums WHERE id = 103", "0.000000000000000000000000000001"},
	{"SELECT f = 1.401298464324817e-45 FROM nums WHERE id = 2", "1"},
	{"SELECT d = 4.9406564584124654e-324 FROM nums WHERE id = 103", "1"},
	{"SELECT HEX(bn) FROM strs WHERE id = 4", "4200000000000000"},
	{"SELECT HEX(vu) FROM strs WHERE id = 102", "C3B1616E64C3BA20E2809420E6BCA2E5AD9720F09D849E20F09F9880"},
	{"SELECT HEX(cl) FROM strs WHERE id = 102", "E9FFA0"},
	{"SELECT e + 0 FROM strs WHERE id = 7", "0"},
	{"SELECT BIT_COUNT(s64 + 0) FROM strs WHERE id = 4", "64"},
	{"SELECT JSON_VALUE(j, '$.big') FROM strs WHERE id = 102", "18446744073709551615"},
	{"SELECT COUNT(*) FROM strs_nokey WHERE id = 50", "3"},
	{"SELECT HEX(k) FROM bkey WHERE v = 10", "41000000"},
	{"SELECT CAST(t6 AS CHAR) FROM temporal WHERE id = 5", "-00:00:01.000001"},
	{"SELECT CAST(d AS CHAR) FROM temporal WHERE id = 6", "2021-02-31"},
	{"SELECT UNIX_TIMESTAMP(ts6) FROM temporal WHERE id = 3", "946710000.000001"}, // 2000-01-01 00:00:00.000001 at -07:00
	{"SELECT COUNT(*) FROM gen WHERE v = a * 2 AND p = a + 1", "2"},
	{"SELECT HEX(bw) FROM wide WHERE id = 1", "FFFF" + strings.Repeat("00", 253)},
	{"SELECT CHAR_LENGTH(cw) FROM wide WHERE id = 1", "200"},
}
