package plan

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/shopspring/decimal"

	"github.com/vplayer/vplayer/sqlq"
)

// ErrUnsupportedValue means the binlog carried a value the applier cannot write exactly. Retrying
// cannot fix it: it is terminal.
var ErrUnsupportedValue = errors.New("unsupported binlog value")

// Session sql_mode of the applier's connection. Strict, so that a value the target's column
// cannot hold (a narrower column, a drifted definition) is an error rather than a silent
// truncation; invalid and zero dates allowed, because a source may hold them. sqlModeLenient is
// the same without strictness, for the rare statement that writes a value only a non-strict
// source could have stored (see needsLenient).
const (
	SQLModeStrict  = "STRICT_ALL_TABLES,NO_AUTO_VALUE_ON_ZERO,ALLOW_INVALID_DATES,NO_ENGINE_SUBSTITUTION"
	sqlModeLenient = "NO_AUTO_VALUE_ON_ZERO,ALLOW_INVALID_DATES,NO_ENGINE_SUBSTITUTION"
)

// appendValue appends v, as the reader decoded it for column c, as an SQL literal that stores
// exactly the source's value in c under the applier's session (SET NAMES binary, time_zone
// +00:00, sqlModeStrict). How each type arrives from go-mysql (UseDecimal, ParseTime off,
// TimestampStringLocation UTC) and how it is written:
//
//   - integers arrive signed, whatever the column: they are reinterpreted for unsigned columns
//     (the target's definition says which), MEDIUMINT UNSIGNED on 24 bits;
//   - BIT arrives as an int64 bit pattern and ENUM as an int64 index: written as unsigned
//     integers, which store the bits and the index (0 is ENUM's empty-string error value: see
//     needsLenient). SET arrives as an int64 bit pattern too, but is written signed: the server
//     stores a SET from the bits of a negative number, and compares a SET as a signed number
//     (the 64-member SET holding every member equals -1, never 18446744073709551615);
//   - YEAR arrives as an int, 0 for 0000: the number 0 stores 0000 (the string '0' would be 2000);
//   - FLOAT and DOUBLE are written in exponent form, so that the server reads a DOUBLE literal,
//     never a DECIMAL one, with the shortest digits that give back the same float64; a FLOAT's
//     float32 is widened first (exactly), so the server's double-to-float rounding is exact too
//     and an equality test against the stored FLOAT holds;
//   - DECIMAL arrives as a decimal.Decimal and is written in plain digits;
//   - DATE, DATETIME, TIMESTAMP (in UTC) and TIME arrive as strings with the column's fractional
//     digits, zero dates included, and are written as such;
//   - character and binary strings, TEXT, BLOB and MariaDB's JSON arrive as string or []byte and
//     are written as binary literals: the bytes pass through untouched. BINARY(n) is padded with
//     0x00 to n bytes: the binlog drops the padding, and a key comparison needs it back;
//   - MariaDB's UUID, INET6 and INET4 are logged as BINARY(16), BINARY(16) and BINARY(4): their
//     bytes in the order the server reads and prints them (a UUID's in its text's order, even
//     when its storage swaps the segments), the trailing 0x00 bytes dropped. They are padded back
//     to 16 or 4 bytes and written as a binary literal, which the server reads as exactly those
//     bytes (a binary string of any other length is an error there, and under SET NAMES binary
//     so is the text form). A longer value, or one of another Go type, is ErrUnsupportedValue;
//   - MySQL's JSON arrives as text decoded from its binary form and is written with a utf8mb4
//     introducer (MySQL refuses JSON from a binary string).
func appendValue(b []byte, c *Column, v any) ([]byte, error) {
	if n := c.binaryForm(); n > 0 && v != nil {
		return appendBinaryForm(b, c, v, n)
	}
	switch x := v.(type) {
	case nil:
		return append(b, "NULL"...), nil
	case int8:
		if c.asUnsigned() {
			return strconv.AppendUint(b, uint64(uint8(x)), 10), nil
		}
		return strconv.AppendInt(b, int64(x), 10), nil
	case int16:
		if c.asUnsigned() {
			return strconv.AppendUint(b, uint64(uint16(x)), 10), nil
		}
		return strconv.AppendInt(b, int64(x), 10), nil
	case int32:
		if c.asUnsigned() {
			if c.dataType == "mediumint" {
				return strconv.AppendUint(b, uint64(uint32(x)&0xffffff), 10), nil
			}
			return strconv.AppendUint(b, uint64(uint32(x)), 10), nil
		}
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		if c.asUnsigned() {
			return strconv.AppendUint(b, uint64(x), 10), nil
		}
		return strconv.AppendInt(b, x, 10), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case uint64:
		return strconv.AppendUint(b, x, 10), nil
	case uint32:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case float32:
		return appendFloat(b, c, float64(x))
	case float64:
		return appendFloat(b, c, x)
	case decimal.Decimal:
		return append(b, x.String()...), nil
	case string:
		return appendString(b, c, x), nil
	case []byte:
		return appendBytes(b, c, x), nil
	case time.Time:
		// Only with ParseTime on, which the reader turns off; kept exact all the same.
		return sqlq.AppendString(b, x.UTC().Format("2006-01-02 15:04:05.999999")), nil
	case *replication.JsonDiff:
		return b, fmt.Errorf("%w: %s: a partial JSON update (binlog_row_value_options=PARTIAL_JSON on the source) carries a change, not the value: set binlog_row_value_options='' on the source",
			ErrUnsupportedValue, c.where())
	}
	return b, fmt.Errorf("%w: %s: cannot write a value of Go type %T", ErrUnsupportedValue, c.where(), v)
}

// where names c, and its table when known, for errors.
func (c *Column) where() string {
	if c.table == "" {
		return "column " + c.name
	}
	return "column " + c.name + " of " + c.table
}

// binaryForm is the length in bytes of the binary string the server reads a value of c from,
// for MariaDB's types that the binlog logs as BINARY(n): 16 for UUID and INET6, 4 for INET4; 0
// for every other column.
func (c *Column) binaryForm() int {
	switch c.dataType {
	case "uuid", "inet6":
		return 16
	case "inet4":
		return 4
	}
	return 0
}

// appendBinaryForm writes v, a value of a column whose binaryForm is n, as a binary literal of n
// bytes: see appendValue.
func appendBinaryForm(b []byte, c *Column, v any, n int) ([]byte, error) {
	var p [16]byte // n bytes of it, the padding 0x00
	var m int      // the value's length
	switch x := v.(type) {
	case string:
		m = len(x)
		copy(p[:], x)
	case []byte:
		m = len(x)
		copy(p[:], x)
	default:
		return b, fmt.Errorf("%w: %s is %s, whose values are %d bytes, but the source logged a value of Go type %T for it: give the target's column the source's type",
			ErrUnsupportedValue, c.where(), strings.ToUpper(c.dataType), n, v)
	}
	if m > n {
		return b, fmt.Errorf("%w: %s is %s, whose values are %d bytes, but the source logged a value of %d bytes for it: give the target's column the source's type",
			ErrUnsupportedValue, c.where(), strings.ToUpper(c.dataType), n, m)
	}
	return sqlq.AppendBytes(b, p[:n]), nil
}

// asUnsigned reports whether integers for c are written as unsigned.
func (c *Column) asUnsigned() bool {
	switch c.dataType {
	case "bit", "enum":
		return true
	case "set":
		return false
	}
	return c.unsigned
}

func appendFloat(b []byte, c *Column, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, fmt.Errorf("%w: %s: float value %v cannot be stored", ErrUnsupportedValue, c.where(), f)
	}
	return strconv.AppendFloat(b, f, 'e', -1, 64), nil
}

// appendString and appendBytes write a string value for c: see appendValue.
func appendString(b []byte, c *Column, s string) []byte {
	if c.dataType == "binary" && len(s) < c.length {
		return appendBytes(b, c, []byte(s))
	}
	return sqlq.AppendString(introduce(b, c), s)
}

func appendBytes(b []byte, c *Column, s []byte) []byte {
	if c.dataType == "binary" && len(s) < c.length {
		p := make([]byte, c.length)
		copy(p, s)
		s = p
	}
	return sqlq.AppendBytes(introduce(b, c), s)
}

// introduce appends the character set introducer c's literals need, if any.
func introduce(b []byte, c *Column) []byte {
	if c.dataType == "json" {
		return append(b, "_utf8mb4"...)
	}
	return b
}

// appendMatch appends a condition that holds for exactly the rows whose column c holds v, for
// the all-columns row identity: NULL matches NULL, and strings compared under a collation
// (case-insensitive, or PAD SPACE: 'a' = 'a ') are also compared byte for byte, so that rows
// that only a collation confuses are told apart. The collation test comes first for CHAR and
// VARCHAR so that an index on the column can still be used.
func appendMatch(b []byte, c *Column, v any) ([]byte, error) {
	if v == nil {
		b = append(b, c.quoted...)
		return append(b, " IS NULL"...), nil
	}
	var err error
	switch c.dataType {
	case "char", "varchar":
		b = append(b, c.quoted...)
		b = append(b, '=')
		if b, err = appendValue(b, c, v); err != nil {
			return b, err
		}
		b = append(b, " AND "...)
		fallthrough
	case "tinytext", "text", "mediumtext", "longtext":
		b = append(b, "CAST("...)
		b = append(b, c.quoted...)
		b = append(b, " AS BINARY)="...)
		return appendValue(b, c, v)
	case "json":
		// MySQL's JSON: compared as JSON values; its text rendering is the server's own.
		b = append(b, c.quoted...)
		b = append(b, "=CAST("...)
		if b, err = appendValue(b, c, v); err != nil {
			return b, err
		}
		return append(b, " AS JSON)"...), nil
	}
	b = append(b, c.quoted...)
	b = append(b, '=')
	return appendValue(b, c, v)
}

// needsLenient reports whether writing vals into the columns cols of t needs sqlModeLenient:
// when an ENUM holds index 0, the empty-string error value that a non-strict source stores for
// a value outside the list. Strict mode refuses to write it back.
func needsLenient(t *Table, cols []int, vals []any) bool {
	if !t.hasEnum {
		return false
	}
	for _, i := range cols {
		if t.cols[i].dataType == "enum" {
			if x, ok := vals[i].(int64); ok && x == 0 {
				return true
			}
		}
	}
	return false
}
