package copier

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/vplayer/vplayer/tabledef"
)

// System-versioned tables (MariaDB's WITH SYSTEM VERSIONING, by timestamps) are copied with their
// history: every row of the source's snapshot, current and history rows (FOR SYSTEM_TIME ALL),
// their row start and row end included, inserted as they are (system_versioning_insert_history),
// in the order of the key and the row end (among a table's rows, the key is unique only with the
// row end). The target then holds the source's rows at the snapshot's position, history
// included, and the stream versions the rows that change after it at the source's times (see
// the applier).
//
// Such a table is copied whole in one round, while the stream holds (as a group of fk.go): the
// rows the stream writes above a table's last copied key could not be taken back in part, since
// a DELETE of a versioned row keeps it as history, and DELETE HISTORY removes history rows by
// their end, whatever their key. The round's first chunk starts with a DELETE and a DELETE
// HISTORY of every row the stream wrote before (the copy's session needs the DELETE HISTORY
// privilege for that).
//
// A source table versioned while the target's is not is copied as its current rows; a target
// table versioned while the source's is not gets the source's rows, started at the copy's time.

// addPeriod makes t, a table loadTable describes, copy the history of a table versioned on both
// sides: t reads every row of the source's table, writes the row start and row end, and is keyed
// by its key and the row end. sp and dp are the source's and the target's periods (nil: not
// versioned). It returns the period's columns when they are hidden (tabledef.Table.Columns does
// not list them), nil otherwise.
func addPeriod(ctx context.Context, dst tabledef.Querier, dstDB string, t *table, sp, dp *tabledef.Period) ([]tabledef.Column, error) {
	if sp == nil || dp == nil {
		return nil, nil
	}
	if !sp.ByTimestamp() || !dp.ByTimestamp() {
		return nil, fmt.Errorf("%w: %s.%s is versioned by transaction ids, which are each server's own: leave it out of the workflow, or version it by timestamps on both sides",
			ErrDefinition, dstDB, t.name)
	}
	if err := checkInsertHistory(ctx, dst, dstDB, t.name); err != nil {
		return nil, err
	}
	t.versioned = true
	t.src, t.dstAll = sp.AllRows(t.src), dp.AllRows(t.dst)
	for _, pair := range [][2]tabledef.Column{{sp.Start, dp.Start}, {sp.End, dp.End}} {
		c := newColumn(pair[0], false)
		c.name = pair[1].Name // read as the source's column, written as the target's
		t.cols = append(t.cols, c)
	}
	if t.key != nil && !slices.ContainsFunc(t.key, func(c tabledef.Column) bool { return c.Name == sp.End.Name }) {
		t.key = append(t.key, sp.End)
	}
	if sp.Hidden {
		return []tabledef.Column{sp.Start, sp.End}, nil
	}
	return nil, nil
}

// checkInsertHistory checks that the target lets the copy's sessions insert history rows: not
// with secure_timestamp=YES.
func checkInsertHistory(ctx context.Context, dst tabledef.Querier, dstDB, table string) error {
	rows, err := dst.QueryContext(ctx, "SELECT @@secure_timestamp")
	if err != nil {
		return fmt.Errorf("target: read secure_timestamp: %w", err)
	}
	defer rows.Close()
	var v sql.NullString
	if rows.Next() {
		if err := rows.Scan(&v); err != nil {
			return fmt.Errorf("target: read secure_timestamp: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("target: read secure_timestamp: %w", err)
	}
	if strings.EqualFold(v.String, "YES") {
		return fmt.Errorf("%w: %s.%s is system-versioned and the target runs with secure_timestamp=YES, which refuses the insert of its history rows: run the target with secure_timestamp=NO (the default)",
			ErrDefinition, dstDB, table)
	}
	return nil
}

// wholeVersioned makes each of tables that is system-versioned on the target a group copied
// whole in one round (see fk.go), unless it is in one already.
func wholeVersioned(ctx context.Context, dst *sql.DB, dstDB string, o *fkOrder, tables []string) error {
	rows, err := dst.QueryContext(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'SYSTEM VERSIONED'", dstDB)
	if err != nil {
		return fmt.Errorf("target: list the system-versioned tables of %s: %w", dstDB, err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return fmt.Errorf("target: list the system-versioned tables of %s: %w", dstDB, err)
		}
		if slices.Contains(tables, name) && len(o.group[name]) == 0 {
			o.group[name] = []string{name}
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("target: list the system-versioned tables of %s: %w", dstDB, err)
	}
	return nil
}

// clearHistory is what follows the DELETE that starts a versioned table's copy: the history rows
// the DELETE and the stream left.
func (t *table) clearHistory(lastpk []string) string {
	if !t.versioned || lastpk != nil {
		return ""
	}
	return ";DELETE HISTORY FROM " + t.dst
}

// allRows is the FROM clause of every row of the target's table, its history too.
func (t *table) allRows() string {
	if t.dstAll == "" {
		return t.dst
	}
	return t.dstAll
}

// insertHistory is what a chunk of a versioned table sets on its session first: it writes the
// row start and row end as they are.
func (t *table) insertHistory() string {
	if !t.versioned {
		return ""
	}
	return "SET SESSION system_versioning_insert_history = 1;"
}
