package plan

import (
	"testing"

	"github.com/vplayer/vplayer/event"
)

func foldTestTable() *Table {
	t := testTable(keyPrimary)
	t.foldable = true
	t.upsertTail = upsertTail(t)
	t.countedTail = countedTail(t)
	t.upsertShape = "INSERT ... ON DUPLICATE KEY UPDATE `s`.`t`"
	t.keyTuple = keyTupleOf(t)
	return t
}

func row(id int32, v string) []any { return []any{id, int64(1), v} }

// TestFold: the changes of one transaction net out per key, whatever their order. A key the fold
// first sees created ends as a plain INSERT of its final image (a row already on the target is a
// duplicate-key error, as without folding), or as nothing when it is deleted again; a key that
// existed ends as a DELETE or an upsert; deletes come first.
func TestFold(t *testing.T) {
	tbl := foldTestTable()
	tests := []struct {
		name string
		add  func(f *fold) error
		want string
	}{
		{
			name: "insert then update",
			add: func(f *fold) error {
				if err := f.add(tbl, event.Insert, []event.Row{{After: row(1, "a")}}, 1, ""); err != nil {
					return err
				}
				return f.add(tbl, event.Update, []event.Row{{Before: row(1, "a"), After: row(1, "b")}}, 1, "")
			},
			want: "INSERT INTO `s`.`t` (`id`,`e`,`v`) VALUES (1,1,'b')",
		},
		{
			name: "update in place",
			add: func(f *fold) error {
				return f.add(tbl, event.Update, []event.Row{{Before: row(1, "a"), After: row(1, "b")}}, 1, "")
			},
			want: "SET @vplayer_dup = 0;INSERT INTO `s`.`t` (`id`,`e`,`v`) VALUES (1,1,'b') ON DUPLICATE KEY UPDATE " +
				"`e`=IF((@vplayer_dup := @vplayer_dup + 1) > 0, VALUES(`e`), `e`),`v`=VALUES(`v`);" +
				"UPDATE `s`.`t` SET `id`=`id` WHERE `id` IN (1) AND @vplayer_dup = 1",
		},
		{
			name: "key change",
			add: func(f *fold) error {
				return f.add(tbl, event.Update, []event.Row{{Before: row(1, "a"), After: row(2, "a")}}, 1, "")
			},
			want: "DELETE FROM `s`.`t` WHERE `id` IN (1);INSERT INTO `s`.`t` (`id`,`e`,`v`) VALUES (2,1,'a')",
		},
		{
			name: "insert then delete",
			add: func(f *fold) error {
				if err := f.add(tbl, event.Insert, []event.Row{{After: row(3, "x")}}, 1, ""); err != nil {
					return err
				}
				return f.add(tbl, event.Delete, []event.Row{{Before: row(3, "x")}}, 1, "")
			},
			want: "",
		},
		{
			name: "delete then reinsert, and a swap of keys",
			add: func(f *fold) error {
				if err := f.add(tbl, event.Delete, []event.Row{{Before: row(1, "a")}}, 1, ""); err != nil {
					return err
				}
				if err := f.add(tbl, event.Insert, []event.Row{{After: row(1, "z")}}, 1, ""); err != nil {
					return err
				}
				// Rows 5 and 6 swap keys through a temporary key 7, as a source must do it.
				return f.add(tbl, event.Update, []event.Row{
					{Before: row(5, "five"), After: row(7, "five")},
					{Before: row(6, "six"), After: row(5, "six")},
					{Before: row(7, "five"), After: row(6, "five")},
				}, 1, "")
			},
			// 7 was created and deleted again: nothing.
			want: "SET @vplayer_dup = 0;INSERT INTO `s`.`t` (`id`,`e`,`v`) VALUES (1,1,'z'),(5,1,'six'),(6,1,'five') ON DUPLICATE KEY UPDATE " +
				"`e`=IF((@vplayer_dup := @vplayer_dup + 1) > 0, VALUES(`e`), `e`),`v`=VALUES(`v`);" +
				"UPDATE `s`.`t` SET `id`=`id` WHERE `id` IN (1) AND @vplayer_dup = 3",
		},
		{
			name: "delete, an update moving a key onto a new one, an insert",
			add: func(f *fold) error {
				if err := f.add(tbl, event.Delete, []event.Row{{Before: row(8, "a")}}, 1, ""); err != nil {
					return err
				}
				if err := f.add(tbl, event.Update, []event.Row{{Before: row(2, "b"), After: row(9, "b")}}, 1, ""); err != nil {
					return err
				}
				return f.add(tbl, event.Insert, []event.Row{{After: row(3, "c")}}, 1, "")
			},
			want: "DELETE FROM `s`.`t` WHERE `id` IN (8,2);INSERT INTO `s`.`t` (`id`,`e`,`v`) VALUES (9,1,'b'),(3,1,'c')",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f fold
			if err := tt.add(&f); err != nil {
				t.Fatal(err)
			}
			var b Batch
			if err := f.appendTo(&b, ExecModeStrict, ""); err != nil {
				t.Fatal(err)
			}
			if got := string(b.buf); got != tt.want {
				t.Errorf("fold wrote\n  %s\nwant\n  %s", got, tt.want)
			}
			if f.rows != 0 || len(f.tables) != 0 {
				t.Errorf("fold not emptied after appendTo: %d rows, %d tables", f.rows, len(f.tables))
			}
		})
	}
}

// TestFold_shapes: the folded statements' shapes, which stall messages show, name the source's
// row changes they stand for beside vplayer's own statement.
func TestFold_shapes(t *testing.T) {
	tbl := foldTestTable()
	var f fold
	for _, c := range []struct {
		kind event.RowKind
		row  event.Row
	}{
		{event.Update, event.Row{Before: row(1, "a"), After: row(1, "b")}},
		{event.Delete, event.Row{Before: row(2, "a")}},
		{event.Insert, event.Row{After: row(2, "c")}},
	} {
		if err := f.add(tbl, c.kind, []event.Row{c.row}, 1, ""); err != nil {
			t.Fatal(err)
		}
	}
	var b Batch
	if err := f.appendTo(&b, ExecModeStrict, ""); err != nil {
		t.Fatal(err)
	}
	want := "INSERT ... ON DUPLICATE KEY UPDATE `s`.`t` (folded source INSERT+UPDATE+DELETE rows)"
	if got := b.Shape(); got != want {
		t.Errorf("shape %q, want %q", got, want)
	}
	f.add(tbl, event.Update, []event.Row{{Before: row(1, "b"), After: row(1, "d")}}, 1, "")
	b.Reset()
	if err := f.appendTo(&b, ExecModeStrict, ""); err != nil {
		t.Fatal(err)
	}
	if got, want := b.Shape(), "INSERT ... ON DUPLICATE KEY UPDATE `s`.`t` (folded source UPDATE rows)"; got != want {
		t.Errorf("after a flush: shape %q, want %q", got, want)
	}
}

// TestFold_chunks: many keys are written in statements of at most foldChunk rows.
func TestFold_chunks(t *testing.T) {
	tbl := foldTestTable()
	var f fold
	for i := 0; i < 2*FoldChunk+1; i++ {
		if err := f.add(tbl, event.Insert, []event.Row{{After: row(int32(i), "v")}}, 1, ""); err != nil {
			t.Fatal(err)
		}
	}
	var b Batch
	if err := f.appendTo(&b, ExecModeStrict, ""); err != nil {
		t.Fatal(err)
	}
	if got, want := b.n, 3; got != want {
		t.Errorf("%d keys written in %d statements, want %d", 2*FoldChunk+1, got, want)
	}
}
