package compare_test

import (
	"database/sql"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/vplayer/vplayer/internal/compare"
	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
)

func TestMain(m *testing.M) { mysqltest.Main(m) }

// pair returns the test's database on the shared source and on the shared target.
func pair(t *testing.T) (src, dst *sql.DB, db string) {
	t.Helper()
	source, target := mysqltest.Pair(t)
	db = mysqltest.DBName(t)
	return mysqltest.DB(t, source, db), mysqltest.DB(t, target, db), db
}

func exec(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := db.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// f32 is a SQL literal of the FLOAT with the given bits: a DOUBLE literal of exactly its value,
// which a FLOAT column stores unrounded.
func f32(bits uint32) string {
	return strconv.FormatFloat(float64(math.Float32frombits(bits)), 'e', -1, 64)
}

// f64 is a SQL literal of the DOUBLE with the given bits.
func f64(bits uint64) string {
	return strconv.FormatFloat(math.Float64frombits(bits), 'e', -1, 64)
}

// allTypes is a column of each type compare reads, all NULL-able.
const allTypes = `id int NOT NULL PRIMARY KEY, ti tinyint, su smallint unsigned, mi mediumint, i int,
	bu bigint unsigned, de decimal(14,2), dm decimal(65,30), fl float, db double, bi bit(64), y year,
	da date, dt datetime(6), ts timestamp(6) NULL, tm time(6), c char(4), vc varchar(20), tt text,
	js json, bn binary(4), vb varbinary(8), bl blob, en enum('a','b'), st set('x','y'), g geometry,
	pt point, u uuid, i4 inet4, i6 inet6`

// allValues is a row of allTypes with a value in every column, NUL bytes in the binary ones.
const allValues = `(2, -128, 65535, -8388608, 2147483647, 18446744073709551615, 9.99,
	'-99999999999999999999999999999999999.999999999999999999999999999999', 0.1e0, 1.7976931348623157e308,
	b'1111111111111111111111111111111111111111111111111111111111111111', 2155, '2024-02-29',
	'2024-02-29 23:59:59.999999', '2038-01-19 03:14:07.999999', '-838:59:59.000000', 'ab', 'é\0z', 'text',
	'{"a": [1, 2.50]}', x'00000000', x'00ff00', x'000102', 'b', 'x,y', ST_GeomFromText('LINESTRING(0 0, 1 1)'),
	ST_GeomFromText('POINT(0.1 -2)'), '123e4567-e89b-12d3-a456-426614174000', '10.0.0.1', '::ffff:10.0.0.1')`

func TestTables(t *testing.T) {
	bigDouble := math.Float64bits(1e20) // above 2^64: HEX() of every such value is FFFFFFFFFFFFFFFF
	for _, tc := range []struct {
		name     string
		columns  string   // the table's column definitions
		src, dst []string // the rows inserted on each side, each a VALUES tuple
		opts     []compare.Option
		want     bool
	}{
		{name: "equal every type with NULLs and NUL bytes", columns: allTypes,
			src:  []string{"(1" + strings.Repeat(", NULL", 29) + ")", allValues},
			dst:  []string{allValues, "(1" + strings.Repeat(", NULL", 29) + ")"},
			want: true},
		{name: "equal rows a collation holds equal, inserted in another order", columns: "v varchar(4) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci",
			src:  []string{"('a')", "('A')", "('a ')"},
			dst:  []string{"('a ')", "('A')", "('a')"},
			want: true},
		{name: "changed cent in DECIMAL(14,2)", columns: "id int PRIMARY KEY, v decimal(14,2)",
			src: []string{"(1, 9.99)"}, dst: []string{"(1, 9.98)"}},
		{name: "cent versus zero in DECIMAL(14,2)", columns: "id int PRIMARY KEY, v decimal(14,2)",
			src: []string{"(1, 0.01)"}, dst: []string{"(1, 0.00)"}},
		{name: "DECIMAL(65,30) max versus min", columns: "id int PRIMARY KEY, v decimal(65,30)",
			src: []string{"(1, '99999999999999999999999999999999999.999999999999999999999999999999')"},
			dst: []string{"(1, '-99999999999999999999999999999999999.999999999999999999999999999999')"}},
		{name: "DECIMAL(65,30) last digit", columns: "id int PRIMARY KEY, v decimal(65,30)",
			src: []string{"(1, '0.000000000000000000000000000001')"}, dst: []string{"(1, '0.000000000000000000000000000002')"}},
		{name: "last bit of a DOUBLE", columns: "id int PRIMARY KEY, v double",
			src: []string{"(1, " + f64(math.Float64bits(2.75)) + ")"}, dst: []string{"(1, " + f64(math.Float64bits(2.75)+1) + ")"}},
		{name: "last bit of a FLOAT", columns: "id int PRIMARY KEY, v float",
			src: []string{"(1, " + f32(math.Float32bits(0.1)) + ")"}, dst: []string{"(1, " + f32(math.Float32bits(0.1)+1) + ")"}},
		{name: "last decimal of a FLOAT(7,4)", columns: "id int PRIMARY KEY, v float(7,4)",
			src: []string{"(1, 2.5001)"}, dst: []string{"(1, 2.5002)"}},
		{name: "DOUBLE above 2^64", columns: "id int PRIMARY KEY, v double",
			src: []string{"(1, " + f64(bigDouble) + ")"}, dst: []string{"(1, " + f64(bigDouble+1) + ")"}},
		{name: "equal DOUBLE and FLOAT", columns: "id int PRIMARY KEY, d double, f float",
			src:  []string{"(1, " + f64(bigDouble+1) + ", " + f32(math.Float32bits(0.1)+1) + ")"},
			dst:  []string{"(1, " + f64(bigDouble+1) + ", " + f32(math.Float32bits(0.1)+1) + ")"},
			want: true},
		{name: "fractional second in DATETIME(6)", columns: "id int PRIMARY KEY, v datetime(6)",
			src: []string{"(1, '2024-01-01 10:00:00.000001')"}, dst: []string{"(1, '2024-01-01 10:00:00.000002')"}},
		{name: "fractional second in TIME(6)", columns: "id int PRIMARY KEY, v time(6)",
			src: []string{"(1, '-12:00:00.500000')"}, dst: []string{"(1, '-12:00:00.500001')"}},
		{name: "fractional second in TIMESTAMP(6)", columns: "id int PRIMARY KEY, v timestamp(6) NULL",
			src: []string{"(1, '2024-01-01 10:00:00.123456')"}, dst: []string{"(1, '2024-01-01 10:00:00.123457')"}},
		{name: "NUL byte versus 0x01 in a BLOB", columns: "id int PRIMARY KEY, v blob",
			src: []string{"(1, x'610062')"}, dst: []string{"(1, x'610162')"}},
		{name: "NULL versus empty string", columns: "id int PRIMARY KEY, v varchar(4)",
			src: []string{"(1, NULL)"}, dst: []string{"(1, '')"}},
		{name: "NULL versus zero", columns: "id int PRIMARY KEY, v int",
			src: []string{"(1, NULL)"}, dst: []string{"(1, 0)"}},
		{name: "case of a string in a case-insensitive collation", columns: "id int PRIMARY KEY, v varchar(4) COLLATE utf8mb4_general_ci",
			src: []string{"(1, 'a')"}, dst: []string{"(1, 'A')"}},
		{name: "ENUM member", columns: "id int PRIMARY KEY, v enum('a','b')",
			src: []string{"(1, 'a')"}, dst: []string{"(1, 'b')"}},
		{name: "BIT(64) top bit", columns: "id int PRIMARY KEY, v bit(64)",
			src: []string{"(1, b'1000000000000000000000000000000000000000000000000000000000000000')"}, dst: []string{"(1, 0)"}},
		{name: "target has one more row", columns: "id int PRIMARY KEY",
			src: []string{"(1)"}, dst: []string{"(1)", "(2)"}},
		{name: "empty source table", columns: "id int PRIMARY KEY"},
		{name: "empty source table, rows on the target", columns: "id int PRIMARY KEY",
			dst: []string{"(1)"}, opts: []compare.Option{compare.ExpectEmpty("t")}},
		{name: "empty tables expected", columns: "id int PRIMARY KEY",
			opts: []compare.Option{compare.ExpectEmpty("t")}, want: true},
		{name: "equal rows in a table expected empty", columns: "id int PRIMARY KEY",
			src: []string{"(1)"}, dst: []string{"(1)"}, opts: []compare.Option{compare.ExpectEmpty("t")}},
		{name: "another table expected empty", columns: "id int PRIMARY KEY",
			opts: []compare.Option{compare.ExpectEmpty("other")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst, db := pair(t)
			exec(t, src, "CREATE TABLE t ("+tc.columns+")")
			exec(t, dst, "CREATE TABLE t ("+tc.columns+")")
			for _, r := range tc.src {
				exec(t, src, "INSERT INTO t VALUES "+r)
			}
			for _, r := range tc.dst {
				exec(t, dst, "INSERT INTO t VALUES "+r)
			}
			rs, err := compare.Tables(t.Context(), src, dst, db, db, []string{"t"}, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := len(rs), 1; got != want {
				t.Fatalf("got %d results, want %d", got, want)
			}
			if got, want := rs[0].Equal(), tc.want; got != want {
				t.Errorf("Equal()=%v, want %v: %s", got, want, rs[0])
			}
			if got, want := compare.AllEqual(rs), tc.want; got != want {
				t.Errorf("AllEqual()=%v, want %v", got, want)
			}
			t.Logf("%s", rs[0])
		})
	}
}

// TestTables_callerSession compares through pools whose sessions are not vplayer's: a local time
// zone, parameters interpolated into text queries, temporal values parsed into time.Time. The
// forms stay exact, TIMESTAMP values are compared as instants, and the session keeps its zone.
func TestTables_callerSession(t *testing.T) {
	source, target := mysqltest.Pair(t)
	db := mysqltest.DBName(t)
	mysqltest.DB(t, source, db)
	mysqltest.DB(t, target, db)
	open := func(dsn, zone string) *sql.DB {
		p, err := sql.Open("mysql", dsn+"&interpolateParams=true&parseTime=true")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		p.SetMaxOpenConns(1) // one session, whose time_zone the test sets and reads back
		exec(t, p, "SET time_zone = '"+zone+"'")
		return p
	}
	src, dst := open(source.DSN(db), "+05:00"), open(target.DSN(db), "+00:00")
	def := "CREATE TABLE t (id int PRIMARY KEY, ts timestamp(6) NULL, f float, d double, dt datetime(6))"
	exec(t, src, def, "INSERT INTO t VALUES (1, '2024-01-01 15:00:00.000001', "+f32(math.Float32bits(0.1))+", "+f64(math.Float64bits(0.1))+", '2024-01-01 10:00:00.5')")
	exec(t, dst, def, "INSERT INTO t VALUES (1, '2024-01-01 10:00:00.000001', "+f32(math.Float32bits(0.1))+", "+f64(math.Float64bits(0.1))+", '2024-01-01 10:00:00.5')")
	for _, tc := range []struct {
		name   string
		change string // run on the target before comparing
		want   bool
	}{
		{name: "the same instant in two time zones", want: true},
		{name: "another microsecond", change: "UPDATE t SET ts = '2024-01-01 10:00:00.000002'"},
		{name: "last bit of the FLOAT", change: "UPDATE t SET ts = '2024-01-01 10:00:00.000001', f = " + f32(math.Float32bits(0.1)+1)},
		{name: "last bit of the DOUBLE", change: "UPDATE t SET f = " + f32(math.Float32bits(0.1)) + ", d = " + f64(math.Float64bits(0.1)+1)},
		{name: "half a second in a DATETIME", change: "UPDATE t SET d = " + f64(math.Float64bits(0.1)) + ", dt = '2024-01-01 10:00:00'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.change != "" {
				exec(t, dst, tc.change)
			}
			rs, err := compare.Tables(t.Context(), src, dst, db, db, []string{"t"})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := rs[0].Equal(), tc.want; got != want {
				t.Errorf("Equal()=%v, want %v: %s", got, want, rs[0])
			}
			t.Logf("%s", rs[0])
			for _, s := range []struct {
				db   *sql.DB
				want string
			}{{src, "+05:00"}, {dst, "+00:00"}} {
				var zone string
				if err := s.db.QueryRowContext(t.Context(), "SELECT @@session.time_zone").Scan(&zone); err != nil {
					t.Fatal(err)
				}
				if zone != s.want {
					t.Errorf("session time_zone after Tables = %q, want %q", zone, s.want)
				}
			}
		})
	}
}

// TestTables_columnTypes checks that a column of another type on the target is an error: the
// forms of one type do not prove equality with another's.
func TestTables_columnTypes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		src, dst string
		wantErr  string
	}{
		{name: "scale", src: "v decimal(14,2)", dst: "v decimal(14,3)", wantErr: "column v is decimal(14,2) on the source, decimal(14,3) on the target"},
		{name: "float and double", src: "v float", dst: "v double", wantErr: "column v is float on the source, double on the target"},
		{name: "missing", src: "v int", dst: "w int", wantErr: "column v is missing on the target"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst, db := pair(t)
			exec(t, src, "CREATE TABLE t ("+tc.src+")", "INSERT INTO t VALUES (1)")
			exec(t, dst, "CREATE TABLE t ("+tc.dst+")", "INSERT INTO t VALUES (1)")
			_, err := compare.Tables(t.Context(), src, dst, db, db, []string{"t"})
			if got, want := fmt.Sprint(err), "compare t: "+tc.wantErr; got != want {
				t.Errorf("Tables: error %q, want %q", got, want)
			}
		})
	}
}
