package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/vplayer/vplayer/internal/eventually"
	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
	"github.com/vplayer/vplayer/workflow"
)

func leaseStore(t *testing.T) (*workflow.Store, workflow.Record) {
	t.Helper()
	_, target := mysqltest.Pair(t)
	name := mysqltest.DBName(t)
	db := mysqltest.DB(t, target, name)
	store := workflow.New(db, name+"_vt")
	t.Cleanup(func() { db.Exec("DROP DATABASE IF EXISTS " + name + "_vt") })
	ctx := context.Background()
	if err := store.Init(ctx); err != nil {
		t.Fatal(err)
	}
	rec, _, err := store.Create(ctx, workflow.Record{Workflow: "wf", Source: "{}", Pos: "MariaDB/0-1-1", Options: "{}"})
	if err != nil {
		t.Fatal(err)
	}
	return store, rec
}

// TestLease_acquireExclusive: one conditional UPDATE decides; a second owner is refused and told
// who holds it; after expiry the second owner takes over with a higher epoch, and the first
// owner's renewal reports the loss naming the new owner.
func TestLease_acquireExclusive(t *testing.T) {
	store, rec := leaseStore(t)
	ctx := context.Background()
	// A ttl no stall of the test or the server can outlast: the lease expires only when the
	// test expires it below.
	a, _, err := store.Acquire(ctx, rec.ID, "wf", "owner-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	_, h, err := store.Acquire(ctx, rec.ID, "wf", "owner-b", time.Minute)
	if !errors.Is(err, workflow.ErrLeaseHeld) || h.Owner != "owner-a" {
		t.Fatalf("second Acquire = %v, holder %q; want ErrLeaseHeld by owner-a", err, h.Owner)
	}
	// Expire owner-a's lease on the target without a renewal, as a frozen owner's would.
	expireLease(t, store, rec.ID)
	b, _, err := store.Acquire(ctx, rec.ID, "wf", "owner-b", time.Minute)
	if err != nil {
		t.Fatalf("Acquire of the expired lease = %v, want owner-b to take it over", err)
	}
	if b.Epoch() <= a.Epoch() {
		t.Errorf("epoch after takeover = %d, want above %d", b.Epoch(), a.Epoch())
	}
	err = a.Renew(ctx)
	var lost *workflow.LostError
	if !errors.As(err, &lost) || lost.Owner != "owner-b" || err.Error() != "lost ownership of workflow wf to owner-b" {
		t.Errorf("old owner's Renew = %v, want lost ownership of workflow wf to owner-b", err)
	}
	if err := b.Release(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.Acquire(ctx, rec.ID, "wf", "owner-c", time.Minute); err != nil {
		t.Errorf("Acquire after Release = %v, want the lease free", err)
	}
}

// TestLease_keepaliveOutlivesCallerContext: cancelling the context used to acquire the lease
// does not end it; the keepalive renews it until Release.
func TestLease_keepaliveOutlivesCallerContext(t *testing.T) {
	store, rec := leaseStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	// Renewals every 3 s; a lease no stall can expire before the checks below read it.
	const ttl = 9 * time.Second
	a, _, err := store.Acquire(ctx, rec.ID, "wf", "owner-a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	a.Keep()
	cancel()
	// Read after the cancel, so that a later lease_until can only come from a renewal made after
	// the caller's context ended.
	initial := readLease(t, store, rec.ID)
	eventually.Must(t, 30*time.Second, 50*time.Millisecond, "the keepalive to renew the lease after the caller's context ended", func() error {
		got := readLease(t, store, rec.ID)
		if got.Owner != "owner-a" || got.Epoch != a.Epoch() {
			t.Fatalf("record held by %q epoch %d after the caller's context ended, want owner-a epoch %d", got.Owner, got.Epoch, a.Epoch())
		}
		if !got.Until.After(initial.Until) {
			return fmt.Errorf("lease_until still %v", got.Until)
		}
		return nil
	})
	if err := a.Err(); err != nil {
		t.Errorf("lease reports %v, want still held", err)
	}
	if _, h, err := store.Acquire(context.Background(), rec.ID, "wf", "owner-b", ttl); !errors.Is(err, workflow.ErrLeaseHeld) || h.Owner != "owner-a" {
		t.Fatalf("Acquire by another owner after the caller's context ended = %v (holder %q), want ErrLeaseHeld by owner-a", err, h.Owner)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.Acquire(context.Background(), rec.ID, "wf", "owner-b", ttl); err != nil {
		t.Errorf("Acquire after Release = %v, want the lease free", err)
	}
}

// expireLease expires the lease of record id on the target without a renewal.
func expireLease(t *testing.T, store *workflow.Store, id int64) {
	t.Helper()
	if _, err := store.DB().ExecContext(t.Context(), "UPDATE "+store.Sidecar()+".vreplication SET lease_until = 0 WHERE id = ?", id); err != nil {
		t.Fatal(err)
	}
}

// readLease reads the owner, epoch and lease_until of record id straight from the target.
func readLease(t *testing.T, store *workflow.Store, id int64) workflow.Holder {
	t.Helper()
	var h workflow.Holder
	var until int64
	err := store.DB().QueryRowContext(t.Context(), "SELECT owner, epoch, lease_until FROM "+store.Sidecar()+".vreplication WHERE id = ?", id).Scan(&h.Owner, &h.Epoch, &until)
	if err != nil {
		t.Fatal(err)
	}
	h.Until = time.UnixMilli(until)
	return h
}

// TestLease_keepaliveReportsLoss: when another owner took over (the old one was frozen past its
// ttl), the keepalive closes Lost with the new owner named.
func TestLease_keepaliveReportsLoss(t *testing.T) {
	store, rec := leaseStore(t)
	ctx := context.Background()
	const ttl = 600 * time.Millisecond
	a, _, err := store.Acquire(ctx, rec.ID, "wf", "owner-a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	// Simulate a frozen owner: expire the lease on the target without a renewal.
	if _, err := store.DB().ExecContext(ctx, "UPDATE "+store.Sidecar()+".vreplication SET lease_until = 0 WHERE id = ?", rec.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.Acquire(ctx, rec.ID, "wf", "owner-b", time.Minute); err != nil {
		t.Fatal(err)
	}
	a.Keep()
	select {
	case <-a.Lost():
	case <-time.After(30 * time.Second): // a bound for a loaded machine, not a timing claim
		t.Fatal("keepalive did not report the loss within 30s")
	}
	if err := a.Err(); !errors.Is(err, workflow.ErrLostOwnership) {
		t.Errorf("Err = %v, want ErrLostOwnership", err)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
}

// TestLease_ddlMarkSQL: the statement that marks a DDL started changes no position while the
// lease is ours, leaves the mark for DDLStarted until the next position write, and fails with a
// fence violation once another owner took the workflow over.
func TestLease_ddlMarkSQL(t *testing.T) {
	store, rec := leaseStore(t)
	ctx := context.Background()
	a, _, err := store.Acquire(ctx, rec.ID, "wf", "owner-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	const ddlPos = "MariaDB/0-1-4242"
	if _, err := store.DB().ExecContext(ctx, a.DDLMarkSQL(ddlPos)); err != nil {
		t.Fatalf("DDL mark of the owner = %v, want nil", err)
	}
	if got, _ := store.Get(ctx, "wf"); got.Pos != rec.Pos {
		t.Errorf("DDL mark changed pos to %q, want %q", got.Pos, rec.Pos)
	}
	if got, err := store.DDLStarted(ctx, rec.ID); err != nil || got != ddlPos {
		t.Errorf("DDLStarted = %q, %v; want %q", got, err, ddlPos)
	}
	if _, err := store.DB().ExecContext(ctx, a.PositionSQL(ddlPos, 1, 1)); err != nil {
		t.Fatal(err)
	}
	if got, err := store.DDLStarted(ctx, rec.ID); err != nil || got != "" {
		t.Errorf("DDLStarted after a position write = %q, %v; want none", got, err)
	}
	if _, err := store.DB().ExecContext(ctx, "UPDATE "+store.Sidecar()+".vreplication SET lease_until = 0 WHERE id = ?", rec.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.Acquire(ctx, rec.ID, "wf", "owner-b", time.Minute); err != nil {
		t.Fatal(err)
	}
	conn, err := store.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET SESSION sql_mode = 'STRICT_ALL_TABLES'"); err != nil {
		t.Fatal(err)
	}
	_, err = conn.ExecContext(ctx, a.DDLMarkSQL("MariaDB/0-1-4243"))
	if !workflow.IsFenceViolation(err) {
		t.Errorf("DDL mark of the old owner = %v, want a fence violation", err)
	}
}

// TestLease_setMessageOnlyWhileRunning: a running stream's message (a retried error), position or
// heartbeat written late does not overwrite or clear what a stop recorded; while Running the
// message is written, and cleared by progress.
func TestLease_setMessageOnlyWhileRunning(t *testing.T) {
	store, rec, a := runningOwner(t, "")
	ctx := context.Background()
	if err := a.SetMessage(ctx, "retrying: connection refused"); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, store, "wf").Message; got != "retrying: connection refused" {
		t.Errorf("message while Running = %q, want the error", got)
	}
	if _, err := store.DB().ExecContext(ctx, a.HeartbeatSQL(1)); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, store, "wf").Message; got != "" {
		t.Errorf("message after a heartbeat while Running = %q, want it cleared", got)
	}
	if err := a.SetMessage(ctx, "retrying: connection refused"); err != nil {
		t.Fatal(err)
	}
	if err := store.SetState(ctx, rec.ID, workflow.StateStopped, workflow.StopRequestedMessage); err != nil {
		t.Fatal(err)
	}
	if err := a.SetMessage(ctx, "retrying: connection refused again"); err != nil {
		t.Errorf("SetMessage on a Stopped record = %v, want nil (the lease is still ours)", err)
	}
	// A commit or heartbeat in flight when the stop landed does not erase its message either.
	for _, q := range []string{a.PositionSQL("MariaDB/0-1-2", 2, 2), a.HeartbeatSQL(3)} {
		if _, err := store.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if r := mustGet(t, store, "wf"); r.State != workflow.StateStopped || r.Message != workflow.StopRequestedMessage {
		t.Errorf("record after a late message: state %q message %q, want Stopped, %q", r.State, r.Message, workflow.StopRequestedMessage)
	}
}

// TestLease_signalStopKeepsStopReason: a stop by signal (Stopped, no message) right after a
// vplayer stop keeps the vplayer stop's reason; on a Running record it clears the message.
func TestLease_signalStopKeepsStopReason(t *testing.T) {
	store, rec, a := runningOwner(t, "retrying: connection refused")
	ctx := context.Background()
	if err := a.SetState(ctx, workflow.StateStopped, ""); err != nil {
		t.Fatal(err)
	}
	if r := mustGet(t, store, "wf"); r.State != workflow.StateStopped || r.Message != "" {
		t.Errorf("signal stop of a Running record: state %q message %q, want Stopped and no message", r.State, r.Message)
	}
	if err := store.SetState(ctx, rec.ID, workflow.StateStopped, workflow.StopRequestedMessage); err != nil {
		t.Fatal(err)
	}
	if err := a.SetState(ctx, workflow.StateStopped, ""); err != nil {
		t.Fatal(err)
	}
	if r := mustGet(t, store, "wf"); r.State != workflow.StateStopped || r.Message != workflow.StopRequestedMessage {
		t.Errorf("signal stop after vplayer stop: state %q message %q, want Stopped, %q", r.State, r.Message, workflow.StopRequestedMessage)
	}
}

// runningOwner returns a lease store whose workflow "wf" owner-a owns, Running with message msg;
// the lease is released when the test ends.
func runningOwner(t *testing.T, msg string) (*workflow.Store, workflow.Record, *workflow.Lease) {
	t.Helper()
	store, rec := leaseStore(t)
	ctx := context.Background()
	a, _, err := store.Acquire(ctx, rec.ID, "wf", "owner-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Release() })
	if err := a.SetState(ctx, workflow.StateRunning, msg); err != nil {
		t.Fatal(err)
	}
	return store, rec, a
}

// TestLease_endCopyKeepsAStop: the end of a copy sets Running only over Copying: a vplayer stop
// that landed as the copy ended stays, with its reason.
func TestLease_endCopyKeepsAStop(t *testing.T) {
	store, rec, a := runningOwner(t, "")
	ctx := context.Background()
	if err := a.SetState(ctx, workflow.StateCopying, "copying: 0 of 1 tables done"); err != nil {
		t.Fatal(err)
	}
	if err := a.EndCopy(ctx); err != nil {
		t.Fatal(err)
	}
	if r := mustGet(t, store, "wf"); r.State != workflow.StateRunning || r.Message != "" {
		t.Errorf("after the copy: state %q message %q, want Running and no message", r.State, r.Message)
	}
	if err := a.SetState(ctx, workflow.StateCopying, "copying: 0 of 1 tables done"); err != nil {
		t.Fatal(err)
	}
	if err := store.SetState(ctx, rec.ID, workflow.StateStopped, workflow.StopRequestedMessage); err != nil {
		t.Fatal(err)
	}
	if err := a.EndCopy(ctx); err != nil {
		t.Errorf("EndCopy on a Stopped record = %v, want nil (the lease is still ours)", err)
	}
	if r := mustGet(t, store, "wf"); r.State != workflow.StateStopped || r.Message != workflow.StopRequestedMessage {
		t.Errorf("a stop as the copy ended: state %q message %q, want Stopped, %q", r.State, r.Message, workflow.StopRequestedMessage)
	}
}
