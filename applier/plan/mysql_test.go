package plan

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// No MySQL server can be installed where these tests run, so the MySQL-only paths are tested on
// events built here byte by byte, as a MySQL 8 source writes them, decoded by go-mysql configured
// as binlog.Reader configures it, and written by appendValue for a MySQL target's columns:
// binary JSON, the table map's optional metadata (column names, signedness), ENUM logged as
// STRING.

// jsonb is a MySQL binary JSON value: its type byte and its data.
type jsonb struct {
	typ  byte
	data []byte
}

const (
	jsonbSmallObject = 0x00
	jsonbSmallArray  = 0x02
	jsonbLiteral     = 0x04
	jsonbInt16       = 0x05
	jsonbInt64       = 0x09
	jsonbUint64      = 0x0a
	jsonbDouble      = 0x0b
	jsonbString      = 0x0c
)

func jsonbLit(b byte) jsonb { return jsonb{jsonbLiteral, []byte{b, 0}} }

func jsonbI16(v int16) jsonb {
	return jsonb{jsonbInt16, binary.LittleEndian.AppendUint16(nil, uint16(v))}
}

func jsonbI64(v int64) jsonb {
	return jsonb{jsonbInt64, binary.LittleEndian.AppendUint64(nil, uint64(v))}
}

func jsonbU64(v uint64) jsonb { return jsonb{jsonbUint64, binary.LittleEndian.AppendUint64(nil, v)} }

func jsonbF64(v float64) jsonb {
	return jsonb{jsonbDouble, binary.LittleEndian.AppendUint64(nil, math.Float64bits(v))}
}

func jsonbStr(s string) jsonb {
	var b []byte
	for n := len(s); ; n >>= 7 { // variable-length size, 7 bits a byte
		if n < 0x80 {
			b = append(b, byte(n))
			break
		}
		b = append(b, byte(n&0x7f|0x80))
	}
	return jsonb{jsonbString, append(b, s...)}
}

func inlined(v jsonb) bool { return v.typ == jsonbLiteral || v.typ == jsonbInt16 }

// jsonbContainer lays out a small object (keys not nil) or array: count, size, key entries,
// value entries, keys, then the values that are not inlined. Offsets count from the count field.
func jsonbContainer(keys []string, vals []jsonb) jsonb {
	n := len(vals)
	header := 4 + 3*n
	if keys != nil {
		header += 4 * n
	}
	var tail []byte
	keyOffsets := make([]int, len(keys))
	for i, k := range keys {
		keyOffsets[i] = header + len(tail)
		tail = append(tail, k...)
	}
	valOffsets := make([]int, n)
	for i, v := range vals {
		if !inlined(v) {
			valOffsets[i] = header + len(tail)
			tail = append(tail, v.data...)
		}
	}
	b := binary.LittleEndian.AppendUint16(nil, uint16(n))
	b = binary.LittleEndian.AppendUint16(b, uint16(header+len(tail)))
	for i, k := range keys {
		b = binary.LittleEndian.AppendUint16(b, uint16(keyOffsets[i]))
		b = binary.LittleEndian.AppendUint16(b, uint16(len(k)))
	}
	for i, v := range vals {
		b = append(b, v.typ)
		if inlined(v) {
			b = append(b, v.data[:2]...)
		} else {
			b = binary.LittleEndian.AppendUint16(b, uint16(valOffsets[i]))
		}
	}
	typ := byte(jsonbSmallArray)
	if keys != nil {
		typ = jsonbSmallObject
	}
	return jsonb{typ, append(b, tail...)}
}

// mysqlEvent frames body as a binlog event of type typ (checksums off).
func mysqlEvent(typ replication.EventType, body []byte) []byte {
	h := binary.LittleEndian.AppendUint32(nil, uint32(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Unix()))
	h = append(h, byte(typ))
	h = binary.LittleEndian.AppendUint32(h, 1)                    // server id
	h = binary.LittleEndian.AppendUint32(h, uint32(19+len(body))) // event size
	h = binary.LittleEndian.AppendUint32(h, 0)                    // log pos
	h = binary.LittleEndian.AppendUint16(h, 0)                    // flags
	return append(h, body...)
}

func lenenc(b []byte, s string) []byte { return append(append(b, byte(len(s))), s...) }

func TestMySQLRowValues(t *testing.T) {
	p := replication.NewBinlogParser()
	// As binlog.Reader configures its syncer.
	p.SetFlavor(mysql.MySQLFlavor)
	p.SetUseDecimal(true)
	p.SetUseFloatWithTrailingZero(true)
	p.SetParseTime(false)
	p.SetTimestampStringLocation(time.UTC)

	// Format description: binlog version 4, MySQL 8.0.36, post-header lengths, checksums off.
	fde := binary.LittleEndian.AppendUint16(nil, 4)
	fde = append(fde, make([]byte, 50)...)
	copy(fde[2:], "8.0.36")
	fde = binary.LittleEndian.AppendUint32(fde, 0)
	fde = append(fde, 19)
	for range 41 {
		fde = append(fde, 8)
	}
	fde = append(fde, 0, 0, 0, 0, 0) // checksum algorithm OFF, and its (unused) checksum

	// Table map of shop.j (id BIGINT UNSIGNED, doc JSON, e ENUM('a','b','c'), d DOUBLE), with
	// the optional metadata of binlog_row_metadata=FULL.
	tm := []byte{42, 0, 0, 0, 0, 0, 0, 0}
	tm = lenenc(tm, "shop")
	tm = append(tm, 0)
	tm = lenenc(tm, "j")
	tm = append(tm, 0, 4)
	tm = append(tm, mysql.MYSQL_TYPE_LONGLONG, mysql.MYSQL_TYPE_JSON, mysql.MYSQL_TYPE_STRING, mysql.MYSQL_TYPE_DOUBLE)
	tm = append(tm, 4, 4, mysql.MYSQL_TYPE_ENUM, 1, 8) // metadata: JSON length bytes, ENUM real type and pack length, DOUBLE size
	tm = append(tm, 0x0f)                              // all nullable
	tm = append(tm, replication.TABLE_MAP_OPT_META_SIGNEDNESS, 1, 0x80)
	names := lenenc(lenenc(lenenc(lenenc(nil, "id"), "doc"), "e"), "d")
	tm = append(append(tm, replication.TABLE_MAP_OPT_META_COLUMN_NAME, byte(len(names))), names...)

	doc := jsonbContainer([]string{"a", "big", "neg", "one", "pi", "s", "tiny", "t"}, []jsonb{
		jsonbContainer(nil, []jsonb{jsonbI16(1), jsonbLit(0), jsonbContainer([]string{"b"}, []jsonb{jsonbStr("ü😀")})}),
		jsonbU64(math.MaxUint64),
		jsonbI64(math.MinInt64),
		jsonbF64(1.0),
		jsonbF64(math.Pi),
		jsonbStr(`q"b\s` + "\n<"),
		jsonbF64(-2.5e-300),
		jsonbLit(1),
	})
	docBytes := append([]byte{doc.typ}, doc.data...)

	// Write rows v2: one row, every column present, none NULL.
	rows := []byte{42, 0, 0, 0, 0, 0, 0, 0, 2, 0, 4, 0x0f, 0x00}
	rows = binary.LittleEndian.AppendUint64(rows, math.MaxUint64)
	rows = binary.LittleEndian.AppendUint32(rows, uint32(len(docBytes)))
	rows = append(rows, docBytes...)
	rows = append(rows, 2)
	rows = binary.LittleEndian.AppendUint64(rows, math.Float64bits(-0.1))

	var re *replication.RowsEvent
	var tme *replication.TableMapEvent
	for _, ev := range [][]byte{
		mysqlEvent(replication.FORMAT_DESCRIPTION_EVENT, fde),
		mysqlEvent(replication.TABLE_MAP_EVENT, tm),
		mysqlEvent(replication.WRITE_ROWS_EVENTv2, rows),
	} {
		e, err := p.Parse(ev)
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		switch x := e.Event.(type) {
		case *replication.TableMapEvent:
			tme = x
		case *replication.RowsEvent:
			re = x
		}
	}
	if re == nil || tme == nil || len(re.Rows) != 1 {
		t.Fatalf("decoded table map %v, rows %v: want one row", tme, re)
	}
	if got := tme.ColumnNameString(); len(got) != 4 || got[1] != "doc" {
		t.Errorf("column names = %q, want id, doc, e, d", got)
	}
	if got := tme.UnsignedMap(); !got[0] || got[3] {
		t.Errorf("unsigned map = %v, want id unsigned, d signed", got)
	}

	// The MySQL target's definition of the same table.
	cols := []Column{
		{name: "id", dataType: "bigint", unsigned: true},
		{name: "doc", dataType: "json"},
		{name: "e", dataType: "enum"},
		{name: "d", dataType: "double"},
	}
	// go-mysql's text: keys sorted, doubles with a fractional part so that MySQL reads them back
	// as doubles (1.0, not 1; tiny ones spelt out in full), 64-bit integers exact, unicode as
	// UTF-8, HTML characters escaped (the same JSON value). The SQL literal escapes its
	// backslashes and newline.
	tiny := "-0." + strings.Repeat("0", 299) + "25"
	want := []string{
		"18446744073709551615",
		`_utf8mb4'{"a":[1,null,{"b":"ü😀"}],"big":18446744073709551615,"neg":-9223372036854775808,"one":1.0,"pi":3.141592653589793,"s":"q\\"b\\\\s\\n\\u003c","t":true,"tiny":` + tiny + `}'`,
		"2",
		"-1e-01",
	}
	for i, v := range re.Rows[0] {
		got, err := appendValue(nil, &cols[i], v)
		if err != nil {
			t.Fatalf("column %s: appendValue(%T %v): %v", cols[i].name, v, v, err)
		}
		if string(got) != want[i] {
			t.Errorf("column %s: go-mysql decoded %T %v\nwritten %s\nwant    %s", cols[i].name, v, v, got, want[i])
		}
	}
}
