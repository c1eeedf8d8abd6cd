package plan

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/vplayer/vplayer/event"
	"github.com/vplayer/vplayer/tabledef"
)

// wsTable builds a table of schema s from its columns and unique keys (the primary key, named
// PRIMARY, first).
func wsTable(name string, cols []Column, keys ...tabledef.Index) *Table {
	return built(defOf("s", name, cols, keys...))
}

// defOf is the definition of schema.name with columns cols, written as the planner's columns,
// and unique keys keys.
func defOf(schema, name string, cols []Column, keys ...tabledef.Index) tabledef.Table {
	d := tabledef.Table{Schema: schema, Name: name, Uniques: keys}
	for _, c := range cols {
		d.Columns = append(d.Columns, tabledef.Column{Name: c.name, Type: c.dataType, Unsigned: c.unsigned, NotNull: c.notNull,
			Generated: c.generated, Collation: c.collation, OctetLength: c.length})
	}
	return d
}

// built is buildTable of a definition it takes.
func built(d tabledef.Table) *Table {
	t, err := BuildTable(d)
	if err != nil {
		panic(err)
	}
	return t
}

func pk(cols ...string) tabledef.Index {
	return tabledef.Index{Name: "PRIMARY", Columns: cols, Primary: true}
}

func uk(name string, cols ...string) tabledef.Index { return tabledef.Index{Name: name, Columns: cols} }

func intCol(name string, notNull bool) Column {
	return Column{name: name, dataType: "int", notNull: notNull}
}

func strCol(name, collation string, notNull bool) Column {
	return Column{name: name, dataType: "varchar", collation: collation, notNull: notNull}
}

// wsOf returns the writeset of one rows event of kind on t.
func wsOf(t *Table, kind event.RowKind, rows ...event.Row) *Writeset {
	var w Writeset
	w.AddRows(t, rows)
	return &w
}

func ins(vals ...any) event.Row         { return event.Row{After: vals} }
func del(vals ...any) event.Row         { return event.Row{Before: vals} }
func upd(before, after []any) event.Row { return event.Row{Before: before, After: after} }

func vals(v ...any) []any { return v }

// keysOf renders w's keys as table index value, for comparing.
func keysOf(w *Writeset) []string {
	var out []string
	for _, k := range w.keys {
		out = append(out, k.table+" "+k.index+" "+k.value)
	}
	return out
}

func wantKeys(t *testing.T, w *Writeset, want ...string) {
	t.Helper()
	if got := keysOf(w); !slices.Equal(got, want) {
		t.Errorf("writeset keys\n  %q\nwant\n  %q", got, want)
	}
}

func wantOverlap(t *testing.T, what string, a, b *Writeset, want bool) {
	t.Helper()
	if got := a.overlaps(b); got != want {
		t.Errorf("%s: overlaps = %v, want %v", what, got, want)
	}
	if got := b.overlaps(a); got != want {
		t.Errorf("%s, the other way: overlaps = %v, want %v", what, got, want)
	}
}

// TestWriteset_compositeKey: a composite key is one key, its columns' values as a tuple: two
// changes conflict only when every column is equal.
func TestWriteset_compositeKey(t *testing.T) {
	tbl := wsTable("lines", []Column{intCol("order_id", true), intCol("line", true), intCol("qty", false)}, pk("order_id", "line"))
	a := wsOf(tbl, event.Insert, ins(int32(1), int32(2), int32(5)))
	wantKeys(t, a, "`s`.`lines` PRIMARY (1,2)")
	wantOverlap(t, "same order and line", a, wsOf(tbl, event.Delete, del(int32(1), int32(2), nil)), true)
	wantOverlap(t, "same order, other line", a, wsOf(tbl, event.Insert, ins(int32(1), int32(3), int32(5))), false)
	wantOverlap(t, "other order, same line", a, wsOf(tbl, event.Insert, ins(int32(2), int32(2), int32(5))), false)
}

// TestWriteset_uniqueKeyChange: an update holds every unique key's values in both images, so a
// batch that takes the value it gave up, or the value it took, conflicts with it.
func TestWriteset_uniqueKeyChange(t *testing.T) {
	tbl := wsTable("users", []Column{intCol("id", true), {name: "email", dataType: "varbinary", collation: "binary", notNull: true}},
		pk("id"), uk("email", "email"))
	a := wsOf(tbl, event.Update, upd(vals(int32(1), "a@x"), vals(int32(1), "b@x")))
	wantKeys(t, a, "`s`.`users` PRIMARY 1", "`s`.`users` email 'a@x'", "`s`.`users` email 'b@x'")
	wantOverlap(t, "another row takes the old value", a, wsOf(tbl, event.Insert, ins(int32(2), "a@x")), true)
	wantOverlap(t, "another row gives up the new value", a, wsOf(tbl, event.Delete, del(int32(3), "b@x")), true)
	wantOverlap(t, "another row, other values", a, wsOf(tbl, event.Insert, ins(int32(4), "c@x")), false)
}

// TestWriteset_keyMove: an update that changes the primary key touches the old key and the new.
func TestWriteset_keyMove(t *testing.T) {
	tbl := wsTable("t", []Column{intCol("id", true), intCol("v", false)}, pk("id"))
	if !tbl.foldable {
		t.Fatal("a table with only a primary key should fold")
	}
	a := wsOf(tbl, event.Update, upd(vals(int32(1), int32(7)), vals(int32(10), int32(7))))
	wantKeys(t, a, "`s`.`t` PRIMARY 1", "`s`.`t` PRIMARY 10")
	wantOverlap(t, "the old key", a, wsOf(tbl, event.Insert, ins(int32(1), int32(0))), true)
	wantOverlap(t, "the new key", a, wsOf(tbl, event.Delete, del(int32(10), int32(0))), true)
	wantOverlap(t, "another key", a, wsOf(tbl, event.Delete, del(int32(2), int32(0))), false)
	// An update in place touches its key once.
	wantKeys(t, wsOf(tbl, event.Update, upd(vals(int32(3), int32(1)), vals(int32(3), int32(2)))), "`s`.`t` PRIMARY 3")
}

// TestWriteset_keyless: a table without a primary key or a unique key over NOT NULL columns is
// the whole table: it conflicts with every batch that touches the table, and with no other.
func TestWriteset_keyless(t *testing.T) {
	log := wsTable("log", []Column{strCol("msg", "utf8mb4_general_ci", false), intCol("ref", false)}, uk("ref", "ref"))
	if log.keyKind != keyAll {
		t.Fatalf("key kind %d, want keyAll", log.keyKind)
	}
	a := wsOf(log, event.Insert, ins("a", int32(1)))
	wantKeys(t, a, "`s`.`log`  ")
	wantOverlap(t, "another row of the table", a, wsOf(log, event.Delete, del("b", nil)), true)
	other := wsTable("t", []Column{intCol("id", true)}, pk("id"))
	wantOverlap(t, "another table", a, wsOf(other, event.Insert, ins(int32(1))), false)
	// A whole table overlaps the keys of its table however they are recorded.
	whole := &Writeset{keys: []wkey{{table: "`s`.`t`"}}}
	wantOverlap(t, "a whole table and a key of it", whole, wsOf(other, event.Insert, ins(int32(1))), true)
}

// TestWriteset_nullInUniqueKey: a unique key never conflicts on NULL (the server lets several
// rows hold it), so an image with a NULL in a key leaves that key out.
func TestWriteset_nullInUniqueKey(t *testing.T) {
	tbl := wsTable("users", []Column{intCol("id", true), intCol("code", false), intCol("zone", false)},
		pk("id"), uk("code", "code"), uk("zone_code", "zone", "code"))
	a := wsOf(tbl, event.Insert, ins(int32(1), nil, int32(5)))
	wantKeys(t, a, "`s`.`users` PRIMARY 1")
	wantOverlap(t, "two NULL codes", a, wsOf(tbl, event.Insert, ins(int32(2), nil, int32(5))), false)
	b := wsOf(tbl, event.Insert, ins(int32(3), int32(9), int32(5)))
	wantKeys(t, b, "`s`.`users` PRIMARY 3", "`s`.`users` code 9", "`s`.`users` zone_code (5,9)")
	wantOverlap(t, "the same code", b, wsOf(tbl, event.Update, upd(vals(int32(4), int32(8), nil), vals(int32(4), int32(9), nil))), true)
}

// TestWriteset_collation: values that compare under a collation ('a' = 'A' = 'a ' in a
// case-insensitive PAD SPACE one) are not normalised: the key is recorded as every value of it,
// which conflicts with every change of the table that has a value in that key. Binary strings,
// and ENUM and SET (written as numbers), are compared by their literals. Floats (0 = -0),
// generated columns and a key over a prefix of a column are treated as collated.
func TestWriteset_collation(t *testing.T) {
	tags := wsTable("tags", []Column{intCol("id", true), strCol("label", "utf8mb4_general_ci", false)}, pk("id"), uk("label", "label"))
	a := wsOf(tags, event.Insert, ins(int32(1), "Red"))
	wantKeys(t, a, "`s`.`tags` PRIMARY 1", "`s`.`tags` label ")
	wantOverlap(t, "the same label in another case", a, wsOf(tags, event.Insert, ins(int32(2), "red")), true)
	wantOverlap(t, "another label", a, wsOf(tags, event.Insert, ins(int32(3), "blue")), true)
	wantOverlap(t, "a NULL label", a, wsOf(tags, event.Insert, ins(int32(4), nil)), false)

	bin := wsTable("b", []Column{{name: "k", dataType: "varbinary", collation: "binary", notNull: true}}, pk("k"))
	wantOverlap(t, "binary strings in another case", wsOf(bin, event.Insert, ins("Red")), wsOf(bin, event.Insert, ins("red")), false)
	for _, c := range []Column{
		{name: "k", dataType: "char", collation: "latin1_bin", notNull: true}, // PAD SPACE: 'a' = 'a '
		{name: "k", dataType: "double", notNull: true},
		{name: "k", dataType: "int", generated: true, notNull: true},
	} {
		tbl := wsTable("c", []Column{intCol("id", true), c}, pk("id"), uk("k", "k"))
		if got := tbl.uniques[1].exact; got {
			t.Errorf("a unique key over a %s column (collation %q, generated %v) is exact", c.dataType, c.collation, c.generated)
		}
	}
	// A unique key over a prefix of a column: values that differ after the prefix collide.
	prefixed := wsTable("p", []Column{intCol("id", true), {name: "k", dataType: "varbinary", collation: "binary", notNull: true}},
		pk("id"), tabledef.Index{Name: "k", Columns: []string{"k"}, Prefix: true})
	wantKeys(t, wsOf(prefixed, event.Insert, ins(int32(1), "abcX")), "`s`.`p` PRIMARY 1", "`s`.`p` k ")
	enum := wsTable("e", []Column{intCol("id", true), {name: "k", dataType: "enum", collation: "utf8mb4_general_ci", notNull: true}}, pk("id"), uk("k", "k"))
	wantKeys(t, wsOf(enum, event.Insert, ins(int32(1), int64(2))), "`s`.`e` PRIMARY 1", "`s`.`e` k 2")
}

// TestWriteset_barrier: a DDL or an XA transaction overlaps every batch, even an empty one.
func TestWriteset_barrier(t *testing.T) {
	wantOverlap(t, "a barrier and an empty writeset", &Writeset{barrier: true}, &Writeset{}, true)
	wantOverlap(t, "two empty writesets", &Writeset{}, &Writeset{}, false)
}

// TestPlanner_writesetsOff: without writesets the planner computes none, and the steps carry none.
func TestPlanner_writesetsOff(t *testing.T) {
	tbl := wsTable("t", []Column{intCol("id", true), intCol("v", false)}, pk("id"))
	for _, on := range []bool{false, true} {
		p := New(Config{MaxBatch: 1 << 20, Writesets: on}, "")
		bt := &event.Table{Schema: "s", Name: "t", ColumnCount: 2}
		for _, e := range []*event.Event{
			{Type: event.Begin},
			{Type: event.Rows, Table: bt, Kind: event.Insert, Rows: []event.Row{ins(int32(1), int32(1))}},
			{Type: event.Commit, Pos: "p1"},
		} {
			if _, err := p.Event(e, tbl); err != nil {
				t.Fatal(err)
			}
		}
		steps, err := p.EndFetch()
		if err != nil {
			t.Fatal(err)
		}
		if len(steps) != 1 || steps[0].Kind != StepCommit {
			t.Fatalf("steps %v, want one commit", steps)
		}
		if got := steps[0].Writeset != nil; got != on {
			t.Errorf("writesets %v: the commit carries a writeset: %v", on, got)
		}
		if !on && (p.ws.keys != nil || p.ws.seen != nil) {
			t.Errorf("writesets off: the planner computed one: %v", p.ws.keys)
		}
	}
}

// TestOverlapsIndexed: the executor's indexed overlap test agrees with the pairwise rule of
// writeset.overlaps on random writesets of values, whole keys and whole tables.
func TestOverlapsIndexed(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func() *Writeset {
		var w Writeset
		for range rng.IntN(6) {
			tbl := fmt.Sprintf("`s`.`t%d`", rng.IntN(3))
			switch r := rng.IntN(20); {
			case r == 0:
				w.add(wkey{table: tbl})
			case r == 1:
				w.add(wkey{table: tbl, index: fmt.Sprintf("u%d", rng.IntN(2))})
			default:
				w.add(wkey{table: tbl, index: fmt.Sprintf("u%d", rng.IntN(2)), value: fmt.Sprint(rng.IntN(8))})
			}
		}
		w.barrier = rng.IntN(40) == 0
		return &w
	}
	overlapping := 0
	for i := range 20000 {
		a, b := random(), random()
		want := a.overlaps(b)
		if got := a.OverlapsIndexed(b); got != want {
			t.Fatalf("case %d: overlapsIndexed = %v, overlaps = %v\n  a %q barrier %v\n  b %q barrier %v", i, got, want, keysOf(a), a.barrier, keysOf(b), b.barrier)
		}
		if got := b.OverlapsIndexed(a); got != want {
			t.Fatalf("case %d: reversed overlapsIndexed = %v, overlaps = %v", i, got, want)
		}
		if want {
			overlapping++
		}
	}
	if overlapping < 1000 || overlapping > 19000 {
		t.Fatalf("%d of 20000 cases overlap: the generator tests too little of one side", overlapping)
	}
}
