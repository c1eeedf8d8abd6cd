package applier

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

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
	var b, lateB batch
	if err := f.appendSplit(&b, &lateB, ExecModeStrict, "0-1-1", func(_ *table, key string) bool { return late[key] }); err != nil {
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
		for _, k := range c.keys {
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
	folded := wsTable("f", []column{intCol("id", true), intCol("v", true)}, pk("id"))
	other := wsTable("u", []column{intCol("id", true), intCol("v", true)}, pk("id"), uk("v_u", "v"))
	if !folded.foldable || other.foldable {
		t.Fatalf("test tables: foldable %v and %v, want true and false", folded.foldable, other.foldable)
	}
	var inflight writeset
	inflight.addRows(folded, []event.Row{ins(int32(2), int32(0))})
	none := false
	p := newPlanner(planConfig{execMode: ExecModeStrict, maxBatch: parallelMaxBatch, writesets: true, parallel: true, split: true}, "MariaDB/0-1-0")
	plan := func(gtid string, changes ...func() *event.Event) []step {
		t.Helper()
		var steps []step
		evs := []*event.Event{{Type: event.Begin, GTID: gtid}}
		for _, c := range changes {
			evs = append(evs, c())
		}
		evs = append(evs, &event.Event{Type: event.Commit, Pos: "MariaDB/" + gtid})
		if none {
			p.InFlight(nil)
		} else {
			p.InFlight([]*writeset{&inflight})
		}
		for _, e := range evs {
			var tbl *table
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
	commitOf := func(steps []step) *step {
		t.Helper()
		for i := range steps {
			if steps[i].kind == stepCommit {
				return &steps[i]
			}
		}
		t.Fatalf("no commit step in %v", steps)
		return nil
	}
	text := func(b *batch) string {
		if b == nil {
			return ""
		}
		return string(b.buf)
	}

	c := commitOf(plan("0-1-1", rowsOf("f", upd(vals(int32(1), int32(0)), vals(int32(1), int32(1))), upd(vals(int32(2), int32(0)), vals(int32(2), int32(1))))))
	now := text(c.check) + text(c.stmts)
	if c.late == nil || !strings.Contains(text(c.late), "IN (2)") || strings.Contains(text(c.late), "IN (1)") {
		t.Errorf("late part %q, want key 2's statements only", text(c.late))
	}
	if !strings.HasPrefix(now, "BEGIN;") || !strings.Contains(now, "IN (1)") || strings.Contains(now, "IN (2)") {
		t.Errorf("part planned now %q, want BEGIN and key 1's statements only", now)
	}
	if c.ws == nil || len(c.ws.keys) != 2 {
		t.Errorf("writeset %v, want both keys: the dispatcher finds the job the late part waits for by it", c.ws)
	}

	c = commitOf(plan("0-1-2", rowsOf("f", upd(vals(int32(2), int32(1)), vals(int32(2), int32(2)))),
		rowsOf("u", upd(vals(int32(7), int32(0)), vals(int32(7), int32(1))))))
	if c.late != nil {
		t.Errorf("a batch with a table that does not fold was split: late %q", text(c.late))
	}

	none = true
	c = commitOf(plan("0-1-3", rowsOf("f", upd(vals(int32(2), int32(2)), vals(int32(2), int32(3))))))
	if c.late != nil {
		t.Errorf("a batch with nothing in flight was split: late %q", text(c.late))
	}
}

// TestSplit_lateChecksBeforeCommit: in strict mode a split batch's late part, which holds checked
// statements (a counted upsert, a delete by key), comes back in a round trip of its own before
// the one that carries the position and COMMIT, on a worker and on the main session alike: a
// mismatch it finds must fail the batch while it can still be rolled back. In idempotent mode,
// which only counts, it goes with the COMMIT.
func TestSplit_lateChecksBeforeCommit(t *testing.T) {
	tbl := foldTestTable()
	split := func() (now, late *batch) {
		var f fold
		if err := f.add(tbl, event.Update, []event.Row{upd(row(1, "a"), row(1, "b")), upd(row(2, "a"), row(2, "b"))}, 1, "0-1-1"); err != nil {
			t.Fatal(err)
		}
		now, late = new(batch), new(batch)
		now.add("", "BEGIN")
		if err := f.appendSplit(now, late, ExecModeStrict, "0-1-1", func(_ *table, key string) bool { return key == "2" }); err != nil {
			t.Fatal(err)
		}
		return now, late
	}
	for _, mode := range []string{ExecModeStrict, ExecModeIdempotent} {
		for _, where := range []string{"worker", "main session"} {
			t.Run(mode+"/"+where, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
				defer cancel()
				rec := &recordingConn{}
				db := sql.OpenDB(rec)
				defer db.Close()
				conn, err := db.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				a := New(Config{Workers: 2, Record: stubRecord{}, ExecMode: mode})
				a.maxPacket = 1 << 20
				a.sched = newScheduler(2, "MariaDB/0-1-0")
				s := &session{conn: conn, tr: &tracker{}}
				now, late := split()
				end := saved{pos: "MariaDB/0-1-1", commits: 1, rows: 2}
				if where == "worker" {
					w := &worker{n: 1, s: s}
					s.w = w
					j, _ := a.sched.dispatch(&step{kind: stepCommit, stmts: now, late: late, end: end}, nil, "0-1-1")
					if err := a.tryJob(ctx, w, j); err != nil {
						t.Fatal(err)
					}
				} else {
					a.main = s
					if err := a.commit(ctx, &step{kind: stepCommit, stmts: now, late: late, end: end}); err != nil {
						t.Fatal(err)
					}
				}
				rec.mu.Lock()
				trips := slices.Clone(rec.trips)
				rec.mu.Unlock()
				last := trips[len(trips)-1]
				if !strings.HasSuffix(last, "COMMIT") {
					t.Fatalf("last round trip %q does not commit; round trips:\n%s", last, strings.Join(trips, "\n"))
				}
				withCommit := strings.Contains(last, "IN (2)")
				if want := mode == ExecModeIdempotent; withCommit != want {
					t.Errorf("late part's checked statements in the COMMIT's round trip: %v, want %v; round trips:\n%s", withCommit, want, strings.Join(trips, "\n"))
				}
				if all := strings.Join(trips, "\n"); strings.Count(all, "IN (2)") != 1 || strings.Count(all, "IN (1)") != 1 || !strings.HasPrefix(all, "BEGIN") {
					t.Errorf("round trips do not send BEGIN first and each key's statements once:\n%s", all)
				}
			})
		}
	}
}
