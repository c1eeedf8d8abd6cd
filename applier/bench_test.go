package applier

import (
	"fmt"
	"testing"

	"github.com/vplayer/vplayer/event"
)

// benchTables returns a foldable table (primary key only) and one with a second unique key,
// which does not fold, as the planner benchmark writes them.
func benchTables() (folded, unique *table) {
	folded = foldTestTable()
	folded.hasEnum = false
	unique = foldTestTable()
	unique.name, unique.quoted = "u", "`s`.`u`"
	unique.insertHead = []byte("INSERT INTO `s`.`u` (`id`,`e`,`v`) VALUES ")
	unique.insertShape, unique.updateShape, unique.deleteShape = "INSERT `s`.`u`", "UPDATE `s`.`u`", "DELETE `s`.`u`"
	unique.foldable, unique.hasEnum = false, false
	return folded, unique
}

// benchFetch is one fetch of n source transactions, each an insert and an update of the folded
// table and an update of the unique one, like sysbench's write mix.
func benchFetch(n int) (items []*event.Event, ft, ut *event.Table) {
	ft = &event.Table{Schema: "s", Name: "t", ColumnCount: 3}
	ut = &event.Table{Schema: "s", Name: "u", ColumnCount: 3}
	for i := 0; i < n; i++ {
		id := int32(i)
		items = append(items,
			&event.Event{Type: event.Begin, GTID: fmt.Sprintf("0-1-%d", i+1), Timestamp: 1},
			&event.Event{Type: event.Rows, Table: ft, Kind: event.Insert, Rows: []event.Row{{After: []any{id, int64(1), "inserted row"}}}, Size: 60},
			&event.Event{Type: event.Rows, Table: ft, Kind: event.Update, Rows: []event.Row{{Before: []any{id + 100000, int64(1), "a"}, After: []any{id + 100000, int64(2), "b"}}}, Size: 80},
			&event.Event{Type: event.Rows, Table: ut, Kind: event.Update, Rows: []event.Row{{Before: []any{id, int64(1), "a"}, After: []any{id, int64(2), "b"}}}, Size: 80},
			&event.Event{Type: event.Commit, Pos: fmt.Sprintf("MariaDB/0-1-%d", i+1), Timestamp: 1},
		)
	}
	return items, ft, ut
}

// BenchmarkPlan measures building the SQL of one fetch of 200 transactions, without sending it.
func BenchmarkPlan(b *testing.B) {
	items, ft, ut := benchFetch(200)
	folded, unique := benchTables()
	a := New(Config{})
	a.tables.checked[ft], a.tables.checked[ut] = folded, unique
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		for _, e := range items {
			switch e.Type {
			case event.Begin:
				a.gtid = e.GTID
				a.openTx()
			case event.Rows:
				if err := a.addRows(ctx, e); err != nil {
					b.Fatal(err)
				}
			case event.Commit:
				a.pos, a.txTime = e.Pos, e.Timestamp
				a.commits++
			}
		}
		if err := a.flushPending(); err != nil {
			b.Fatal(err)
		}
		a.b.add("", "UPDATE position")
		a.b.add("", "COMMIT")
		a.b.reset()
		a.txOpen, a.commits, a.rows = false, 0, 0
	}
}
