package tabledef

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/vplayer/vplayer/sqlq"
)

// Querier runs queries: a *sql.DB, a *sql.Conn (one holding a snapshot transaction), a *sql.Tx.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Load reads the definition of schema.name: its columns, unique keys and period. A table that
// does not exist has no Columns (and nothing else is read). Related is left false (see Related).
func Load(ctx context.Context, q Querier, schema, name string) (Table, error) {
	t := Table{Schema: schema, Name: name}
	var err error
	if t.Columns, err = loadColumns(ctx, q, schema, name); err != nil || len(t.Columns) == 0 {
		return t, err
	}
	if t.Uniques, err = loadUniques(ctx, q, schema, name); err != nil {
		return t, err
	}
	if err := loadPeriod(ctx, q, &t); err != nil {
		return t, err
	}
	return t, nil
}

// loadColumns reads the columns of schema.name in ordinal order; none when the table does not
// exist.
func loadColumns(ctx context.Context, q Querier, schema, name string) ([]Column, error) {
	rows, err := q.QueryContext(ctx, `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, EXTRA, IS_NULLABLE, COALESCE(CHARACTER_OCTET_LENGTH, 0),
 COALESCE(CHARACTER_SET_NAME, ''), COALESCE(COLLATION_NAME, '')
FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, schema, name)
	if err != nil {
		return nil, fmt.Errorf("read the columns of %s.%s: %w", schema, name, err)
	}
	defer rows.Close()
	var out []Column
	for rows.Next() {
		var c Column
		var colType, extra, nullable string
		if err := rows.Scan(&c.Name, &c.Type, &colType, &extra, &nullable, &c.OctetLength, &c.Charset, &c.Collation); err != nil {
			return nil, fmt.Errorf("read the columns of %s.%s: %w", schema, name, err)
		}
		c.Type = strings.ToLower(c.Type)
		c.Unsigned = strings.Contains(strings.ToLower(colType), "unsigned")
		c.NotNull = nullable == "NO"
		c.Generated, c.Invisible = extraFlags(extra)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the columns of %s.%s: %w", schema, name, err)
	}
	return out, nil
}

// extraFlags reads a column's information_schema EXTRA: whether it is generated (VIRTUAL,
// STORED or PERSISTENT; MySQL's DEFAULT_GENERATED is a default, not a generated column) and
// invisible.
func extraFlags(extra string) (generated, invisible bool) {
	extra = strings.ToUpper(extra)
	generated = strings.Contains(extra, "VIRTUAL") || strings.Contains(extra, "STORED") || strings.Contains(extra, "PERSISTENT")
	return generated, strings.Contains(extra, "INVISIBLE")
}

// loadUniques reads the unique keys of schema.name, the primary key first, then by name.
func loadUniques(ctx context.Context, q Querier, schema, name string) ([]Index, error) {
	rows, err := q.QueryContext(ctx, `SELECT INDEX_NAME, COLUMN_NAME, SUB_PART IS NOT NULL
FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND NON_UNIQUE = 0
ORDER BY INDEX_NAME = 'PRIMARY' DESC, INDEX_NAME, SEQ_IN_INDEX`, schema, name)
	if err != nil {
		return nil, fmt.Errorf("read the keys of %s.%s: %w", schema, name, err)
	}
	defer rows.Close()
	var out []Index
	for rows.Next() {
		var ix string
		var col sql.NullString // NULL for a key part that is an expression
		var prefix bool
		if err := rows.Scan(&ix, &col, &prefix); err != nil {
			return nil, fmt.Errorf("read the keys of %s.%s: %w", schema, name, err)
		}
		if len(out) == 0 || out[len(out)-1].Name != ix {
			out = append(out, Index{Name: ix, Primary: ix == "PRIMARY"})
		}
		last := &out[len(out)-1]
		last.Columns = append(last.Columns, col.String)
		last.Prefix = last.Prefix || prefix
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the keys of %s.%s: %w", schema, name, err)
	}
	return out, nil
}

// Versioned reports whether schema.name is a system-versioned table (MariaDB's WITH SYSTEM
// VERSIONING); false for a table of another kind, one that does not exist, or a server without
// system versioning.
func Versioned(ctx context.Context, q Querier, schema, name string) (bool, error) {
	rows, err := q.QueryContext(ctx, "SELECT TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", schema, name)
	if err != nil {
		return false, fmt.Errorf("read the table type of %s.%s: %w", sqlq.Ident(schema), sqlq.Ident(name), err)
	}
	var kind string
	if rows.Next() {
		err = rows.Scan(&kind)
	}
	rows.Close()
	if err = errors.Join(err, rows.Err()); err != nil {
		return false, fmt.Errorf("read the table type of %s.%s: %w", sqlq.Ident(schema), sqlq.Ident(name), err)
	}
	return kind == "SYSTEM VERSIONED", nil
}

// loadPeriod sets t's period when it is system-versioned (see SetPeriod); nothing for a table of
// another kind or a server without system versioning.
func loadPeriod(ctx context.Context, q Querier, t *Table) error {
	if versioned, err := Versioned(ctx, q, t.Schema, t.Name); err != nil || !versioned {
		return err
	}
	rows, err := q.QueryContext(ctx, `SELECT COLUMN_NAME, GENERATION_EXPRESSION FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND GENERATION_EXPRESSION IN ('ROW START', 'ROW END')`, t.Schema, t.Name)
	if err != nil {
		return fmt.Errorf("read the period of %s: %w", t.Quoted(), err)
	}
	defer rows.Close()
	var start, end string
	for rows.Next() {
		var col string
		var expr sql.NullString
		if err := rows.Scan(&col, &expr); err != nil {
			return fmt.Errorf("read the period of %s: %w", t.Quoted(), err)
		}
		if expr.String == "ROW START" {
			start = col
		} else {
			end = col
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the period of %s: %w", t.Quoted(), err)
	}
	return t.SetPeriod(start, end)
}

// Related reports whether schema.name has a foreign key, is referenced by one, or has a trigger
// (Table.Related).
func Related(ctx context.Context, q Querier, schema, name string) (bool, error) {
	rows, err := q.QueryContext(ctx, `SELECT
 (SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS
  WHERE (CONSTRAINT_SCHEMA = ? AND TABLE_NAME = ?) OR (UNIQUE_CONSTRAINT_SCHEMA = ? AND REFERENCED_TABLE_NAME = ?))
 + (SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = ? AND EVENT_OBJECT_TABLE = ?)`,
		schema, name, schema, name, schema, name)
	if err != nil {
		return false, fmt.Errorf("read foreign keys and triggers of %s.%s: %w", schema, name, err)
	}
	defer rows.Close()
	var n int
	if rows.Next() {
		err = rows.Scan(&n)
	}
	if err = errors.Join(err, rows.Err()); err != nil {
		return false, fmt.Errorf("read foreign keys and triggers of %s.%s: %w", schema, name, err)
	}
	return n > 0, nil
}

// BaseTables lists the base tables of schema db that match, by name, in name order: MariaDB's
// system-versioned tables too, which information_schema does not call base tables.
func BaseTables(ctx context.Context, q Querier, db string, match func(table string) bool) ([]string, error) {
	rows, err := q.QueryContext(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') ORDER BY TABLE_NAME", db)
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
