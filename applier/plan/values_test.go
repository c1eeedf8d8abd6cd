package plan

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/shopspring/decimal"

	"github.com/vplayer/vplayer/event"
)

func col(dataType string, opts ...func(*Column)) *Column {
	c := &Column{name: "c", dataType: dataType, quoted: "`c`"}
	for _, o := range opts {
		o(c)
	}
	return c
}

func unsigned(c *Column) { c.unsigned = true }

func length(n int) func(*Column) { return func(c *Column) { c.length = n } }

func TestAppendValue(t *testing.T) {
	tests := []struct {
		name string
		c    *Column
		v    any
		want string
	}{
		{"null", col("int"), nil, "NULL"},

		// Integers as go-mysql decodes them: signed, whatever the column.
		{"tinyint min", col("tinyint"), int8(-128), "-128"},
		{"tinyint unsigned max", col("tinyint", unsigned), int8(-1), "255"},
		{"smallint min", col("smallint"), int16(-32768), "-32768"},
		{"smallint unsigned max", col("smallint", unsigned), int16(-1), "65535"},
		{"mediumint min", col("mediumint"), int32(-8388608), "-8388608"},
		{"mediumint unsigned max", col("mediumint", unsigned), int32(-1), "16777215"},
		{"mediumint unsigned top bit", col("mediumint", unsigned), int32(-8388608), "8388608"},
		{"int min", col("int"), int32(math.MinInt32), "-2147483648"},
		{"int unsigned max", col("int", unsigned), int32(-1), "4294967295"},
		{"bigint min", col("bigint"), int64(math.MinInt64), "-9223372036854775808"},
		{"bigint unsigned max", col("bigint", unsigned), int64(-1), "18446744073709551615"},
		{"bigint unsigned top bit", col("bigint", unsigned), int64(math.MinInt64), "9223372036854775808"},

		// BIT, ENUM and SET as int64.
		{"bit(64) all ones", col("bit"), int64(-1), "18446744073709551615"},
		{"bit(1)", col("bit"), int64(1), "1"},
		{"enum index", col("enum"), int64(3), "3"},
		{"enum error value", col("enum"), int64(0), "0"},
		{"set of 64 members, all", col("set"), int64(-1), "-1"},
		{"set of 64 members, m63 only", col("set"), int64(math.MinInt64), "-9223372036854775808"},
		{"set empty", col("set"), int64(0), "0"},

		// YEAR as int: 0 is 0000.
		{"year 0000", col("year"), 0, "0"},
		{"year max", col("year"), 2155, "2155"},

		// FLOAT and DOUBLE: exponent form, shortest float64 digits of the exact value.
		{"float 0.1", col("float"), float32(0.1), "1.0000000149011612e-01"},
		{"float max", col("float"), float32(math.MaxFloat32), "3.4028234663852886e+38"},
		{"float min", col("float"), float32(-math.MaxFloat32), "-3.4028234663852886e+38"},
		{"float smallest subnormal", col("float"), float32(math.SmallestNonzeroFloat32), "1.401298464324817e-45"},
		{"float -0", col("float"), float32(math.Copysign(0, -1)), "-0e+00"},
		{"float integer", col("float"), float32(16777216), "1.6777216e+07"},
		{"double 0.1", col("double"), 0.1, "1e-01"},
		{"double max", col("double"), math.MaxFloat64, "1.7976931348623157e+308"},
		{"double smallest subnormal", col("double"), math.SmallestNonzeroFloat64, "5e-324"},
		{"double largest subnormal", col("double"), 2.225073858507201e-308, "2.225073858507201e-308"},
		{"double -0", col("double"), math.Copysign(0, -1), "-0e+00"},
		{"double 1e22", col("double"), 1e22, "1e+22"},

		// DECIMAL(65,30) in plain digits.
		{"decimal max", col("decimal"), decimal.RequireFromString("99999999999999999999999999999999999.999999999999999999999999999999"),
			"99999999999999999999999999999999999.999999999999999999999999999999"},
		{"decimal min", col("decimal"), decimal.RequireFromString("-99999999999999999999999999999999999.999999999999999999999999999999"),
			"-99999999999999999999999999999999999.999999999999999999999999999999"},
		{"decimal tiny", col("decimal"), decimal.RequireFromString("0.000000000000000000000000000001"), "0.000000000000000000000000000001"},
		{"decimal zero", col("decimal"), decimal.RequireFromString("0.000000000000000000000000000000"), "0"},

		// Temporal values as strings, zero and negative ones included.
		{"zero date", col("date"), "0000-00-00", "'0000-00-00'"},
		{"partial zero date", col("date"), "2020-00-15", "'2020-00-15'"},
		{"zero datetime(6)", col("datetime"), "0000-00-00 00:00:00.000000", "'0000-00-00 00:00:00.000000'"},
		{"timestamp(3)", col("timestamp"), "2038-01-19 03:14:07.999", "'2038-01-19 03:14:07.999'"},
		{"negative time(6)", col("time"), "-838:59:59.000000", "'-838:59:59.000000'"},
		{"negative sub-second time", col("time"), "-00:00:00.000001", "'-00:00:00.000001'"},

		// Strings: bytes untouched, escaped.
		{"utf8mb4", col("varchar"), "😀 ñ", "'😀 ñ'"},
		{"latin1 bytes", col("varchar"), "\xe9\xff\x80", "'\xe9\xff\x80'"},
		{"quotes and escapes", col("text"), "a'b\\c\x00\n\r\x1a", `'a\'b\\c\0\n\r\Z'`},
		{"empty", col("varchar"), "", "''"},
		{"blob with NUL", col("blob"), []byte{0, 1, 0}, `'\0` + "\x01" + `\0'`},
		{"empty blob", col("blob"), []byte{}, "''"},
		{"binary padded", col("binary", length(4)), "A", `'A\0\0\0'`},
		{"binary padded from bytes", col("binary", length(3)), []byte{0xff}, "'\xff\\0\\0'"},
		{"binary empty", col("binary", length(2)), "", `'\0\0'`},
		{"binary full", col("binary", length(2)), "AB", "'AB'"},
		{"varbinary not padded", col("varbinary", length(4)), "A", "'A'"},
		{"mariadb json is text", col("longtext"), []byte(`{"a":1}`), `'{"a":1}'`},
		{"mysql json", col("json"), `{"a":"é"}`, `_utf8mb4'{"a":"é"}'`},

		// MariaDB's UUID, INET6 and INET4: logged as BINARY(16) and BINARY(4) without their
		// trailing 0x00 bytes, padded back so that the server reads exactly its own bytes.
		{"uuid v1", col("uuid"), "\x6c\xcd\x78\x0c\xba\xba\x10\x26\x95\x64\x5b\x8c\x65\x60\x24\xdb",
			"'\x6c\xcd\x78\x0c\xba\xba\x10\x26\x95\x64\x5b\x8c\x65\x60\x24\xdb'"},
		{"uuid v1 ending in 0x00", col("uuid"), "\x12\x3e\x45\x67\xe8\x9b\x12\xd3\xa4\x56\x42\x66\x14\x17\x40",
			"'\x12\x3e\x45\x67\xe8\x9b\x12\xd3\xa4\x56\x42\x66\x14\x17\x40\\0'"},
		{"uuid v4 from bytes, a backslash escaped", col("uuid"), []byte("\x9f\x1c\x2a\x44\x8b\x3d\x4e\x5f\xa6\x07\x18\x29\x3a\x4b\x5c\x6d"),
			"'\x9f\x1c\x2a\x44\x8b\x3d\x4e\x5f\xa6\x07\x18\x29\x3a\x4b\\\\\x6d'"},
		{"uuid all zero", col("uuid"), "", "'" + strings.Repeat(`\0`, 16) + "'"},
		{"uuid null", col("uuid"), nil, "NULL"},
		{"inet6 ::", col("inet6"), "", "'" + strings.Repeat(`\0`, 16) + "'"},
		{"inet6 ::1", col("inet6"), []byte(strings.Repeat("\x00", 15) + "\x01"), "'" + strings.Repeat(`\0`, 15) + "\x01'"},
		{"inet6 ::ffff:10.0.0.1", col("inet6"), strings.Repeat("\x00", 10) + "\xff\xff\x0a\x00\x00\x01",
			"'" + strings.Repeat(`\0`, 10) + "\xff\xff" + `\n\0\0` + "\x01'"},
		{"inet6 2001:db8::", col("inet6"), "\x20\x01\x0d\xb8", "' \x01" + `\r` + "\xb8" + strings.Repeat(`\0`, 12) + "'"},
		{"inet4 0.0.0.0", col("inet4"), "", `'\0\0\0\0'`},
		{"inet4 10.0.0.0", col("inet4"), "\x0a", `'\n\0\0\0'`},
		{"inet4 255.255.255.255", col("inet4"), []byte{0xff, 0xff, 0xff, 0xff}, "'\xff\xff\xff\xff'"},
		{"binary(16) from a uuid", col("binary", length(16)), "\x12\x3e", "'\x12\x3e" + strings.Repeat(`\0`, 14) + "'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := appendValue([]byte("x="), tt.c, tt.v)
			if err != nil {
				t.Fatalf("appendValue(%s, %#v): %v", tt.c.dataType, tt.v, err)
			}
			if got, want := string(got), "x="+tt.want; got != want {
				t.Errorf("appendValue(%s, %#v) = %q, want %q", tt.c.dataType, tt.v, got, want)
			}
		})
	}
}

func TestAppendValue_Errors(t *testing.T) {
	tests := []struct {
		name string
		c    *Column
		v    any
	}{
		{"NaN", col("double"), math.NaN()},
		{"infinity", col("double"), math.Inf(1)},
		{"float infinity", col("float"), float32(math.Inf(-1))},
		{"partial JSON", col("json"), &replication.JsonDiff{Op: replication.JsonDiffOperationReplace, Path: "$.a", Value: "1"}},
		{"unknown type", col("int"), struct{}{}},
		{"uuid of 17 bytes", col("uuid"), strings.Repeat("a", 17)},
		{"uuid as text", col("uuid"), "6ccd780c-baba-1026-9564-5b8c656024db"},
		{"inet6 as text", col("inet6"), []byte("fe80::1:2:3:4:5ab")},
		{"inet4 of 5 bytes", col("inet4"), []byte{1, 2, 3, 4, 5}},
		{"inet4 as a number", col("inet4"), int64(167772160)},
		{"uuid as an ENUM index", col("uuid"), int64(1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := appendValue(nil, tt.c, tt.v)
			if !errors.Is(err, ErrUnsupportedValue) {
				t.Fatalf("appendValue(%#v) error = %v, want ErrUnsupportedValue", tt.v, err)
			}
			if !strings.Contains(err.Error(), "column c") {
				t.Errorf("error %q does not name the column", err)
			}
		})
	}
}

// TestAppendValue_ErrorNamesTable: a value the applier cannot write names its table and column.
func TestAppendValue_ErrorNamesTable(t *testing.T) {
	tbl := built(defOf("s", "t", []Column{{name: "id", dataType: "int"}, {name: "addr", dataType: "inet4"}}))
	_, err := appendValue(nil, &tbl.cols[1], "10.0.0.1")
	if !errors.Is(err, ErrUnsupportedValue) {
		t.Fatalf("appendValue(inet4, 10.0.0.1 as text) error = %v, want ErrUnsupportedValue", err)
	}
	if got, want := err.Error(), "column addr of `s`.`t` is INET4, whose values are 4 bytes, but the source logged a value of 8 bytes"; !strings.Contains(got, want) {
		t.Errorf("error %q, want it to contain %q", got, want)
	}
}

// TestAppendValue_FloatsRoundTrip: every float literal is read by MySQL as a DOUBLE (it has an
// exponent) and converts back to exactly the same bits, also through the double-to-float
// conversion of a FLOAT column.
func TestAppendValue_FloatsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100000; i++ {
		f32 := math.Float32frombits(r.Uint32())
		f64 := math.Float64frombits(r.Uint64())
		if i < 4 { // the extremes first
			f32 = []float32{math.MaxFloat32, math.SmallestNonzeroFloat32, 1.1754942e-38, float32(math.Copysign(0, -1))}[i]
			f64 = []float64{math.MaxFloat64, math.SmallestNonzeroFloat64, 2.225073858507201e-308, math.Copysign(0, -1)}[i]
		}
		if !math.IsNaN(float64(f32)) && !math.IsInf(float64(f32), 0) {
			lit, err := appendValue(nil, col("float"), f32)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(lit), "e") {
				t.Fatalf("FLOAT literal %s has no exponent: MySQL would read a DECIMAL", lit)
			}
			d, err := strconv.ParseFloat(string(lit), 64)
			if err != nil || math.Float32bits(float32(d)) != math.Float32bits(f32) || d != float64(f32) {
				t.Fatalf("FLOAT %v (bits %08x): literal %s reads back as %v", f32, math.Float32bits(f32), lit, d)
			}
		}
		if !math.IsNaN(f64) && !math.IsInf(f64, 0) {
			lit, err := appendValue(nil, col("double"), f64)
			if err != nil {
				t.Fatal(err)
			}
			d, err := strconv.ParseFloat(string(lit), 64)
			if err != nil || math.Float64bits(d) != math.Float64bits(f64) || !strings.Contains(string(lit), "e") {
				t.Fatalf("DOUBLE %v (bits %016x): literal %s reads back as %v", f64, math.Float64bits(f64), lit, d)
			}
		}
	}
}

func TestAppendMatch(t *testing.T) {
	tests := []struct {
		name string
		c    *Column
		v    any
		want string
	}{
		{"null", col("varchar"), nil, "`c` IS NULL"},
		{"int", col("int"), int32(-1), "`c`=-1"},
		{"float exact", col("float"), float32(0.1), "`c`=1.0000000149011612e-01"},
		{"varchar: collation, then bytes", col("varchar"), "a ", "`c`='a ' AND CAST(`c` AS BINARY)='a '"},
		{"char", col("char"), "A", "`c`='A' AND CAST(`c` AS BINARY)='A'"},
		{"text: bytes", col("text"), []byte("x"), "CAST(`c` AS BINARY)='x'"},
		{"mariadb json: bytes", col("longtext"), []byte(`{}`), "CAST(`c` AS BINARY)='{}'"},
		{"binary padded", col("binary", length(2)), "A", `` + "`c`" + `='A\0'`},
		{"blob", col("blob"), []byte{0}, "`c`='\\0'"},
		{"mysql json", col("json"), `{"a":1}`, "`c`=CAST(_utf8mb4'{\"a\":1}' AS JSON)"},
		{"enum error value", col("enum"), int64(0), "`c`=0"},
		{"set all 64", col("set"), int64(-1), "`c`=-1"},
		{"bit(64)", col("bit"), int64(-1), "`c`=18446744073709551615"},
		{"inet4 padded", col("inet4"), "\x0a", "`c`='\\n\\0\\0\\0'"},
		{"uuid null", col("uuid"), nil, "`c` IS NULL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := appendMatch(nil, tt.c, tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("appendMatch(%s, %#v) = %s, want %s", tt.c.dataType, tt.v, got, tt.want)
			}
		})
	}
}

// testTable is a table of three columns: id INT, e ENUM, v VARCHAR, with the given key.
func testTable(kind keyKind) *Table {
	t := &Table{schema: "s", name: "t", quoted: "`s`.`t`", keyKind: kind, hasEnum: true,
		cols: []Column{
			{name: "id", dataType: "int", quoted: "`id`"},
			{name: "e", dataType: "enum", quoted: "`e`"},
			{name: "v", dataType: "varchar", quoted: "`v`"},
		},
		writable: []int{0, 1, 2},
	}
	t.insertHead = []byte("INSERT INTO `s`.`t` (`id`,`e`,`v`) VALUES ")
	t.insertShape, t.updateShape, t.deleteShape = "INSERT `s`.`t`", "UPDATE `s`.`t`", "DELETE `s`.`t`"
	if kind == keyAll {
		t.key = []int{0, 1, 2}
	} else {
		t.key = []int{0}
	}
	return t
}

func TestStatements(t *testing.T) {
	before := []any{int32(1), int64(2), "a"}
	after := []any{int32(2), int64(1), "b"}
	enumZero := []any{int32(3), int64(0), nil}
	tests := []struct {
		name  string
		kind  keyKind
		build func(*Batch, *Table) error
		want  string
	}{
		{
			name: "insert",
			kind: keyPrimary,
			build: func(b *Batch, t *Table) error {
				return appendInsert(b, t, []event.Row{{After: before}, {After: after}})
			},
			want: "INSERT INTO `s`.`t` (`id`,`e`,`v`) VALUES (1,2,'a'),(2,1,'b')",
		},
		{
			name: "insert of ENUM's error value: strict mode off for that statement only",
			kind: keyPrimary,
			build: func(b *Batch, t *Table) error {
				return appendInsert(b, t, []event.Row{{After: before}, {After: enumZero}})
			},
			want: "SET SESSION sql_mode='" + sqlModeLenient + "';INSERT INTO `s`.`t` (`id`,`e`,`v`) VALUES (1,2,'a'),(3,0,NULL);" +
				"SET SESSION sql_mode='" + SQLModeStrict + "'",
		},
		{
			name: "update by primary key, changing it",
			kind: keyPrimary,
			build: func(b *Batch, t *Table) error {
				return appendUpdate(b, t, []event.Row{{Before: before, After: after}}, ExecModeStrict, "")
			},
			want: "UPDATE `s`.`t` SET `id`=2,`e`=1,`v`='b' WHERE `id`=1",
		},
		{
			name: "update to ENUM's error value",
			kind: keyPrimary,
			build: func(b *Batch, t *Table) error {
				return appendUpdate(b, t, []event.Row{{Before: before, After: enumZero}, {Before: enumZero, After: after}}, ExecModeStrict, "")
			},
			want: "SET SESSION sql_mode='" + sqlModeLenient + "';UPDATE `s`.`t` SET `id`=3,`e`=0,`v`=NULL WHERE `id`=1;" +
				"SET SESSION sql_mode='" + SQLModeStrict + "';UPDATE `s`.`t` SET `id`=2,`e`=1,`v`='b' WHERE `id`=3",
		},
		{
			name: "update without a key: every column, exactly, one row",
			kind: keyAll,
			build: func(b *Batch, t *Table) error {
				return appendUpdate(b, t, []event.Row{{Before: enumZero, After: after}}, ExecModeStrict, "")
			},
			want: "UPDATE `s`.`t` SET `id`=2,`e`=1,`v`='b' WHERE `id`=3 AND `e`=0 AND `v` IS NULL LIMIT 1",
		},
		{
			name: "delete by key: one statement",
			kind: keyUnique,
			build: func(b *Batch, t *Table) error {
				return appendDelete(b, t, []event.Row{{Before: before}, {Before: after}}, "")
			},
			want: "DELETE FROM `s`.`t` WHERE `id` IN (1,2)",
		},
		{
			name: "delete without a key: one row at a time",
			kind: keyAll,
			build: func(b *Batch, t *Table) error {
				return appendDelete(b, t, []event.Row{{Before: before}, {Before: before}}, "")
			},
			want: "DELETE FROM `s`.`t` WHERE `id`=1 AND `e`=2 AND `v`='a' AND CAST(`v` AS BINARY)='a' LIMIT 1;" +
				"DELETE FROM `s`.`t` WHERE `id`=1 AND `e`=2 AND `v`='a' AND CAST(`v` AS BINARY)='a' LIMIT 1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b Batch
			if err := tt.build(&b, testTable(tt.kind)); err != nil {
				t.Fatal(err)
			}
			if got := string(b.buf); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestRequalify(t *testing.T) {
	tests := []struct {
		name string
		q    string
		refs [][2]int
		want string
	}{
		{"none", "ALTER TABLE t ADD c INT", nil, "ALTER TABLE t ADD c INT"},
		{"one", "ALTER TABLE shop.t ADD c INT", [][2]int{{12, 16}}, "ALTER TABLE `copy`.t ADD c INT"},
		{"two", "RENAME TABLE `shop`.a TO shop.b", [][2]int{{13, 19}, {25, 29}}, "RENAME TABLE `copy`.a TO `copy`.b"},
		{"out of range: unchanged", "ALTER TABLE t", [][2]int{{5, 50}}, "ALTER TABLE t"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := requalify(tt.q, tt.refs, "`copy`"); got != tt.want {
				t.Errorf("requalify(%q, %v) = %q, want %q", tt.q, tt.refs, got, tt.want)
			}
		})
	}
}
