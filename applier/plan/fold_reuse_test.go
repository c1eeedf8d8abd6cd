package plan

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/vplayer/vplayer/event"
)

// TestFold_reuse: a fold reused from batch to batch writes what a new fold writes for each, in
// both exec modes, and the checks of a batch already handed out keep their keys while the fold
// goes on (an executor may hold a batch for several more). The batches change keys of a small
// range of two tables at random (inserts of absent keys, updates that keep or move keys,
// deletes), one of them past keepFold keys of a table, so that the fold drops its maps once.
func TestFold_reuse(t *testing.T) {
	t1, t2 := foldTestTable(), foldTestTable()
	t2.name, t2.quoted = "u", "`s`.`u`"
	t2.insertHead = []byte("INSERT INTO `s`.`u` (`id`,`e`,`v`) VALUES ")
	t2.insertShape, t2.updateShape, t2.deleteShape = "INSERT `s`.`u`", "UPDATE `s`.`u`", "DELETE `s`.`u`"
	type change struct {
		t    *Table
		kind event.RowKind
		row  event.Row
	}
	r := rand.New(rand.NewPCG(3, 4))
	present := map[*Table]map[int32]bool{t1: {}, t2: {}}
	// changes returns n random changes that a source could have written in sequence.
	changes := func(n int, keys int32) []change {
		var cs []change
		for len(cs) < n {
			tbl := []*Table{t1, t2}[r.IntN(2)]
			id := r.Int32N(keys)
			v := fmt.Sprint(r.IntN(1000))
			switch p := present[tbl]; {
			case !p[id]:
				p[id] = true
				cs = append(cs, change{tbl, event.Insert, event.Row{After: row(id, v)}})
			case r.IntN(3) == 0:
				delete(p, id)
				cs = append(cs, change{tbl, event.Delete, event.Row{Before: row(id, "old")}})
			default:
				to := id
				if r.IntN(2) == 0 {
					to = r.Int32N(keys)
				}
				if to != id && p[to] {
					to = id
				}
				delete(p, id)
				p[to] = true
				cs = append(cs, change{tbl, event.Update, event.Row{Before: row(id, "old"), After: row(to, v)}})
			}
		}
		return cs
	}
	fill := func(f *fold, cs []change) {
		t.Helper()
		for _, c := range cs {
			if err := f.add(c.t, c.kind, []event.Row{c.row}, 1, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, mode := range []string{ExecModeStrict, ExecModeIdempotent} {
		t.Run(mode, func(t *testing.T) {
			var reused fold
			var held, want []*Batch
			for i, n := range []int{1, 5, 40, 3, 3 * keepFold, 7, 2, 300, 1} {
				cs := changes(n, int32(max(2*n, 16)))
				var fresh fold
				fill(&fresh, cs)
				fill(&reused, cs)
				wb, gb := new(Batch), new(Batch)
				if err := fresh.appendTo(wb, mode, "g"); err != nil {
					t.Fatal(err)
				}
				if err := reused.appendTo(gb, mode, "g"); err != nil {
					t.Fatal(err)
				}
				if got, want := string(gb.buf), string(wb.buf); got != want {
					t.Fatalf("batch %d (%d changes): the reused fold wrote\n  %.300s\nwant\n  %.300s", i, n, got, want)
				}
				held, want = append(held, gb), append(want, wb)
			}
			for i := range held {
				if got, want := held[i].checks, want[i].checks; !reflect.DeepEqual(got, want) {
					t.Errorf("batch %d: its checks changed while the fold went on:\n  %v\nwant\n  %v", i, got, want)
				}
			}
		})
	}
}
