package tabledef

import (
	"errors"
	"fmt"
	"slices"
)

// ErrPeriod means information_schema lists one column of a system-versioned table's period but
// not the other.
var ErrPeriod = errors.New("a system-versioned table's period has one column listed")

// Period is the system-time period of a MariaDB system-versioned table (WITH SYSTEM VERSIONING):
// its row start and row end columns, both generated. A current row ends at the largest
// TIMESTAMP; a history row ended earlier. A plain SELECT reads the current rows, one FROM t FOR
// SYSTEM_TIME ALL every row.
type Period struct {
	Start, End Column
	// Hidden says the table does not name its period: its columns are row_start and row_end,
	// last, and information_schema does not list them (Table.Columns leaves them out).
	Hidden bool
}

// ByTimestamp reports whether the table is versioned by timestamps, not by transaction ids: only
// then are its rows' periods the same on another server.
func (p *Period) ByTimestamp() bool { return p.Start.Type == "timestamp" && p.End.Type == "timestamp" }

// Columns returns cols, a table's columns as information_schema lists them, with the period's
// columns appended when they are hidden; cols itself when p is nil or not hidden.
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

// SetPeriod makes t, whose columns and unique keys are read, system-versioned with the period
// whose row start and row end columns are named start and end ("" for both: the hidden
// row_start and row_end). The period's columns are generated, and the row end is dropped from
// the end of every unique key, where InnoDB adds it.
func (t *Table) SetPeriod(start, end string) error {
	p := &Period{}
	switch {
	case start == "" && end == "":
		p.Hidden = true
		p.Start, p.End = NewColumn("row_start", "timestamp", ""), NewColumn("row_end", "timestamp", "")
		p.Start.NotNull, p.End.NotNull = true, true
		p.Start.Generated, p.End.Generated = true, true
	default:
		si, ei := t.ColumnIndex(start), t.ColumnIndex(end)
		if start == "" || end == "" || si < 0 || ei < 0 {
			return fmt.Errorf("%w: %s (row start %q, row end %q)", ErrPeriod, t.Quoted(), start, end)
		}
		t.Columns[si].Generated, t.Columns[ei].Generated = true, true
		p.Start, p.End = t.Columns[si], t.Columns[ei]
	}
	for k := range t.Uniques {
		ix := &t.Uniques[k]
		if n := len(ix.Columns); n > 1 && ix.Columns[n-1] == p.End.Name {
			ix.Columns = slices.Clip(ix.Columns[:n-1])
		}
	}
	t.Period = p
	return nil
}
