// Package tablekey writes the key values of a table's rows as the server sees them: how a key
// column (a tabledef.Column; tabledef picks the key) is read, written back as a literal that
// compares as the column sorts, and shown to a person, and the conditions of a range of keys in
// key order. vdiff's chunks and the copier's share it.
package tablekey

import (
	"database/sql"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/vplayer/vplayer/sqlq"
	"github.com/vplayer/vplayer/tabledef"
)

// kind says how a column's values are read as keys and written back as literals.
type kind uint8

const (
	// kindText is a character string: read as HEX() of its bytes in the column's character set,
	// written back as _charset X'..', so that no connection character set conversion touches it.
	kindText kind = iota + 1
	// kindBinary is a byte string: HEX() and X'..'. MariaDB's UUID, INET6 and INET4 too: HEX()
	// gives their bytes in the order the server reads them from a binary string (a UUID's in its
	// text's order, though its storage swaps the segments of some versions), and X'..' compares
	// with the column as a value of its type, in the order the column sorts. Their text, quoted,
	// would not do: under SET NAMES binary the server reads it as bytes, finds no value and
	// compares nothing (a warning, not an error).
	kindBinary
	// kindNumber is a number: its text, written back unquoted. ENUM, SET and BIT are read as
	// their numbers (col+0), which is how they sort and compare with a number.
	kindNumber
	// kindOther is everything else (temporal types): its text, quoted.
	kindOther
)

// kindOf is c's kind.
func kindOf(c tabledef.Column) kind {
	switch c.Type {
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext":
		if c.Charset == "" || c.Charset == "binary" {
			return kindBinary
		}
		return kindText
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "uuid", "inet6", "inet4":
		return kindBinary
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint", "decimal", "numeric",
		"float", "double", "real", "year", "enum", "set", "bit":
		return kindNumber
	}
	return kindOther
}

// Expr is what key column c is read as (see kind).
func Expr(c tabledef.Column) string {
	switch k := kindOf(c); {
	case k == kindText || k == kindBinary:
		return "HEX(" + c.Ident() + ")"
	case c.Type == "enum" || c.Type == "set" || c.Type == "bit":
		return c.Ident() + "+0"
	case c.Type == "float":
		return c.Ident() + "+0e0" // DOUBLE prints every FLOAT exactly; FLOAT's own text does not
	}
	return c.Ident()
}

var numberText = regexp.MustCompile(`^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$`)
var hexText = regexp.MustCompile(`^[0-9A-Fa-f]*$`)

// Literal writes a value of column c read with Expr back as an SQL literal that compares with
// the column as the column sorts.
func Literal(c tabledef.Column, v string) string {
	switch kindOf(c) {
	case kindText:
		if hexText.MatchString(v) {
			return "_" + c.Charset + " X'" + v + "'"
		}
	case kindBinary:
		if hexText.MatchString(v) {
			return "X'" + v + "'"
		}
	case kindNumber:
		if numberText.MatchString(v) {
			return v
		}
	}
	return sqlq.String(v)
}

// Display shows a value of column c read with Expr to a person: text as a quoted string when it
// is printable UTF-8, else as 0x hex; numbers and dates as they are. Long values are cut.
func Display(c tabledef.Column, v string) string {
	const maxLen = 64
	k := kindOf(c)
	if k != kindText && k != kindBinary {
		return v
	}
	b, err := hex.DecodeString(v)
	if err != nil {
		return v
	}
	if len(b) == 0 {
		return `""`
	}
	if k == kindText && strings.HasPrefix(c.Charset, "utf8") && utf8.Valid(b) && printable(string(b)) {
		s := string(b)
		if len(s) > maxLen {
			s = s[:maxLen]
			for !utf8.ValidString(s) {
				s = s[:len(s)-1]
			}
			return strconv.Quote(s) + "..."
		}
		return strconv.Quote(s)
	}
	if len(v) > maxLen {
		return "0x" + v[:maxLen] + "..."
	}
	return "0x" + v
}

func printable(s string) bool {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// Compare is the condition (key) op (vals) in the key's lexicographic order, vals read with
// Expr: strict on every column but the last, last on the last one. (key) > vals is
// Compare(key, vals, ">", ">"), (key) <= vals is Compare(key, vals, "<", "<="). Written out
// column by column ((a > x) OR (a = x AND b > y) ...), which every server turns into index ranges.
func Compare(key []tabledef.Column, vals []string, strict, last string) string {
	ors := make([]string, len(key))
	for i := range key {
		ands := make([]string, 0, i+1)
		for j := 0; j < i; j++ {
			ands = append(ands, key[j].Ident()+" = "+Literal(key[j], vals[j]))
		}
		op := strict
		if i == len(key)-1 {
			op = last
		}
		ands = append(ands, key[i].Ident()+" "+op+" "+Literal(key[i], vals[i]))
		ors[i] = "(" + strings.Join(ands, " AND ") + ")"
	}
	return "(" + strings.Join(ors, " OR ") + ")"
}

// ScanStrings scans n columns of the current row as strings (NULL as "").
func ScanStrings(rows *sql.Rows, n int) ([]string, error) {
	raw := make([]sql.RawBytes, n)
	ptrs := make([]any, n)
	for i := range raw {
		ptrs[i] = &raw[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	out := make([]string, n)
	for i, b := range raw {
		out[i] = string(b)
	}
	return out, nil
}
