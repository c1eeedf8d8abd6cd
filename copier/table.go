package copier

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/vplayer/vplayer/sqlq"
	"github.com/vplayer/vplayer/tabledef"
	"github.com/vplayer/vplayer/tablekey"
)

// value says how a column's values are read from the source and written to the target, exactly.
type value uint8

const (
	// valueNumber: read as the server prints it, written unquoted (integers, DECIMAL, DOUBLE,
	// YEAR; FLOAT read as a DOUBLE, ENUM as its index).
	valueNumber value = iota + 1
	// valueBits: BIT, read as its bytes, written as X'..'.
	valueBits
	// valueBytes: everything else (strings, BLOBs, temporal types in UTC, SET, spatial values),
	// read as its bytes under SET NAMES binary and written as a binary string, which stores the
	// bytes untouched under the target's SET NAMES binary. MariaDB's UUID, INET6 and INET4 are
	// read as CAST(.. AS BINARY), their 16 or 4 bytes: the server reads a binary string of that
	// length back as exactly that value, and their text under SET NAMES binary as bytes (an
	// error, or for an INET6 of 16 characters, another address).
	valueBytes
	// valueJSON: MySQL's JSON, read as its text and written with a utf8mb4 introducer (MySQL
	// refuses JSON from a binary string). MariaDB's JSON is LONGTEXT: valueBytes.
	valueJSON
	// valueEnum: ENUM, read as its index; 0 is the error value a non-strict source stores, which
	// only a non-strict session writes back.
	valueEnum
)

// column is one written column of a copied table.
type column struct {
	name  string
	expr  string // what the source SELECT reads
	value value
}

// table is the SQL of one table's copy.
type table struct {
	name     string
	src, dst string // qualified, quoted names
	cols     []column
	key      []tabledef.Column // nil: no usable key
	// keyAt is where each key column's value is in a row the SELECT reads: the column's own
	// value when that is the key's text, else one of the key expressions after the columns.
	keyAt   []int
	order   string
	head    string // INSERT INTO dst (cols) VALUES
	selects string // the SELECT list: the columns, then the key columns tablekey reads otherwise
	// loadCols is the column list of a LOAD DATA of the table's rows; empty when a column's
	// values cannot go through LOAD DATA exactly as through an INSERT (see loadable).
	loadCols string
	// shared counts the columns the source and target tables share (tabledef.SharedColumns);
	// sourceOnly and targetOnly name the columns after them, on the side that has more: the
	// copy reads the first not, and the target's defaults fill the second.
	shared                 int
	sourceOnly, targetOnly []string
	// versioned says the table's history is copied (see versioned.go); dstAll is then the target
	// table's every row (FOR SYSTEM_TIME ALL), else dst.
	versioned bool
	dstAll    string
}

// ErrColumns means a target table's columns do not fit the source's: the columns the two tables
// share (the first of each, as many as the narrower has) differ by name or order. Either table
// may have more columns after them, as a MySQL or MariaDB replica allows. No retry fixes it:
// errors.Is(err, ErrDefinition) holds for it too.
var ErrColumns error = columnsError{}

type columnsError struct{}

func (columnsError) Error() string        { return "the target table's columns do not match the source's" }
func (columnsError) Is(target error) bool { return target == ErrDefinition }

// columnsDiffer is the ErrColumns of table name: differ says which column (see
// tabledef.SharedColumns).
func columnsDiffer(srcDB, dstDB, name, differ string, src, dst []tabledef.Column) error {
	return fmt.Errorf("%w: %s.%s: %s (source %s.%s: %s; target: %s): make the columns the two tables share match the source's, in the same order (either may have more columns after them), then run vplayer again",
		ErrColumns, dstDB, name, differ, srcDB, name, strings.Join(tabledef.Names(src), ", "), strings.Join(tabledef.Names(dst), ", "))
}

// loadTable describes table name as the copy reads it from srcDB on the source (src, a
// snapshot) and writes it to dstDB on the target (dst). It writes the columns the two tables
// share that the target does not generate: a target table with more columns after them gets its
// defaults there, and the source's columns after them are not read. Its key is the source's row
// identity (tabledef's), among the shared columns. Shared columns that differ are an ErrColumns.
func loadTable(ctx context.Context, src, dst tabledef.Querier, srcDB, dstDB, name string, mysqlJSON bool) (*table, error) {
	sdef, err := tabledef.Load(ctx, src, srcDB, name)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	if len(sdef.Columns) == 0 {
		return nil, fmt.Errorf("table %s.%s does not exist on the source", srcDB, name)
	}
	ddef, err := tabledef.Load(ctx, dst, dstDB, name)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	if len(ddef.Columns) == 0 {
		return nil, fmt.Errorf("table %s.%s does not exist on the target", dstDB, name)
	}
	all, tcols := sdef.Columns, ddef.Columns
	n, differ := tabledef.SharedColumns(all, tcols)
	if differ != "" {
		return nil, columnsDiffer(srcDB, dstDB, name, differ, all, tcols)
	}
	t := &table{name: name, src: sqlq.Ident(srcDB) + "." + sqlq.Ident(name), dst: sqlq.Ident(dstDB) + "." + sqlq.Ident(name), shared: n}
	for i, c := range all[:n] {
		if tcols[i].Generated {
			continue // the target computes it
		}
		t.cols = append(t.cols, newColumn(c, mysqlJSON))
	}
	for _, c := range all[n:] {
		t.sourceOnly = append(t.sourceOnly, c.Name)
	}
	for _, c := range tcols[n:] {
		t.targetOnly = append(t.targetOnly, c.Name)
	}
	// A key with a column the target lacks would not find the target's rows: the next one, or
	// none, is the copy's.
	t.key = sdef.KeyColumns(sdef.Identity(n))
	period, err := addPeriod(ctx, dst, dstDB, t, sdef.Period, ddef.Period)
	if err != nil {
		return nil, err
	}
	all, key := append(all, period...), t.key
	names := make([]string, len(t.cols))
	exprs := make([]string, len(t.cols), len(t.cols)+len(key))
	for i, c := range t.cols {
		names[i], exprs[i] = sqlq.Ident(c.name), c.expr
	}
	t.head = "INSERT INTO " + t.dst + " (" + strings.Join(names, ",") + ") VALUES "
	if loadable(all, t.cols) {
		t.loadCols = strings.Join(names, ",")
	}
	if key != nil {
		order := make([]string, len(key))
		t.keyAt = make([]int, len(key))
		for i, k := range key {
			order[i] = k.Ident()
			t.keyAt[i] = slices.IndexFunc(t.cols, func(c column) bool { return c.name == k.Name && c.keyText(k) })
			if t.keyAt[i] < 0 {
				t.keyAt[i] = len(exprs)
				exprs = append(exprs, tablekey.Expr(k))
			}
		}
		t.order = strings.Join(order, ", ")
	}
	t.selects = strings.Join(exprs, ", ")
	return t, nil
}

// loadable reports whether every written column's values go through LOAD DATA (a tab-separated
// text of them, under CHARACTER SET binary) exactly as through an INSERT's literals: numbers as
// the server prints them, strings, BLOBs, temporal values and MariaDB's UUID, INET6 and INET4 as
// their bytes. BIT and ENUM values (written as X'..' and as an index), MySQL's JSON and spatial
// values take the INSERT.
func loadable(all []tabledef.Column, cols []column) bool {
	types := map[string]string{}
	for _, c := range all {
		types[c.Name] = c.Type
	}
	for _, c := range cols {
		switch types[c.name] {
		case "tinyint", "smallint", "mediumint", "int", "integer", "bigint", "decimal", "numeric", "double", "real", "float", "year",
			"char", "varchar", "binary", "varbinary", "tinytext", "text", "mediumtext", "longtext", "tinyblob", "blob", "mediumblob", "longblob",
			"date", "datetime", "timestamp", "time", "uuid", "inet6", "inet4":
		default:
			return false
		}
		if c.value != valueNumber && c.value != valueBytes {
			return false
		}
	}
	return true
}

// loadSQL is the LOAD DATA of one chunk's rows, read from the driver's reader handler name.
func (t *table) loadSQL(name string) string {
	return "LOAD DATA LOCAL INFILE 'Reader::" + name + "' INTO TABLE " + t.dst +
		" CHARACTER SET binary FIELDS TERMINATED BY '\\t' ESCAPED BY '\\\\' LINES TERMINATED BY '\\n' (" + t.loadCols + ")"
}

// appendLoadRow appends one row as a line of the LOAD DATA text, vals in t.cols' order: fields
// separated by tabs, NULL as \N, the escape character, tab, newline and NUL escaped.
func (t *table) appendLoadRow(b []byte, vals []sql.RawBytes) []byte {
	for i := range t.cols {
		if i > 0 {
			b = append(b, '\t')
		}
		v := vals[i]
		if v == nil {
			b = append(b, '\\', 'N')
			continue
		}
		for len(v) > 0 {
			// The bytes up to the next one to escape go in at once.
			i := 0
			for i < len(v) && loadEscapes[v[i]] == 0 {
				i++
			}
			b = append(b, v[:i]...)
			if i == len(v) {
				break
			}
			b = append(b, '\\', loadEscapes[v[i]])
			v = v[i+1:]
		}
	}
	return append(b, '\n')
}

// loadEscapes maps each byte a LOAD DATA line escapes to the letter that follows the escape
// character; 0 for the others.
var loadEscapes = [256]byte{'\\': '\\', '\t': 't', '\n': 'n', 0: '0'}

// intTypes are the integer column types: their values read as text (CAST AS CHAR) print as
// the driver prints the integers it parses.
var intTypes = []string{"tinyint", "smallint", "mediumint", "int", "integer", "bigint"}

func newColumn(c tabledef.Column, mysqlJSON bool) column {
	out := column{name: c.Name, expr: c.Ident(), value: valueBytes}
	switch c.Type {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint", "year":
		// Read as text: the driver would parse a number column's text into an integer, which
		// costs a parse, an allocation and a print per value, and prints YEAR 0000 as 0, which
		// LOAD DATA reads as the year 2000.
		out.value, out.expr = valueNumber, "CAST("+c.Ident()+" AS CHAR)"
	case "decimal", "numeric", "double", "real":
		out.value = valueNumber
	case "float":
		out.value, out.expr = valueNumber, c.Ident()+"+0e0" // DOUBLE prints every FLOAT exactly; FLOAT's own text does not
	case "enum":
		out.value, out.expr = valueEnum, c.Ident()+"+0"
	case "bit":
		out.value = valueBits
	case "json":
		if mysqlJSON {
			out.value = valueJSON
		}
	case "uuid", "inet6", "inet4":
		out.expr = "CAST(" + c.Ident() + " AS BINARY)"
	}
	return out
}

// keyText reports whether the column's values, as the SELECT reads them, are the text of key
// column k as tablekey reads it (tablekey.Expr), so that the key need not be read a second time.
func (c column) keyText(k tabledef.Column) bool {
	return c.expr == tablekey.Expr(k) || slices.Contains(intTypes, k.Type) && c.expr == "CAST("+k.Ident()+" AS CHAR)"
}

// query is the SELECT of a chunk: the rows above lastpk (nil: from the start) in key order, at
// most limit of them; for a table without a key, every row.
func (t *table) query(lastpk []string, limit int) string {
	q := "SELECT " + t.selects + " FROM " + t.src
	if t.key == nil {
		return q
	}
	if lastpk != nil {
		q += " WHERE " + tablekey.Compare(t.key, lastpk, ">", ">")
	}
	return q + fmt.Sprintf(" ORDER BY %s LIMIT %d", t.order, limit)
}

// scanDest returns what a row of query is scanned into: vals, one per column of the SELECT list
// (t.cols, then the key expressions keyAt points at), and ptrs pointing at each.
func (t *table) scanDest() (vals []sql.RawBytes, ptrs []any) {
	ncols := len(t.cols)
	for _, i := range t.keyAt {
		ncols = max(ncols, i+1)
	}
	vals = make([]sql.RawBytes, ncols)
	ptrs = make([]any, ncols)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	return vals, ptrs
}

// clear is the DELETE that starts a chunk on the target: every row above lastpk (nil: every
// row). Those rows are the binlog's changes applied since the copy began, which the chunk and
// the chunks after it replace with the source's rows.
func (t *table) clear(lastpk []string) string {
	q := "DELETE FROM " + t.dst
	if lastpk != nil && t.key != nil {
		q += " WHERE " + tablekey.Compare(t.key, lastpk, ">", ">")
	}
	return q + t.clearHistory(lastpk)
}

// appendRow appends one row's VALUES tuple, vals in t.cols' order, and reports whether it holds
// an ENUM's error value (see valueEnum).
func (t *table) appendRow(b []byte, vals []sql.RawBytes) ([]byte, bool) {
	lenient := false
	b = append(b, '(')
	for i, c := range t.cols {
		if i > 0 {
			b = append(b, ',')
		}
		v := vals[i]
		if v == nil {
			b = append(b, "NULL"...)
			continue
		}
		switch c.value {
		case valueNumber:
			b = append(b, v...)
		case valueEnum:
			b = append(b, v...)
			lenient = lenient || (len(v) == 1 && v[0] == '0')
		case valueBits:
			b = append(b, "X'"...)
			b = hex.AppendEncode(b, v)
			b = append(b, '\'')
		case valueJSON:
			b = sqlq.AppendBytes(append(b, "_utf8mb4"...), v)
		default:
			b = sqlq.AppendBytes(b, v)
		}
	}
	return append(b, ')'), lenient
}
