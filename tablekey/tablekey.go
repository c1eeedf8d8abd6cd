// Package tablekey says how rows of a table are identified and ordered, as the server sees them:
// the table's columns as information_schema describes them, the key that identifies a row (the
// primary key, else the first unique key over NOT NULL columns), how a key column is read and
// written back as a literal that compares as the column sorts, and the conditions of a range of
// keys in key order. vdiff's chunks and the copier's chunks share it.
package tablekey

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

// Kind says how a column's values are read as keys and written back as literals.
type Kind uint8

const (
	// KindText is a character string: read as HEX() of its bytes in the column's character set,
	// written back as _charset X'..', so that no connection character set conversion touches it.
	KindText Kind = iota + 1
	// KindBinary is a byte string: HEX() and X'..'. MariaDB's UUID, INET6 and INET4 too: HEX()
	// gives their bytes in the order the server reads them from a binary string (a UUID's in its
	// text's order, though its storage swaps the segments of some versions), and X'..' compares
	// with the column as a value of its type, in the order the column sorts. Their text, quoted,
	// would not do: under SET NAMES binary the server reads it as bytes, finds no value and
	// compares nothing (a warning, not an error).
	KindBinary
	// KindNumber is a number: its text, written back unquoted. ENUM, SET and BIT are read as
	// their numbers (col+0), which is how they sort and compare with a number.
	KindNumber
	// KindOther is everything else (temporal types): its text, quoted.
	KindOther
)

// Column is one column as information_schema describes it.
type Column struct {
	Name    string
	Type    string // DATA_TYPE, lower case
	Charset string // CHARACTER_SET_NAME, "" for none
	Kind    Kind
	// Generated says the server computes the column's values (VIRTUAL, STORED or PERSISTENT):
	// set by Columns, never by NewColumn.
	Generated bool
}

// NewColumn describes a column from its information_schema name, DATA_TYPE and CHARACTER_SET_NAME.
func NewColumn(name, typ, charset string) Column {
	c := Column{Name: name, Type: strings.ToLower(typ), Charset: charset}
	switch c.Type {
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext":
		c.Kind = KindText
		if c.Charset == "" || c.Charset == "binary" {
			c.Kind = KindBinary
		}
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "uuid", "inet6", "inet4":
		c.Kind = KindBinary
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint", "decimal", "numeric",
		"float", "double", "real", "year", "enum", "set", "bit":
		c.Kind = KindNumber
	default:
		c.Kind = KindOther
	}
	return c
}

// Ident is the column's quoted name.
func (c Column) Ident() string { return sqlq.Ident(c.Name) }

// KeyExpr is what a key column is read as (see Kind).
func (c Column) KeyExpr() string {
	switch {
	case c.Kind == KindText || c.Kind == KindBinary:
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

// Literal writes a value read with KeyExpr back as an SQL literal that compares with the column
// as the column sorts.
func (c Column) Literal(v string) string {
	switch c.Kind {
	case KindText:
		if hexText.MatchString(v) {
			return "_" + c.Charset + " X'" + v + "'"
		}
	case KindBinary:
		if hexText.MatchString(v) {
			return "X'" + v + "'"
		}
	case KindNumber:
		if numberText.MatchString(v) {
			return v
		}
	}
	return sqlq.String(v)
}

// Display shows a value read with KeyExpr to a person: text as a quoted string when it is
// printable UTF-8, else as 0x hex; numbers and dates as they are. Long values are cut.
func (c Column) Display(v string) string {
	const maxLen = 64
	if c.Kind != KindText && c.Kind != KindBinary {
		return v
	}
	b, err := hex.DecodeString(v)
	if err != nil {
		return v
	}
	if len(b) == 0 {
		return `""`
	}
	if c.Kind == KindText && strings.HasPrefix(c.Charset, "utf8") && utf8.Valid(b) && printable(string(b)) {
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

// Columns reads the columns of schema.table in order; none when the table does not exist.
func Columns(ctx context.Context, q Querier, schema, table string) ([]Column, error) {
	rows, err := q.QueryContext(ctx, "SELECT COLUMN_NAME, DATA_TYPE, COALESCE(CHARACTER_SET_NAME, ''), EXTRA FROM information_schema.COLUMNS"+
		" WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", schema, table)
	if err != nil {
		return nil, fmt.Errorf("read the columns of %s.%s: %w", schema, table, err)
	}
	defer rows.Close()
	var out []Column
	for rows.Next() {
		var name, typ, cs, extra string
		if err := rows.Scan(&name, &typ, &cs, &extra); err != nil {
			return nil, fmt.Errorf("read the columns of %s.%s: %w", schema, table, err)
		}
		c := NewColumn(name, typ, cs)
		c.Generated = generated(extra)
		out = append(out, c)
	}
	return out, rows.Err()
}

// generated reports whether a column whose information_schema EXTRA is extra is generated.
func generated(extra string) bool {
	extra = strings.ToUpper(extra)
	return strings.Contains(extra, "VIRTUAL") || strings.Contains(extra, "STORED") || strings.Contains(extra, "PERSISTENT")
}

// SharedColumns returns how many columns a source table and a target table share: the first of
// each, as many as the narrower table has, which a MySQL or MariaDB replica maps by position
// ("replication with differing table definitions": either table may have more columns after
// them). differ describes the first of them whose names differ (compared without regard to case,
// as the server compares column names), "" when none does.
func SharedColumns(src, dst []Column) (n int, differ string) {
	n = min(len(src), len(dst))
	for i := range n {
		if !strings.EqualFold(src[i].Name, dst[i].Name) {
			return n, fmt.Sprintf("column %d is %s on the source but %s on the target", i+1, src[i].Name, dst[i].Name)
		}
	}
	return n, ""
}

// Key kinds, as TableResult.KeyKind names them.
const (
	KeyPrimary = "primary key"
	KeyUnique  = "unique key"
	KeyNone    = "no key: rows compared as a whole"
)

// Key picks the columns that identify a row of schema.table: the primary key, else the first
// unique key over NOT NULL columns (in the order the applier picks them). It returns nil and
// KeyNone when there is neither.
func Key(ctx context.Context, q Querier, schema, table string, cols []Column) ([]Column, string, error) {
	// STATISTICS says itself whether a key's column may hold NULL ('YES', else ''): a join with
	// COLUMNS costs MariaDB a scan of every table's columns (64 ms on a server with a few
	// hundred tables, against 0.2 ms). A key part that is an expression (MySQL's functional
	// keys) has no column name: its key is not usable.
	rows, err := q.QueryContext(ctx, "SELECT INDEX_NAME, COLUMN_NAME, NULLABLE FROM information_schema.STATISTICS"+
		" WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND NON_UNIQUE = 0"+
		" ORDER BY INDEX_NAME = 'PRIMARY' DESC, INDEX_NAME, SEQ_IN_INDEX", schema, table)
	if err != nil {
		return nil, "", fmt.Errorf("read the keys of %s.%s: %w", schema, table, err)
	}
	defer rows.Close()
	byName := map[string]Column{}
	for _, c := range cols {
		byName[c.Name] = c
	}
	type index struct {
		name   string
		cols   []Column
		usable bool
	}
	var order []*index
	seen := map[string]*index{}
	for rows.Next() {
		var ixName, nullable string
		var colName sql.NullString
		if err := rows.Scan(&ixName, &colName, &nullable); err != nil {
			return nil, "", fmt.Errorf("read the keys of %s.%s: %w", schema, table, err)
		}
		ix := seen[ixName]
		if ix == nil {
			ix = &index{name: ixName, usable: true}
			seen[ixName] = ix
			order = append(order, ix)
		}
		c, ok := byName[colName.String]
		ix.usable = ix.usable && colName.Valid && ok && nullable != "YES"
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

// Compare is the condition (key) op (vals) in the key's lexicographic order, vals read with
// KeyExpr: strict on every column but the last, last on the last one. (key) > vals is
// Compare(key, vals, ">", ">"), (key) <= vals is Compare(key, vals, "<", "<="). Written out
// column by column ((a > x) OR (a = x AND b > y) ...), which every server turns into index ranges.
func Compare(key []Column, vals []string, strict, last string) string {
	ors := make([]string, len(key))
	for i := range key {
		ands := make([]string, 0, i+1)
		for j := 0; j < i; j++ {
			ands = append(ands, key[j].Ident()+" = "+key[j].Literal(vals[j]))
		}
		op := strict
		if i == len(key)-1 {
			op = last
		}
		ands = append(ands, key[i].Ident()+" "+op+" "+key[i].Literal(vals[i]))
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

// BaseTables lists the base tables of schema db that match, by name, in name order: MariaDB's
// system-versioned tables too, which information_schema does not call base tables.
func BaseTables(ctx context.Context, conn *sql.DB, db string, match func(table string) bool) ([]string, error) {
	rows, err := conn.QueryContext(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') ORDER BY TABLE_NAME", db)
	if err != nil {
		return nil, fmt.Errorf("list the tables of %s: %w", db, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("list the tables of %s: %w", db, err)
		}
		if match(name) {
			out = append(out, name)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list the tables of %s: %w", db, err)
	}
	return out, nil
}
