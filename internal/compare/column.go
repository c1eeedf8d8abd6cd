package compare

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/vplayer/vplayer/sqlq"
)

// form is how a column is read so that two values compare equal only when the column holds the
// same value: never a rendering that rounds or converts.
type form int

const (
	// formText is exact text the query computes (decimal digits, every fractional digit of a
	// temporal value), compared byte for byte and shown quoted.
	formText form = iota
	// formHex is HEX() of the stored bytes of a character string, compared as the hex text: the
	// bytes reach the client unconverted by the connection's character set.
	formHex
	// formBytes is the stored bytes of a binary-charset column, read as they are.
	formBytes
	// formFloat is a FLOAT read over the binary protocol as its 4 bytes, compared by bits.
	formFloat
	// formDouble is a DOUBLE read over the binary protocol as its 8 bytes, compared by bits.
	formDouble
)

// column is one compared column: its name and definition on the source, and how it is read.
type column struct {
	name     string
	dataType string // information_schema.COLUMNS.DATA_TYPE
	colType  string // information_schema.COLUMNS.COLUMN_TYPE
	form     form
	expr     string // the SELECT expression that reads it in form
	order    string // the ORDER BY expression: a total order on distinct values
}

// newColumn chooses how the column is read from its DATA_TYPE. A type not listed is an error,
// not a guess: a rendering that rounds would let differences pass.
func newColumn(name, dataType, colType string) (column, error) {
	c := column{name: name, dataType: dataType, colType: colType}
	id := sqlq.Ident(name)
	c.order = id
	switch dataType {
	case "tinyint", "smallint", "mediumint", "int", "bigint",
		// CAST AS CHAR keeps every digit of the scale and every fractional digit of the
		// column's precision; TIMESTAMP is read under time_zone '+00:00' (see read.go).
		"decimal", "year", "date", "datetime", "timestamp", "time",
		"uuid", "inet4", "inet6":
		c.form, c.expr = formText, "CAST("+id+" AS CHAR)"
	case "bit":
		c.form, c.expr = formText, "CAST("+id+"+0 AS CHAR)"
	case "enum", "set":
		// The stored index (a bit set for SET) and the member's text.
		c.form, c.expr = formText, "CONCAT("+id+"+0, ':', HEX("+id+"))"
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext", "json":
		c.form, c.expr = formHex, "HEX("+id+")"
		// Ordered by bytes: two values a collation holds equal must not tie.
		c.order = "CAST(" + id + " AS BINARY)"
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob",
		"geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection":
		c.form, c.expr = formBytes, id
	case "float":
		c.form, c.expr = formFloat, id
	case "double":
		c.form, c.expr = formDouble, id
	default:
		return c, fmt.Errorf("column %s: type %s has no exact form", name, dataType)
	}
	return c, nil
}

// columns returns the columns of schema.table in their order, each with its exact form.
func columns(ctx context.Context, db *sql.DB, schema, table string) ([]column, error) {
	rows, err := db.QueryContext(ctx, "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", schema, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []column
	for rows.Next() {
		var name, dataType, colType string
		if err := rows.Scan(&name, &dataType, &colType); err != nil {
			return nil, err
		}
		c, err := newColumn(name, dataType, colType)
		if err != nil {
			return nil, fmt.Errorf("table %s.%s: %w", schema, table, err)
		}
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("table %s.%s does not exist", schema, table)
	}
	return cols, nil
}

// sameColumns checks that every source column exists on the target with the same COLUMN_TYPE:
// both sides are read with the source's forms, which prove equality only between equal types.
// Columns only the target has are not compared.
func sameColumns(src, dst []column) error {
	byName := make(map[string]column, len(dst))
	for _, c := range dst {
		byName[c.name] = c
	}
	for _, c := range src {
		d, ok := byName[c.name]
		if !ok {
			return fmt.Errorf("column %s is missing on the target", c.name)
		}
		if d.colType != c.colType {
			return fmt.Errorf("column %s is %s on the source, %s on the target", c.name, c.colType, d.colType)
		}
	}
	return nil
}
