package workflow_test

import (
	"testing"
	"time"

	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
	"github.com/vplayer/vplayer/workflow"
)

// oldSidecar returns a store over a sidecar an older vplayer created: no lease, throttle or pause
// columns, no copy_state or log table, and one Running record, orders.
func oldSidecar(t *testing.T) *workflow.Store {
	t.Helper()
	_, target := mysqltest.Pair(t)
	sidecar := mysqltest.DBName(t) + "_vt"
	db := mysqltest.DB(t, target, sidecar)
	if _, err := db.ExecContext(t.Context(), `CREATE TABLE vreplication (
  id int unsigned NOT NULL AUTO_INCREMENT,
  workflow varbinary(255) NOT NULL,
  source mediumblob NOT NULL,
  pos varbinary(10000) NOT NULL DEFAULT '',
  stop_pos varbinary(10000) DEFAULT NULL,
  db_name varbinary(255) NOT NULL DEFAULT '',
  state varbinary(100) NOT NULL DEFAULT 'Init',
  message varbinary(1000) NOT NULL DEFAULT '',
  time_updated bigint NOT NULL DEFAULT 0,
  transaction_timestamp bigint NOT NULL DEFAULT 0,
  time_heartbeat bigint NOT NULL DEFAULT 0,
  options mediumblob NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY workflow (workflow))`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(t.Context(), `INSERT INTO vreplication (workflow, source, pos, state, options) VALUES ('orders', '{}', 'MariaDB/0-1-7', 'Running', '{}')`); err != nil {
		t.Fatal(err)
	}
	return workflow.New(db, sidecar)
}

// TestStore_statusReadsOldSidecar reads a sidecar an older vplayer created as status does: what
// is missing is unknown, never an error.
func TestStore_statusReadsOldSidecar(t *testing.T) {
	s := oldSidecar(t)
	r := mustGet(t, s, "orders")
	details, now, err := s.Details(t.Context())
	if err != nil {
		t.Fatalf("Details on an old sidecar: %v", err)
	}
	d, ok := details[r.ID]
	if !ok || d.HasLease || d.HasThrottle || d.HasPause || now.IsZero() {
		t.Errorf("Details on an old sidecar=%+v (found %v), target clock %v; want every part unknown, the clock read", d, ok, now)
	}
	if _, ok, err := s.CopyProgresses(t.Context()); ok || err != nil {
		t.Errorf("CopyProgresses on an old sidecar: known %v, %v; want unknown, no error", ok, err)
	}
	if _, ok, err := s.LastLogs(t.Context(), r.ID, 5); ok || err != nil {
		t.Errorf("LastLogs on an old sidecar: known %v, %v; want unknown, no error", ok, err)
	}
}

func TestStore_statusReads(t *testing.T) {
	s, _ := newStore(t)
	r := mustCreate(t, s, newRecord("orders"))
	other := mustCreate(t, s, newRecord("other"))
	lease, _, err := s.Acquire(t.Context(), r.ID, "orders", "owner-1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release()
	if err := s.Throttle(t.Context(), "orders", 0, "maintenance"); err != nil {
		t.Fatal(err)
	}
	if err := s.Throttle(t.Context(), "other", time.Hour, ""); err != nil {
		t.Fatal(err)
	}
	details, now, err := s.Details(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	d := details[r.ID]
	if !d.HasLease || !d.HasThrottle || !d.HasPause || d.Owner != "owner-1" || d.Epoch != lease.Epoch() || !d.Leased(now) {
		t.Errorf("Details(orders)=%+v at %v, want owner-1's live lease at epoch %d", d, now, lease.Epoch())
	}
	if !d.Throttled(now) || !d.ThrottleForever || d.ThrottleReason != "maintenance" {
		t.Errorf("Details(orders) throttle=%+v, want a throttle without end, reason maintenance", d)
	}
	o := details[other.ID]
	if o.Leased(now) || !o.Throttled(now) || o.ThrottleForever || o.ThrottleUntil.Sub(now) < 59*time.Minute || o.Paused(now) {
		t.Errorf("Details(other)=%+v at %v, want no owner, a throttle for an hour, no pause", o, now)
	}
	for i := range 4 {
		if err := s.AddLog(t.Context(), r.ID, "State", workflow.StateRunning, "row "+string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	logs, ok, err := s.LastLogs(t.Context(), r.ID, 2)
	if err != nil || !ok || len(logs) != 2 || logs[0].Message != "row c" || logs[1].Message != "row d" || logs[0].CreatedAt == 0 {
		t.Errorf("LastLogs(2)=%+v, %v, %v; want rows c and d, oldest first", logs, ok, err)
	}
	if err := s.PlanCopy(t.Context(), r.ID, []workflow.TableCopy{{Table: "a", Estimated: 3, DeferredKeys: []string{"KEY `k` (`v`)"}}}); err != nil {
		t.Fatal(err)
	}
	copies, ok, err := s.CopyProgresses(t.Context())
	if err != nil || !ok {
		t.Fatalf("CopyProgresses: %v, %v", ok, err)
	}
	if c := copies[r.ID]; len(c.Tables) != 1 || c.Tables[0].Estimated != 3 || len(c.Tables[0].DeferredKeys) != 1 || c.ToPlan {
		t.Errorf("CopyProgresses(orders)=%+v, want table a planned, its key deferred", c)
	}
	if c, ok := copies[other.ID]; ok {
		t.Errorf("CopyProgresses(other)=%+v, want none", c)
	}
}
