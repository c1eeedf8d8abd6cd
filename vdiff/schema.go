package vdiff

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/vplayer/vplayer/sqlq"
)

// Querier runs queries: a *sql.Conn holding a snapshot transaction, or a *sql.DB in tests.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// kind says how a column's values are read as keys and written back as literals.
type kind uint8

const (
	// kindText is a character string: read as HEX() of its bytes in the column's character set,
	// written back as _charset X'..', so that no connection character set conversion touches it.
	kindText kind = iota + 1
	// kindBinary is a byte string: HEX() and X'..'.
	kindBinary
	// kindNumber is a number: its text, written back unquoted. ENUM, SET and BIT are read as
	// their numbers (col+0), which is how they sort and compare with a number.
	kindNumber
	// kindOther is everything else (temporal types): its text, quoted.
	kindOther
)

// column is one column as information_schema describes it.
type column struct {
	name    string
	typ     string // DATA_TYPE, lower case
	charset string // CHARACTER_SET_NAME, "" for none
	kind    kind
}

func newColumn(name, typ, charset string) column {
	c := column{name: name, typ: strings.ToLower(typ), charset: charset}
	switch c.typ {
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext":
		c.kind = kindText
		if c.charset == "" || c.charset == "binary" {
			c.kind = kindBinary
		}
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		c.kind = kindBinary
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint", "decimal", "numeric",
		"float", "double", "real", "year", "enum", "set", "bit":
		c.kind = kindNumber
	default:
		c.kind = kindOther
	}
	return c
}

// ident is the column's quoted name.
func (c column) ident() string { return sqlq.Ident(c.name) }

// keyExpr is what a key column is read as (see kind).
func (c column) keyExpr() string {
	switch {
	case c.kind == kindText || c.kind == kindBinary:
		return "HEX(" + c.ident() + ")"
	case c.typ == "enum" || c.typ == "set" || c.typ == "bit":
		return c.ident() + "+0"
	case c.typ == "float":
		return c.ident() + "+0e0" // DOUBLE prints every FLOAT exactly; FLOAT's own text does not
	}
	return c.ident()
}

var numberText = regexp.MustCompile(`^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$`)
var hexText = regexp.MustCompile(`^[0-9A-Fa-f]*$`)

// literal writes a value read with keyExpr back as an SQL literal that compares with the column
// as the column sorts.
func (c column) literal(v string) string {
	switch c.kind {
	case kindText:
		if hexText.MatchString(v) {
			return "_" + c.charset + " X'" + v + "'"
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

// display shows a value read with keyExpr to a person: text as a quoted string when it is
// printable UTF-8, else as 0x hex; numbers and dates as they are. Long values are cut.
func (c column) display(v string) string {
	const maxLen = 64
	if c.kind != kindText && c.kind != kindBinary {
		return v
	}
	b, err := hex.DecodeString(v)
	if err != nil {
		return v
	}
	if len(b) == 0 {
		return `""`
	}
	if c.kind == kindText && strings.HasPrefix(c.charset, "utf8") && utf8.Valid(b) && printable(string(b)) {
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

// digestExpr is the column's contribution to a row's digest: its bytes, as the source and the
// target both render them, with NULL distinct from every value. Long types are hashed on their
// own so that a row's digest never outgrows max_allowed_packet.
func (c column) digestExpr() string {
	v := "CAST(" + c.ident() + " AS BINARY)"
	switch c.typ {
	case "float":
		v = "CAST(" + c.ident() + "+0e0 AS BINARY)"
	}
	switch c.typ {
	case "tinytext", "text", "mediumtext", "longtext", "tinyblob", "blob", "mediumblob", "longblob", "json",
		"geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection":
		return "COALESCE(MD5(" + v + "), 'N')"
	}
	return "COALESCE(HEX(" + v + "), 'N')"
}

// columns reads the columns of schema.table in order; none when the table does not exist.
func columns(ctx context.Context, q Querier, schema, table string) ([]column, error) {
	rows, err := q.QueryContext(ctx, "SELECT COLUMN_NAME, DATA_TYPE, COALESCE(CHARACTER_SET_NAME, '') FROM information_schema.COLUMNS"+
		" WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", schema, table)
	if err != nil {
		return nil, fmt.Errorf("read the columns of %s.%s: %w", schema, table, err)
	}
	defer rows.Close()
	var out []column
	for rows.Next() {
		var name, typ, cs string
		if err := rows.Scan(&name, &typ, &cs); err != nil {
			return nil, fmt.Errorf("read the columns of %s.%s: %w", schema, table, err)
		}
		out = append(out, newColumn(name, typ, cs))
	}
	return out, rows.Err()
}

// Key kinds, as TableResult.KeyKind names them.
const (
	KeyPrimary = "primary key"
	KeyUnique  = "unique key"
	KeyNone    = "no key: rows compared as a whole"
)

// key picks the columns that identify a row of schema.table: the primary key, else the first
// unique key over NOT NULL columns (in the order the applier picks them). It returns nil and
// KeyNone when there is neither.
func key(ctx context.Context, q Querier, schema, table string, cols []column) ([]column, string, error) {
	rows, err := q.QueryContext(ctx, "SELECT s.INDEX_NAME, s.COLUMN_NAME, c.IS_NULLABLE FROM information_schema.STATISTICS s"+
		" JOIN information_schema.COLUMNS c ON c.TABLE_SCHEMA = s.TABLE_SCHEMA AND c.TABLE_NAME = s.TABLE_NAME AND c.COLUMN_NAME = s.COLUMN_NAME"+
		" WHERE s.TABLE_SCHEMA = ? AND s.TABLE_NAME = ? AND s.NON_UNIQUE = 0"+
		" ORDER BY s.INDEX_NAME = 'PRIMARY' DESC, s.INDEX_NAME, s.SEQ_IN_INDEX", schema, table)
	if err != nil {
		return nil, "", fmt.Errorf("read the keys of %s.%s: %w", schema, table, err)
	}
	defer rows.Close()
	byName := map[string]column{}
	for _, c := range cols {
		byName[c.name] = c
	}
	type index struct {
		name   string
		cols   []column
		usable bool
	}
	var order []*index
	seen := map[string]*index{}
	for rows.Next() {
		var ixName, colName, nullable string
		if err := rows.Scan(&ixName, &colName, &nullable); err != nil {
			return nil, "", fmt.Errorf("read the keys of %s.%s: %w", schema, table, err)
		}
		ix := seen[ixName]
		if ix == nil {
			ix = &index{name: ixName, usable: true}
			seen[ixName] = ix
			order = append(order, ix)
		}
		c, ok := byName[colName]
		ix.usable = ix.usable && ok && nullable == "NO"
		ix.cols = append(ix.cols, c)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("read the keys of %s.%s: %w", schema, table, err)
	}
	for _, ix := range order {
		if !ix.usable {
			continue
		}
		if ix.name == "PRIMARY" {
			return ix.cols, KeyPrimary, nil
		}
		return ix.cols, KeyUnique + " " + ix.name, nil
	}
	return nil, KeyNone, nil
}
