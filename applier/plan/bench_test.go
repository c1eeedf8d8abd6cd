package plan

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/vplayer/vplayer/event"
)

// benchTables returns a foldable table (primary key only) and one with a second unique key,
// which does not fold, as the planner benchmark writes them.
func benchTables() (folded, unique *Table) {
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
	runPlan(b, map[*event.Table]*Table{ft: folded, ut: unique}, items, writesets)
}

// runPlan plans items, one fetch, once per iteration on one planner, as the applier does (its
// tables already loaded and checked, and statements handed out at once), and reports the time
// per row change.
func runPlan(b *testing.B, tables map[*event.Table]*Table, items []*event.Event, writesets bool) {
	p := New(Config{Writesets: writesets}, "")
	run := func(steps []Step, err error) {
		if err != nil {
			b.Fatal(err)
		}
		for i := range steps {
			if s := &steps[i]; s.Kind == StepCommit {
				s.Stmts.Add("", "UPDATE position")
				s.Stmts.Add("", "COMMIT")
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, e := range items {
			var t *Table
			if e.Type == event.Rows && p.TakesRows() {
				t = tables[e.Table]
			}
			run(p.Event(e, t))
		}
		run(p.EndFetch())
	}
	rows := 0
	for _, e := range items {
		rows += len(e.Rows)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
}

// sbRow returns a row of sysbench's sbtest table (id INT, k INT, c CHAR(120), pad CHAR(60)) as
// the reader decodes it: c and pad are groups of 11 digits joined by '-'.
func sbRow(r *rand.Rand, id int32) []any {
	digits := func(groups int) string {
		buf := make([]byte, 0, groups*12)
		for g := 0; g < groups; g++ {
			if g > 0 {
				buf = append(buf, '-')
			}
			for i := 0; i < 11; i++ {
				buf = append(buf, byte('0'+r.IntN(10)))
			}
		}
		return string(buf)
	}
	return []any{id, r.Int32N(1 << 20), digits(10), digits(5)}
}

// sbSetup returns the tables of sysbench's sbtest1, by the binlog table its rows events name,
// and that binlog table.
func sbSetup() (map[*event.Table]*Table, *event.Table) {
	t := built(defOf("sbtest", "sbtest1", []Column{
		{name: "id", dataType: "int", notNull: true},
		{name: "k", dataType: "int", notNull: true},
		{name: "c", dataType: "char", notNull: true, collation: "latin1_bin", length: 120},
		{name: "pad", dataType: "char", notNull: true, collation: "latin1_bin", length: 60},
	}, pk("id")))
	bt := &event.Table{Schema: "sbtest", Name: "sbtest1", ColumnCount: 4}
	return map[*event.Table]*Table{bt: t}, bt
}

// BenchmarkPlan_sysbenchWrite plans one fetch of 500 transactions of sysbench's oltp_write_only
// on one table (an index update, a non-index update, a delete and the insert of the same id,
// random ids), all folded, writesets off.
func BenchmarkPlan_sysbenchWrite(b *testing.B) {
	tables, bt := sbSetup()
	r := rand.New(rand.NewPCG(1, 2))
	var items []*event.Event
	for i := 0; i < 500; i++ {
		id := r.Int32N(1000000) + 1
		old := sbRow(r, id)
		k := append([]any(nil), old...)
		k[1] = k[1].(int32) + 1
		c := append([]any(nil), k...)
		c[2] = sbRow(r, id)[2]
		ins := sbRow(r, id)
		rows := func(kind event.RowKind, rs ...event.Row) *event.Event {
			return &event.Event{Type: event.Rows, Table: bt, Kind: kind, Rows: rs, Size: 250}
		}
		items = append(items,
			&event.Event{Type: event.Begin, GTID: fmt.Sprintf("0-1-%d", i+1), Timestamp: 1},
			rows(event.Update, event.Row{Before: old, After: k}),
			rows(event.Update, event.Row{Before: k, After: c}),
			rows(event.Delete, event.Row{Before: c}),
			rows(event.Insert, event.Row{After: ins}),
			&event.Event{Type: event.Commit, Pos: fmt.Sprintf("MariaDB/0-1-%d", i+1), Timestamp: 1},
		)
	}
	runPlan(b, tables, items, false)
}

// BenchmarkPlan_sysbenchInsert plans one fetch of 1000 transactions of sysbench's oltp_insert:
// one row each, ascending ids, all folded into plain INSERTs, writesets off.
func BenchmarkPlan_sysbenchInsert(b *testing.B) {
	tables, bt := sbSetup()
	r := rand.New(rand.NewPCG(1, 2))
	var items []*event.Event
	for i := 0; i < 1000; i++ {
		items = append(items,
			&event.Event{Type: event.Begin, GTID: fmt.Sprintf("0-1-%d", i+1), Timestamp: 1},
			&event.Event{Type: event.Rows, Table: bt, Kind: event.Insert, Rows: []event.Row{{After: sbRow(r, int32(i+1))}}, Size: 220},
			&event.Event{Type: event.Commit, Pos: fmt.Sprintf("MariaDB/0-1-%d", i+1), Timestamp: 1},
		)
	}
	runPlan(b, tables, items, false)
}
