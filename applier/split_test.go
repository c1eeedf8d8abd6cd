package applier

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vplayer/vplayer/applier/plan"
	"github.com/vplayer/vplayer/event"
)

// TestSplit_lateChecksBeforeCommit: in strict mode a split batch's late part, which holds checked
// statements (a counted upsert, a delete by key), comes back in a round trip of its own before
// the one that carries the position and COMMIT, on a worker and on the main session alike: a
// mismatch it finds must fail the batch while it can still be rolled back. In idempotent mode,
// which only counts, it goes with the COMMIT.
func TestSplit_lateChecksBeforeCommit(t *testing.T) {
	tbl := intTable(t, "t", "id", "v")
	bt := &event.Table{Schema: "s", Name: "t", ColumnCount: 2}
	// split plans a batch whose rows all fold, updates of keys 1 and 2, while a job that touches
	// key 2 is in flight: its commit step, key 2's statements in its late part.
	split := func(mode string) *plan.Step {
		p := plan.New(plan.Config{ExecMode: mode, MaxBatch: parallelMaxBatch, Writesets: true, Parallel: true, Split: true}, "MariaDB/0-1-0")
		var inflight plan.Writeset
		inflight.AddRows(tbl, []event.Row{{After: []any{int32(2), int32(0)}}})
		p.InFlight([]*plan.Writeset{&inflight})
		rows := []event.Row{
			{Before: []any{int32(1), int32(0)}, After: []any{int32(1), int32(1)}},
			{Before: []any{int32(2), int32(0)}, After: []any{int32(2), int32(1)}},
		}
		var steps []plan.Step
		for _, e := range []*event.Event{
			{Type: event.Begin, GTID: "0-1-1"},
			{Type: event.Rows, Table: bt, Kind: event.Update, Rows: rows},
			{Type: event.Commit, Pos: "MariaDB/0-1-1"},
		} {
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
		for _, st := range append(steps, s...) {
			if st.Kind == plan.StepCommit && st.Late != nil {
				return &st
			}
		}
		t.Fatalf("no split commit step planned")
		return nil
	}
	for _, mode := range []string{plan.ExecModeStrict, plan.ExecModeIdempotent} {
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
				st := split(mode)
				if where == "worker" {
					w := &worker{n: 1, s: s}
					s.w = w
					j, _ := a.sched.dispatch(st, nil, "0-1-1")
					if err := a.tryJob(ctx, w, j); err != nil {
						t.Fatal(err)
					}
				} else {
					a.main = s
					if err := a.commit(ctx, st); err != nil {
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
				if want := mode == plan.ExecModeIdempotent; withCommit != want {
					t.Errorf("late part's checked statements in the COMMIT's round trip: %v, want %v; round trips:\n%s", withCommit, want, strings.Join(trips, "\n"))
				}
				if all := strings.Join(trips, "\n"); strings.Count(all, "IN (2)") != 1 || strings.Count(all, "IN (1)") != 1 || !strings.HasPrefix(all, "BEGIN") {
					t.Errorf("round trips do not send BEGIN first and each key's statements once:\n%s", all)
				}
			})
		}
	}
}
