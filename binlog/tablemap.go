package binlog

import (
	"fmt"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vplayer/vplayer/event"
)

// What the syncer's parser leaves undecoded: the optional metadata of a table map whose
// definition the translator already has, and the rows of tables the filter leaves out.
//
// go-mysql decodes the optional metadata of every table map event (column names, signedness,
// character sets, primary key: binlog_row_metadata=FULL), and a source logs a table map before
// each statement's rows, though the definition seldom changes: a fifth of the allocations of an
// OLTP catch-up's decoding. The reader's syncer skips that metadata (skipOptionalMeta), and the
// translator decodes it, from the event's own bytes, only for a definition it has not seen
// (tableMeta).

// skipOptionalMeta is the syncer's decoder of a table map's optional metadata: it decodes none.
func skipOptionalMeta([]byte) error { return nil }

// mapTable records the table a table map event gives its table id. It reports false for a table
// the filter leaves out, whose id maps to nil (and, for an online schema change tool's table, is
// noted so that its rows are counted).
func (t *translator) mapTable(ev *replication.BinlogEvent, e *replication.TableMapEvent) (replicated bool, err error) {
	schema, name := string(e.Schema), string(e.Table)
	if !t.filter.Match(schema, name) {
		t.tables[e.TableID] = nil
		if t.filter.online != nil && t.filter.IsOnlineDDLTable(schema, name) {
			t.toolTables[e.TableID] = true
		} else {
			delete(t.toolTables, e.TableID)
		}
		return false, nil
	}
	tbl, err := t.tableOf(ev, e, t.tables[e.TableID])
	if err != nil {
		return false, err
	}
	t.tables[e.TableID] = tbl
	return true, nil
}

// tableOf describes a table map event, reusing prev when the definition is unchanged.
func (t *translator) tableOf(ev *replication.BinlogEvent, e *replication.TableMapEvent, prev *event.Table) (*event.Table, error) {
	if prev != nil && prev.Schema == string(e.Schema) && prev.Name == string(e.Table) && prev.ColumnCount == int(e.ColumnCount) &&
		string(prev.ColumnTypes) == string(e.ColumnType) {
		return prev, nil
	}
	m, err := t.tableMeta(ev, e)
	if err != nil {
		return nil, err
	}
	tbl := &event.Table{
		Schema:      string(e.Schema),
		Name:        string(e.Table),
		ColumnCount: int(e.ColumnCount),
		ColumnTypes: append([]byte(nil), e.ColumnType...),
	}
	if names := m.ColumnNameString(); len(names) == int(e.ColumnCount) {
		tbl.ColumnNames = names
	}
	if u := m.UnsignedMap(); len(u) > 0 {
		tbl.Unsigned = make([]bool, e.ColumnCount)
		for i, unsigned := range u {
			if i >= 0 && i < len(tbl.Unsigned) {
				tbl.Unsigned[i] = unsigned
			}
		}
	}
	return tbl, nil
}

// tableMeta returns the table map e with its optional metadata decoded: e itself when its parser
// decoded it, else the event decoded again from its bytes, whole, by a parser of its own that
// has seen the format description event in force.
func (t *translator) tableMeta(ev *replication.BinlogEvent, e *replication.TableMapEvent) (*replication.TableMapEvent, error) {
	if t.metaFlavor == "" || t.inPayload {
		return e, nil
	}
	if t.format == nil {
		return nil, fmt.Errorf("table map of %s.%s before any format description event", e.Schema, e.Table)
	}
	p := replication.NewBinlogParser()
	p.SetFlavor(t.metaFlavor)
	if _, err := p.Parse(t.format); err != nil {
		return nil, fmt.Errorf("decode the format description event: %w", err)
	}
	whole, err := p.Parse(ev.RawData)
	if err != nil {
		return nil, fmt.Errorf("decode the table map of %s.%s: %w", e.Schema, e.Table, err)
	}
	m, ok := whole.Event.(*replication.TableMapEvent)
	if !ok || m.TableID != e.TableID {
		return nil, fmt.Errorf("decode the table map of %s.%s: got a %T", e.Schema, e.Table, whole.Event)
	}
	return m, nil
}

// decodeRows is the syncer's decoder of rows events: the rows of a table the filter leaves out
// are not decoded, only the event's header, since the translator drops the event. The table map
// before a rows event has been translated when the syncer decodes the rows event: its handler
// runs before the next event is read.
func (t *translator) decodeRows(e *replication.RowsEvent, data []byte) error {
	pos, err := e.DecodeHeader(data)
	if err != nil {
		return err
	}
	if tbl, known := t.tables[e.TableID]; known && tbl == nil {
		return nil
	}
	return e.DecodeData(pos, data)
}
