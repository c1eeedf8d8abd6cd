// Package tabledef owns what a table is, as a server's information_schema describes it: its
// columns, its unique keys and the one that identifies a row, the period of a system-versioned
// table, its foreign keys, and the kinds of value its column types hold. The types and rules are
// pure (no I/O: a planner takes a Table as input); load.go and fk.go read them over a Querier.
// The applier, the copier and vdiff share it, so that they agree on every table.
package tabledef

import (
	"fmt"
	"strings"

	"github.com/vplayer/vplayer/sqlq"
)

// Column is one column of a table.
type Column struct {
	Name string
	Type string // DATA_TYPE, lower case
	// Unsigned says the column's COLUMN_TYPE is UNSIGNED (integers, DECIMAL, floats).
	Unsigned bool
	NotNull  bool
	// Generated says the server computes the column's values: VIRTUAL, STORED or PERSISTENT,
	// and a system-versioned table's period columns.
	Generated bool
	// Invisible says SELECT * leaves the column out (INVISIBLE: MariaDB, MySQL 8.0.23+).
	Invisible bool
	Charset   string // CHARACTER_SET_NAME, "" for a column that holds no characters
	Collation string // COLLATION_NAME, "" for a column that holds no characters
	// OctetLength is CHARACTER_OCTET_LENGTH, 0 for none: a BINARY(n) value is padded to it.
	OctetLength int
}

// NewColumn describes a nullable, written column from its name, DATA_TYPE (in any case) and
// CHARACTER_SET_NAME.
func NewColumn(name, dataType, charset string) Column {
	return Column{Name: name, Type: strings.ToLower(dataType), Charset: charset}
}

// Ident is the column's quoted name.
func (c Column) Ident() string { return sqlq.Ident(c.Name) }

// Index is one unique key of a table.
type Index struct {
	Name string // "PRIMARY" for the primary key
	// Columns are the key's columns in key order; "" for a key part that is an expression
	// (MySQL's functional key parts).
	Columns []string
	Primary bool
	// Prefix says a column is in the key by a prefix of its value (SUB_PART): values that differ
	// after it collide.
	Prefix bool
}

// Table is a table's definition.
type Table struct {
	Schema, Name string
	// Columns are the columns information_schema lists, in ordinal order: without the hidden
	// period columns of a system-versioned table that names none (see AllColumns).
	Columns []Column
	// Uniques are the unique keys, the primary key first, then by name. A system-versioned
	// table's keys are without the row end InnoDB adds to each of them: among current rows, the
	// rest is unique.
	Uniques []Index
	// Period is a system-versioned table's period; nil for other tables.
	Period *Period
	// Related says a foreign key (the table's or one that references it) or a trigger relates
	// the table to other rows. Load leaves it false: Related reads it.
	Related bool
}

// Quoted is the table's qualified, quoted name.
func (t *Table) Quoted() string { return sqlq.Ident(t.Schema) + "." + sqlq.Ident(t.Name) }

// AllColumns is Columns with a hidden period's columns appended (see Period.Columns).
func (t *Table) AllColumns() []Column { return t.Period.Columns(t.Columns) }

// ColumnIndex returns the index in Columns of the column named name, -1 when there is none.
func (t *Table) ColumnIndex(name string) int {
	for i, c := range t.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// KeyKind says how a table's rows are identified.
type KeyKind uint8

const (
	// KeyNone: no key identifies a row; a row is identified by all its columns.
	KeyNone KeyKind = iota
	// KeyPrimary: the primary key.
	KeyPrimary
	// KeyUnique: a unique key other than the primary key.
	KeyUnique
)

// Identity is the key that identifies a table's rows.
type Identity struct {
	Kind  KeyKind
	Index string // the key's name ("PRIMARY" for the primary key); "" for KeyNone
	// Columns are the key's columns as indexes in the table's Columns, in key order; nil for
	// KeyNone.
	Columns []int
}

// Identity picks the key that identifies a row among the table's unique keys, the primary key
// first: the first whose columns are all among the first n of Columns, NOT NULL and not
// generated. A generated column's value need not be in the binlog's row image, nor is it written;
// a key part that is an expression is no column. n is len(Columns) for every column, or the
// count of columns a source and a target table share (SharedColumns). KeyNone when no key
// qualifies.
func (t *Table) Identity(n int) Identity {
	n = min(n, len(t.Columns))
	for _, ix := range t.Uniques {
		cols := make([]int, 0, len(ix.Columns))
		for _, name := range ix.Columns {
			i := t.ColumnIndex(name)
			if i < 0 || i >= n || !t.Columns[i].NotNull || t.Columns[i].Generated {
				break
			}
			cols = append(cols, i)
		}
		if len(ix.Columns) == 0 || len(cols) != len(ix.Columns) {
			continue
		}
		kind := KeyUnique
		if ix.Primary {
			kind = KeyPrimary
		}
		return Identity{Kind: kind, Index: ix.Name, Columns: cols}
	}
	return Identity{Kind: KeyNone}
}

// KeyColumns returns the columns of id, a key of t, in key order; nil for KeyNone.
func (t *Table) KeyColumns(id Identity) []Column {
	if id.Columns == nil {
		return nil
	}
	out := make([]Column, len(id.Columns))
	for n, i := range id.Columns {
		out[n] = t.Columns[i]
	}
	return out
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

// Names returns the names of cols.
func Names(cols []Column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Name
	}
	return out
}

// TypeFamily groups DATA_TYPEs into the kinds of value the binlog distinguishes; "" for a type
// it does not know (MariaDB's INET6, UUID...).
func TypeFamily(dataType string) string {
	switch dataType {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint":
		return "integer"
	case "float", "double", "real", "double precision":
		return "floating-point"
	case "decimal", "numeric":
		return "decimal"
	case "bit":
		return "bit"
	case "date":
		return "date"
	case "datetime", "timestamp":
		return "date and time"
	case "time":
		return "time"
	case "year":
		return "year"
	case "char", "varchar", "binary", "varbinary", "tinytext", "text", "mediumtext", "longtext",
		"tinyblob", "blob", "mediumblob", "longblob", "enum", "set", "json":
		return "string"
	case "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
		"geometrycollection", "geomcollection":
		return "geometry"
	}
	return ""
}
