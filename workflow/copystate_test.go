package workflow_test

import (
	"testing"

	"github.com/vplayer/vplayer/workflow"
)

// TestStore_copyToPlan: a record created to copy (state Copying) carries the mark of its copy to
// plan, in the same transaction, whatever its state becomes; planning clears it, and the mark is
// no table of CopyState. A record created otherwise has no mark.
func TestStore_copyToPlan(t *testing.T) {
	s, _ := newStore(t)
	ctx := t.Context()
	in := newRecord("copying")
	in.State = workflow.StateCopying
	rec, _, err := s.Create(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	toPlan := func(id int64) bool {
		t.Helper()
		ok, err := s.CopyToPlan(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !toPlan(rec.ID) {
		t.Fatal("a workflow created Copying has no copy to plan")
	}
	// A stop before the plan changes the state, not the intent.
	if err := s.SetState(ctx, rec.ID, workflow.StateStopped, "Stopped by a signal"); err != nil {
		t.Fatal(err)
	}
	if !toPlan(rec.ID) {
		t.Error("the copy to plan was forgotten when the record was Stopped")
	}
	if st, err := s.CopyState(ctx, rec.ID); err != nil || len(st) != 0 {
		t.Errorf("CopyState before the plan = %+v, %v; want no table", st, err)
	}
	if err := s.PlanCopy(ctx, rec.ID, []workflow.TableCopy{{Table: "a", Estimated: 3}, {Table: "b"}}); err != nil {
		t.Fatal(err)
	}
	if toPlan(rec.ID) {
		t.Error("the copy is still to plan after PlanCopy")
	}
	unfinished := func(id int64) bool {
		t.Helper()
		ok, err := s.CopyUnfinished(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !unfinished(rec.ID) {
		t.Error("CopyUnfinished = false with two tables not copied")
	}
	for _, table := range []string{"a", "b"} {
		if _, err := s.DB().ExecContext(ctx, s.ChunkSQL(rec.ID, table, nil, "MariaDB/0-1-2", 3, true, true, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if unfinished(rec.ID) {
		t.Error("CopyUnfinished = true with every table done")
	}
	st, err := s.CopyState(ctx, rec.ID)
	if err != nil || len(st) != 2 || st[0].Table != "a" || st[0].Estimated != 3 || st[1].Table != "b" {
		t.Errorf("CopyState after the plan = %+v, %v; want a and b", st, err)
	}

	// A copy with nothing to copy is planned too: the mark goes.
	in = newRecord("empty")
	in.State = workflow.StateCopying
	if rec, _, err = s.Create(ctx, in); err != nil {
		t.Fatal(err)
	}
	if err := s.PlanCopy(ctx, rec.ID, nil); err != nil {
		t.Fatal(err)
	}
	if toPlan(rec.ID) {
		t.Error("the copy is still to plan after an empty PlanCopy")
	}

	plain, _, err := s.Create(ctx, newRecord("plain"))
	if err != nil {
		t.Fatal(err)
	}
	if toPlan(plain.ID) || unfinished(plain.ID) {
		t.Error("a workflow created Init has a copy to plan")
	}
	// Create of an existing workflow adds no mark.
	if _, created, err := s.Create(ctx, workflow.Record{Workflow: "plain", Source: "{}", Pos: "MariaDB/0-1-1", State: workflow.StateCopying, Options: "{}"}); err != nil || created {
		t.Fatalf("second Create: created %v, %v", created, err)
	}
	if toPlan(plain.ID) {
		t.Error("a second Create with state Copying marked an existing workflow's copy")
	}
}
