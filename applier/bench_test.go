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

// BenchmarkPlan measures planning one fetch of 200 transactions, without sending it: what the
// applier spends besides the round trips. Writesets off, as the applier plans.
func BenchmarkPlan(b *testing.B) { benchmarkPlan(b, false) }

// BenchmarkPlan_writesets is BenchmarkPlan with the writesets computed.
func BenchmarkPlan_writesets(b *testing.B) { benchmarkPlan(b, true) }

func benchmarkPlan(b *testing.B, writesets bool) {
	items, ft, ut := benchFetch(200)
	folded, unique := benchTables()
	folded.uniques = []uniqueKey{{name: "PRIMARY", cols: []int{0}, exact: true}}
	unique.uniques = []uniqueKey{{name: "PRIMARY", cols: []int{0}, exact: true}, {name: "v", cols: []int{2}, exact: true}}
	a := New(Config{})
	a.tables.checked[ft], a.tables.checked[ut] = folded, unique
	p := newPlanner(planConfig{maxBatch: a.maxBatch, writesets: writesets}, "")
	ctx := b.Context()
	run := func(steps []step, err error) {
		if err != nil {
			b.Fatal(err)
		}
		for i := range steps {
			if s := &steps[i]; s.kind == stepCommit {
				s.stmts.add("", "UPDATE position")
				s.stmts.add("", "COMMIT")
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, e := range items {
			var t *table
			if e.Type == event.Rows && p.TakesRows() {
				var err error
				if t, err = a.tables.get(ctx, e.Table); err != nil {
					b.Fatal(err)
				}
			}
			run(p.Event(e, t))
		}
		run(p.EndFetch())
	}
}
