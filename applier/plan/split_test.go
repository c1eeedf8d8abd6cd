package plan

import (
	"strings"
	"testing"

	"github.com/vplayer/vplayer/event"
)

// TestFold_split: the keys the predicate names late go into the late batch, each with the
// statement its net change needs there (delete, counted upsert, insert), and every other key
// into the batch planned now; the fold is emptied either way.
func TestFold_split(t *testing.T) {
	tbl := foldTestTable()
	var f fold
	add := func(kind event.RowKind, rows ...event.Row) {
		t.Helper()
		if err := f.add(tbl, kind, rows, 1, "0-1-1"); err != nil {
			t.Fatal(err)
		}
	}
	add(event.Update, upd(row(1, "a"), row(1, "b")), upd(row(4, "a"), row(4, "b")))
	add(event.Delete, event.Row{Before: row(2, "x")}, event.Row{Before: row(5, "x")})
	add(event.Insert, event.Row{After: row(3, "c")}, event.Row{After: row(6, "c")})
	late := map[string]bool{"4": true, "5": true, "6": true}
	var b, lateB Batch
	if err := f.appendSplit(&b, &lateB, ExecModeStrict, "0-1-1", func(_ *Table, key string) bool { return late[key] }); err != nil {
		t.Fatal(err)
	}
	const upsert = "INSERT INTO `s`.`t` (`id`,`e`,`v`) VALUES (%s) ON DUPLICATE KEY UPDATE " +
		"`e`=IF((@vplayer_dup := @vplayer_dup + 1) > 0, VALUES(`e`), `e`),`v`=VALUES(`v`)"
	want := "DELETE FROM `s`.`t` WHERE `id` IN (2);SET @vplayer_dup = 0;" + strings.Replace(upsert, "%s", "1,1,'b'", 1) +
		";UPDATE `s`.`t` SET `id`=`id` WHERE `id` IN (1) AND @vplayer_dup = 1;INSERT INTO `s`.`t` (`id`,`e`,`v`) VALUES (3,1,'c')"
	wantLate := "DELETE FROM `s`.`t` WHERE `id` IN (5);SET @vplayer_dup = 0;" + strings.Replace(upsert, "%s", "4,1,'b'", 1) +
		";UPDATE `s`.`t` SET `id`=`id` WHERE `id` IN (4) AND @vplayer_dup = 1;INSERT INTO `s`.`t` (`id`,`e`,`v`) VALUES (6,1,'c')"
	if got := string(b.buf); got != want {
		t.Errorf("planned now:\n  %s\nwant\n  %s", got, want)
	}
	if got := string(lateB.buf); got != wantLate {
		t.Errorf("late:\n  %s\nwant\n  %s", got, wantLate)
	}
	// Each part checks its own keys.
	for _, c := range b.checks {
		for _, k := range c.Keys {
			if late[k] {
				t.Errorf("a check of the part planned now names late key %s", k)
			}
		}
	}
	if len(lateB.checks) != 2 {
		t.Errorf("late part has %d checks, want 2 (its delete and its counted upsert)", len(lateB.checks))
	}
	if f.rows != 0 || len(f.tables) != 0 {
		t.Errorf("fold not emptied: %d rows, %d tables", f.rows, len(f.tables))
	}
}

// TestPlanner_splitsWhatJobsInFlightTouch: with workers, a batch whose rows all folded is split at
// its commit: the keys a job in flight touches go into the step's late part (run once that job
// committed), the rest with the BEGIN. A batch that also changes a table that does not fold, or
// nothing in flight, is not split.
func TestPlanner_splitsWhatJobsInFlightTouch(t *testing.T) {
	folded := wsTable("f", []Column{intCol("id", true), intCol("v", true)}, pk("id"))
	other := wsTable("u", []Column{intCol("id", true), intCol("v", true)}, pk("id"), uk("v_u", "v"))
	if !folded.foldable || other.foldable {
		t.Fatalf("test tables: foldable %v and %v, want true and false", folded.foldable, other.foldable)
	}
	var inflight Writeset
	inflight.AddRows(folded, []event.Row{ins(int32(2), int32(0))})
	none := false
	p := New(Config{ExecMode: ExecModeStrict, MaxBatch: 1 << 20, Writesets: true, Parallel: true, Split: true}, "MariaDB/0-1-0")
	plan := func(gtid string, changes ...func() *event.Event) []Step {
		t.Helper()
		var steps []Step
		evs := []*event.Event{{Type: event.Begin, GTID: gtid}}
		for _, c := range changes {
			evs = append(evs, c())
		}
		evs = append(evs, &event.Event{Type: event.Commit, Pos: "MariaDB/" + gtid})
		if none {
			p.InFlight(nil)
		} else {
			p.InFlight([]*Writeset{&inflight})
		}
		for _, e := range evs {
			var tbl *Table
			if e.Type == event.Rows {
				tbl = folded
				if e.Table.Name == "u" {
					tbl = other
				}
			}
			s, err := p.Event(e, tbl)
			if err != nil {
				t.Fatal(err)
			}
			steps = append(steps, s...)
		}
		s, err := p.EndFetch()
		if err != nil {
			t.Fatal(err)
		}
		return append(steps, s...)
	}
	rowsOf := func(name string, rows ...event.Row) func() *event.Event {
		return func() *event.Event {
			return &event.Event{Type: event.Rows, Table: &event.Table{Schema: "s", Name: name, ColumnCount: 2}, Kind: event.Update, Rows: rows}
		}
	}
	commitOf := func(steps []Step) *Step {
		t.Helper()
		for i := range steps {
			if steps[i].Kind == StepCommit {
				return &steps[i]
			}
		}
		t.Fatalf("no commit step in %v", steps)
		return nil
	}
	text := func(b *Batch) string {
		if b == nil {
			return ""
		}
		return string(b.buf)
	}

	c := commitOf(plan("0-1-1", rowsOf("f", upd(vals(int32(1), int32(0)), vals(int32(1), int32(1))), upd(vals(int32(2), int32(0)), vals(int32(2), int32(1))))))
	now := text(c.Check) + text(c.Stmts)
	if c.Late == nil || !strings.Contains(text(c.Late), "IN (2)") || strings.Contains(text(c.Late), "IN (1)") {
		t.Errorf("late part %q, want key 2's statements only", text(c.Late))
	}
	if !strings.HasPrefix(now, "BEGIN;") || !strings.Contains(now, "IN (1)") || strings.Contains(now, "IN (2)") {
		t.Errorf("part planned now %q, want BEGIN and key 1's statements only", now)
	}
	if c.Writeset == nil || len(c.Writeset.keys) != 2 {
		t.Errorf("writeset %v, want both keys: the dispatcher finds the job the late part waits for by it", c.Writeset)
	}

	c = commitOf(plan("0-1-2", rowsOf("f", upd(vals(int32(2), int32(1)), vals(int32(2), int32(2)))),
		rowsOf("u", upd(vals(int32(7), int32(0)), vals(int32(7), int32(1))))))
	if c.Late != nil {
		t.Errorf("a batch with a table that does not fold was split: late %q", text(c.Late))
	}

	none = true
	c = commitOf(plan("0-1-3", rowsOf("f", upd(vals(int32(2), int32(2)), vals(int32(2), int32(3))))))
	if c.Late != nil {
		t.Errorf("a batch with nothing in flight was split: late %q", text(c.Late))
	}
}
