package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/vplayer/vplayer/internal/eventually"
	"github.com/vplayer/vplayer/workflow"
)

func control(t *testing.T, s *workflow.Store, id int64) workflow.Control {
	t.Helper()
	c, err := s.Control(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPause_handshake walks the vplayer diff pause through its states: one diff at a time, the
// acknowledgement only from the lease owner and only for a hold, the move to a position only from
// held, and expiry freeing the workflow.
func TestPause_handshake(t *testing.T) {
	store, rec := leaseStore(t)
	ctx := context.Background()
	if c := control(t, store, rec.ID); c.Pause != "" || c.PauseExpired || c.Owned || c.Pos != rec.Pos {
		t.Fatalf("control of a new record=%+v, want no pause, no owner, pos %s", c, rec.Pos)
	}
	lease, _, err := store.Acquire(ctx, rec.ID, "wf", "owner-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if c := control(t, store, rec.ID); !c.Owned || c.Owner != "owner-a" {
		t.Errorf("control with a live lease=%+v, want owned by owner-a", c)
	}
	if ok, err := lease.AckPause(ctx); ok || err != nil {
		t.Errorf("AckPause without a request=%v, %v; want false", ok, err)
	}
	if err := store.PauseAt(ctx, rec.ID, "MariaDB/0-1-5", time.Minute); !errors.Is(err, workflow.ErrPauseLost) {
		t.Errorf("PauseAt before held=%v, want ErrPauseLost", err)
	}

	if err := store.RequestPause(ctx, rec.ID, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := store.RequestPause(ctx, rec.ID, time.Minute); !errors.Is(err, workflow.ErrPauseBusy) {
		t.Errorf("second RequestPause=%v, want ErrPauseBusy", err)
	}
	if c := control(t, store, rec.ID); c.Pause != workflow.PauseHold {
		t.Errorf("pause after the request=%q, want %q", c.Pause, workflow.PauseHold)
	}
	if err := store.RenewPause(ctx, rec.ID, workflow.PauseHold, time.Minute); err != nil {
		t.Errorf("RenewPause(hold)=%v", err)
	}
	if ok, err := lease.AckPause(ctx); !ok || err != nil {
		t.Fatalf("AckPause=%v, %v; want true", ok, err)
	}
	if err := store.RenewPause(ctx, rec.ID, workflow.PauseHold, time.Minute); !errors.Is(err, workflow.ErrPauseLost) {
		t.Errorf("RenewPause(hold) once held=%v, want ErrPauseLost", err)
	}
	if err := store.PauseAt(ctx, rec.ID, "MariaDB/0-1-5", time.Minute); err != nil {
		t.Fatal(err)
	}
	if c := control(t, store, rec.ID); c.Pause != "MariaDB/0-1-5" {
		t.Errorf("pause after PauseAt=%q, want the position", c.Pause)
	}
	if err := store.ClearPause(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	if c := control(t, store, rec.ID); c.Pause != "" || c.PauseExpired {
		t.Errorf("control after ClearPause=%+v, want no pause", c)
	}

	// A pause whose diff stopped renewing it expires: the stream goes on, another diff may pause.
	if err := store.RequestPause(ctx, rec.ID, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	eventually.Must(t, 5*time.Second, 50*time.Millisecond, "the unrenewed pause to expire", func() error {
		if c := control(t, store, rec.ID); !c.PauseExpired {
			return fmt.Errorf("control %+v", c)
		}
		return nil
	})
	if err := store.RenewPause(ctx, rec.ID, workflow.PauseHold, time.Minute); !errors.Is(err, workflow.ErrPauseLost) {
		t.Errorf("RenewPause of an expired pause=%v, want ErrPauseLost", err)
	}
	if err := store.RequestPause(ctx, rec.ID, time.Minute); err != nil {
		t.Errorf("RequestPause after expiry=%v, want it granted", err)
	}

	// Only the lease owner acknowledges.
	if err := lease.Release(); err != nil {
		t.Fatal(err)
	}
	b, _, err := store.Acquire(ctx, rec.ID, "wf", "owner-b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := lease.AckPause(ctx); ok {
		t.Error("a former owner acknowledged the pause")
	}
	if ok, err := b.AckPause(ctx); !ok || err != nil {
		t.Errorf("the owner's AckPause=%v, %v; want true", ok, err)
	}
	b.Release()
}
