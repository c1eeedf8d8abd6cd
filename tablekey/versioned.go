package tablekey

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Period is the system-time period of a MariaDB system-versioned table (WITH SYSTEM VERSIONING):
// its row start and row end columns. A current row ends at the largest TIMESTAMP; a history row
// ended earlier. A plain SELECT reads the current rows, one FROM t FOR SYSTEM_TIME ALL every row.
type Period struct {
	Start, End Column
	// Hidden says the table does not name its period: its columns are row_start and row_end,
	// last, and information_schema does not list them (Columns leaves them out).
	Hidden bool
}

// ReadPeriod returns the period of schema.table when it is system-versioned, nil otherwise (a
// table of another kind, a server without system versioning, a table that does not exist).
func ReadPeriod(ctx context.Context, q Querier, schema, table string) (*Period, error) {
	rows, err := q.QueryContext(ctx, "SELECT TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", schema, table)
	if err != nil {
		return nil, fmt.Errorf("read the table type of %s.%s: %w", schema, table, err)
	}
	var kind string
	if rows.Next() {
		err = rows.Scan(&kind)
	}
	rows.Close()
	if err = errors.Join(err, rows.Err()); err != nil {
		return nil, fmt.Errorf("read the table type of %s.%s: %w", schema, table, err)
	}
	if kind != "SYSTEM VERSIONED" {
		return nil, nil
	}
	rows, err = q.QueryContext(ctx, "SELECT COLUMN_NAME, DATA_TYPE, GENERATION_EXPRESSION FROM information_schema.COLUMNS"+
		" WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND GENERATION_EXPRESSION IN ('ROW START', 'ROW END')", schema, table)
	if err != nil {
		return nil, fmt.Errorf("read the period of %s.%s: %w", schema, table, err)
	}
	defer rows.Close()
	p := &Period{}
	for rows.Next() {
		var name, typ string
		var expr sql.NullString
		if err := rows.Scan(&name, &typ, &expr); err != nil {
			return nil, fmt.Errorf("read the period of %s.%s: %w", schema, table, err)
		}
		c := NewColumn(name, typ, "")
		c.Generated = true
		if expr.String == "ROW START" {
			p.Start = c
		} else {
			p.End = c
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the period of %s.%s: %w", schema, table, err)
	}
	switch {
	case p.Start.Name == "" && p.End.Name == "":
		p.Hidden = true
		p.Start, p.End = NewColumn("row_start", "timestamp", ""), NewColumn("row_end", "timestamp", "")
		p.Start.Generated, p.End.Generated = true, true
	case p.Start.Name == "" || p.End.Name == "":
		return nil, fmt.Errorf("%s.%s is system-versioned, but information_schema lists one column of its period", schema, table)
	}
	return p, nil
}

// ByTimestamp reports whether the table is versioned by timestamps, not by transaction ids: only
// then are its rows' periods the same on another server.
func (p *Period) ByTimestamp() bool { return p.Start.Type == "timestamp" && p.End.Type == "timestamp" }

// Columns returns cols, a table's columns as Columns reads them, with the period's columns
// appended when they are hidden.
func (p *Period) Columns(cols []Column) []Column {
	if p == nil || !p.Hidden {
		return cols
	}
	return append(cols[:len(cols):len(cols)], p.Start, p.End)
}

// AllRows is the FROM clause of every row of the table named from (qualified and quoted): its
// history rows too.
func (p *Period) AllRows(from string) string {
	if p == nil {
		return from
	}
	return from + " FOR SYSTEM_TIME ALL"
}
