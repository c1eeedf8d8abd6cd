package workflow_test

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/vplayer/vplayer/internal/eventually"
	"github.com/vplayer/vplayer/workflow"
)

// ownerSession opens a connection standing for an owner's applier session and returns it with
// its connection id.
func ownerSession(t *testing.T, store *workflow.Store) (*sql.Conn, int64) {
	t.Helper()
	c, err := store.DB().Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var id int64
	if err := c.QueryRowContext(t.Context(), "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	return c, id
}

// alive reports whether connection id is in the server's processlist.
func alive(t *testing.T, store *workflow.Store, id int64) bool {
	t.Helper()
	var n int
	if err := store.DB().QueryRowContext(t.Context(), "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// TestLease_takeoverEndsOwnerSession: the owner's recorded session holds the record row in an
// open transaction, as a frozen owner's batch does; a standby is refused while the lease is live
// and leaves the session alone, and once it expired takes the lease at once, killing the
// session, whose transaction rolls back.
func TestLease_takeoverEndsOwnerSession(t *testing.T) {
	store, rec := leaseStore(t)
	ctx := t.Context()
	a, _, err := store.Acquire(ctx, rec.ID, "wf", "owner-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	conn, id := ownerSession(t, store)
	if err := a.RecordSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.Acquire(ctx, rec.ID, "wf", "owner-b", time.Minute); !errors.Is(err, workflow.ErrLeaseHeld) {
		t.Fatalf("Acquire of a live lease = %v, want ErrLeaseHeld", err)
	}
	if !alive(t, store, id) {
		t.Fatal("a standby killed the session of an owner whose lease is live")
	}
	expireLease(t, store, rec.ID)
	mustConn(t, conn, "BEGIN")
	mustConn(t, conn, "UPDATE "+store.Sidecar()+".vreplication SET time_updated = 424242 WHERE id = "+strconv.FormatInt(rec.ID, 10))

	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	start := time.Now()
	b, _, err := store.Acquire(actx, rec.ID, "wf", "owner-b", time.Minute)
	if err != nil {
		t.Fatalf("Acquire of the expired lease whose owner holds the record row = %v, want it taken over", err)
	}
	t.Logf("took over in %v", time.Since(start).Round(time.Millisecond))
	if ended, err := b.Ended(); err != nil || len(ended) != 1 || ended[0] != id {
		t.Errorf("Ended() = %v, %v; want [%d], nil", ended, err, id)
	}
	if alive(t, store, id) {
		t.Errorf("the old owner's session %d is still alive after the takeover", id)
	}
	if got := store.DB().QueryRowContext(ctx, "SELECT time_updated FROM "+store.Sidecar()+".vreplication WHERE id = ?", rec.ID); got != nil {
		var tu int64
		if err := got.Scan(&tu); err != nil || tu == 424242 {
			t.Errorf("the old owner's open update was not rolled back: time_updated = %d, %v", tu, err)
		}
	}
	if err := a.RecordSession(ctx, id); !errors.Is(err, workflow.ErrLostOwnership) {
		t.Errorf("the old owner's RecordSession = %v, want ErrLostOwnership", err)
	}
}

// TestLease_takeoverSparesSessionsOfAnotherServerRun: a session recorded before the target
// restarted (another boot time) names some other client's connection now: it is not killed.
func TestLease_takeoverSparesSessionsOfAnotherServerRun(t *testing.T) {
	store, rec := leaseStore(t)
	ctx := t.Context()
	if _, _, err := store.Acquire(ctx, rec.ID, "wf", "owner-a", time.Minute); err != nil {
		t.Fatal(err)
	}
	_, id := ownerSession(t, store)
	if _, err := store.DB().ExecContext(ctx, "UPDATE "+store.Sidecar()+".vreplication SET sessions = ? WHERE id = ?", "1000:"+strconv.FormatInt(id, 10), rec.ID); err != nil {
		t.Fatal(err)
	}
	expireLease(t, store, rec.ID)
	b, _, err := store.Acquire(ctx, rec.ID, "wf", "owner-b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if ended, _ := b.Ended(); len(ended) != 0 || !alive(t, store, id) {
		t.Errorf("a session recorded in another server run was killed (ended %v)", ended)
	}
}

// TestLease_addLogFenced: the owner's log rows are written while it holds the lease; after a
// takeover its AddLog reports the loss and writes nothing.
func TestLease_addLogFenced(t *testing.T) {
	store, rec := leaseStore(t)
	ctx := t.Context()
	a, _, err := store.Acquire(ctx, rec.ID, "wf", "owner-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		var n int
		if err := store.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM "+store.Sidecar()+".vreplication_log WHERE vrepl_id = ?", rec.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := a.AddLog(ctx, "Error", workflow.StateRunning, "before"); err != nil || count() != 1 {
		t.Fatalf("owner's AddLog = %v, %d rows; want nil, 1", err, count())
	}
	expireLease(t, store, rec.ID)
	if _, _, err := store.Acquire(ctx, rec.ID, "wf", "owner-b", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := a.AddLog(ctx, "Error", workflow.StateError, "terminal error: after"); !errors.Is(err, workflow.ErrLostOwnership) {
		t.Errorf("old owner's AddLog = %v, want ErrLostOwnership", err)
	}
	if n := count(); n != 1 {
		t.Errorf("%d log rows after the old owner's AddLog, want 1", n)
	}
}

// TestLease_renewalDoesNotQueueBehindRecordLock: while another session holds the record row, the
// keepalive's renewals give up after the renewal session's short lock wait (none is left waiting
// on the server), Overdue reports the missed renewals past the ttl, and renewals resume once the
// row is free.
func TestLease_renewalDoesNotQueueBehindRecordLock(t *testing.T) {
	store, rec := leaseStore(t)
	ctx := t.Context()
	const ttl = 2 * time.Second
	a, _, err := store.Acquire(ctx, rec.ID, "wf", "owner-a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	a.Keep()
	defer a.Release()
	conn, _ := ownerSession(t, store)
	mustConn(t, conn, "BEGIN")
	mustConn(t, conn, "UPDATE "+store.Sidecar()+".vreplication SET time_updated = time_updated + 1 WHERE id = "+strconv.FormatInt(rec.ID, 10))
	locked := time.Now()
	for time.Since(locked) < 2*ttl {
		var waiting int
		if err := store.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%SET lease_until%' AND TIME_MS > 1500").Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			t.Fatalf("%d renewals have waited over 1.5s on the locked record row", waiting)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := a.Overdue(time.Now()); !errors.Is(err, workflow.ErrRenewalOverdue) {
		t.Errorf("Overdue with the record row locked for 2 ttl = %v, want ErrRenewalOverdue", err)
	} else {
		t.Log(err)
	}
	mustConn(t, conn, "ROLLBACK")
	eventually.Must(t, 2*ttl, 50*time.Millisecond, "renewals to resume after the row was released", func() error {
		return a.Overdue(time.Now())
	})
	if a.Err() != nil {
		t.Errorf("lease lost: %v", a.Err())
	}
}

func mustConn(t *testing.T, c *sql.Conn, q string) {
	t.Helper()
	if _, err := c.ExecContext(t.Context(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}
