package binlog

import (
	"fmt"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vplayer/vplayer/event"
)

// rowsFlagNoForeignKeyChecks is the rows event flag of a source session with foreign_key_checks=0.
const rowsFlagNoForeignKeyChecks = 0x0002

// rows emits the row changes of e, after the transaction's Begin when they are its first. It
// reports false, and passes them over, for a table the filter leaves out (counting the rows of an
// online schema change tool's tables).
func (t *translator) rows(h *replication.EventHeader, e *replication.RowsEvent) (replicated bool, err error) {
	tbl := t.tables[e.TableID]
	if tbl == nil {
		if t.toolTables[e.TableID] && t.skip.stats != nil {
			t.skip.stats.SkippedOnlineDDLRows.Add(1)
		}
		return false, nil
	}
	if !t.inTxn {
		return false, fmt.Errorf("rows event for %s.%s outside a transaction at %s", tbl.Schema, tbl.Name, t.position())
	}
	if !t.begun {
		t.begin(h, "")
	}
	t.emit(rowsOf(h, e, tbl))
	return true, nil
}

// oneRowEvent is a rows event of a single row change and its row, allocated together: most rows
// events of an OLTP load change one row.
type oneRowEvent struct {
	e   event.Event
	row [1]event.Row
}

// rowsOf returns the Rows event of go-mysql's rows event e on table tbl. Its rows are e's row
// images themselves, not copies; only the column bitmaps of a partial image are copied.
func rowsOf(h *replication.EventHeader, e *replication.RowsEvent, tbl *event.Table) *event.Event {
	n, kind := len(e.Rows), e.Type()
	if kind == replication.EnumRowsEventTypeUpdate {
		n /= 2
	}
	var out *event.Event
	switch {
	case kind == replication.EnumRowsEventTypeUnknown:
		out = &event.Event{} // no kind, no rows
	case n == 1:
		one := &oneRowEvent{}
		one.e.Rows = one.row[:]
		out = &one.e
	default:
		out = &event.Event{Rows: make([]event.Row, n)}
	}
	out.Type, out.Table, out.Timestamp, out.Size = event.Rows, tbl, int64(h.Timestamp), int(h.EventSize)
	out.NoForeignKeyChecks = e.Flags&rowsFlagNoForeignKeyChecks != 0
	first, second := imageColumns(e.ColumnBitmap1, tbl.ColumnCount), imageColumns(e.ColumnBitmap2, tbl.ColumnCount)
	switch kind {
	case replication.EnumRowsEventTypeInsert:
		out.AfterCols = first
		out.Kind = event.Insert
		for i, r := range e.Rows {
			out.Rows[i].After = r
		}
	case replication.EnumRowsEventTypeDelete:
		out.Kind = event.Delete
		out.BeforeCols = first
		for i, r := range e.Rows {
			out.Rows[i].Before = r
		}
	case replication.EnumRowsEventTypeUpdate:
		out.Kind = event.Update
		out.BeforeCols, out.AfterCols = first, second
		for i := range out.Rows {
			out.Rows[i].Before, out.Rows[i].After = e.Rows[2*i], e.Rows[2*i+1]
		}
	}
	return out
}

// imageColumns returns the columns a rows event's image carries, bitmap, as event.Columns: nil
// when it carries all n columns, which every source with binlog_row_image=FULL logs, else a copy
// (the bitmap points into the event's buffer).
func imageColumns(bitmap []byte, n int) event.Columns {
	full := true
	for i := 0; i < n; i++ {
		if i>>3 >= len(bitmap) || bitmap[i>>3]&(1<<(uint(i)&7)) == 0 {
			full = false
			break
		}
	}
	if full {
		return nil
	}
	out := make(event.Columns, (n+7)/8)
	copy(out, bitmap)
	return out
}
