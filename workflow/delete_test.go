package workflow_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vplayer/vplayer/workflow"
)

func TestStore_Delete(t *testing.T) {
	s, db := newStore(t)
	keep := mustCreate(t, s, newRecord("keep"))
	r := mustCreate(t, s, newRecord("orders"))
	for _, id := range []int64{keep.ID, r.ID} {
		if err := s.AddLog(t.Context(), id, "State", workflow.StateRunning, "running"); err != nil {
			t.Fatal(err)
		}
		if err := s.PlanCopy(t.Context(), id, []workflow.TableCopy{{Table: "a", Estimated: 3}, {Table: "b"}}); err != nil {
			t.Fatal(err)
		}
	}
	lease, _, err := s.Acquire(t.Context(), r.ID, "orders", "owner-1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}

	// A live owner: refused, nothing deleted.
	d, err := s.Delete(t.Context(), "orders", false)
	if !errors.Is(err, workflow.ErrLeaseHeld) || d.Holder.Owner != "owner-1" || !d.Owned {
		t.Fatalf("Delete while owned=%+v, %v; want ErrLeaseHeld naming owner-1", d, err)
	}
	mustGet(t, s, "orders")

	// Forced: the record, its log rows and copy state go; the other workflow's stay. The owner
	// then finds its record gone.
	d, err = s.Delete(t.Context(), "orders", true)
	if err != nil || d.ID != r.ID || !d.Owned || d.Logs != 1 || d.CopyTables != 2 {
		t.Fatalf("Delete --force=%+v, %v; want record %d deleted with 1 log row and 2 copy state rows, owned", d, err, r.ID)
	}
	if _, err := s.Get(t.Context(), "orders"); !errors.Is(err, workflow.ErrNotFound) {
		t.Errorf("Get after Delete=%v, want ErrNotFound", err)
	}
	for _, table := range []string{"vreplication_log", "copy_state"} {
		var mine, theirs int
		q := "SELECT SUM(vrepl_id = ?), SUM(vrepl_id = ?) FROM `" + s.Sidecar() + "`." + table
		if err := db.QueryRowContext(t.Context(), q, r.ID, keep.ID).Scan(&mine, &theirs); err != nil {
			t.Fatal(err)
		}
		if mine != 0 || theirs == 0 {
			t.Errorf("%s after Delete: %d rows of the deleted workflow, %d of the other; want 0 and some", table, mine, theirs)
		}
	}
	err = lease.Renew(t.Context())
	var lost *workflow.LostError
	if !errors.As(err, &lost) || !lost.Deleted || !strings.Contains(err.Error(), "deleted") {
		t.Errorf("Renew after the record was deleted=%v, want a LostError saying it was deleted", err)
	}

	// A released lease: deleted without --force.
	lk, _, err := s.Acquire(t.Context(), keep.ID, "keep", "owner-2", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := lk.Release(); err != nil {
		t.Fatal(err)
	}
	if d, err := s.Delete(t.Context(), "keep", false); err != nil || d.Owned {
		t.Errorf("Delete after release=%+v, %v; want deleted, not owned", d, err)
	}
	if _, err := s.Delete(t.Context(), "keep", false); !errors.Is(err, workflow.ErrNotFound) {
		t.Errorf("Delete again=%v, want ErrNotFound", err)
	}
}

// TestStore_DeleteOldSidecar deletes a workflow of a sidecar an older vplayer created: no lease
// columns to refuse for, no log or copy_state table to delete from.
func TestStore_DeleteOldSidecar(t *testing.T) {
	s := oldSidecar(t)
	if d, err := s.Delete(t.Context(), "orders", false); err != nil || d.Owned {
		t.Errorf("Delete on an old sidecar=%+v, %v; want deleted", d, err)
	}
	if _, err := s.Get(t.Context(), "orders"); !errors.Is(err, workflow.ErrNotFound) {
		t.Errorf("Get after Delete=%v, want ErrNotFound", err)
	}
}
