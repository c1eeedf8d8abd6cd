package workflow_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
	"github.com/vplayer/vplayer/workflow"
)

// TestInit_upgradesConcurrently: processes starting together on a record table an older vplayer
// created (without the lease and pause columns, and no copy_state table) all start: each adds the missing columns or finds
// another process added them, and the workflow's record survives.
func TestInit_upgradesConcurrently(t *testing.T) {
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
	if _, err := db.ExecContext(t.Context(), `INSERT INTO vreplication (workflow, source, pos, state, options)
VALUES ('orders', '{}', 'MariaDB/0-1-7', 'Stopped', '{}')`); err != nil {
		t.Fatal(err)
	}
	const processes = 6
	errs := make([]error, processes)
	var wg sync.WaitGroup
	for i := range processes {
		wg.Go(func() { errs[i] = workflow.New(db, sidecar).Init(t.Context()) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Init of process %d: %v", i, err)
		}
	}
	var cols string
	if err := db.QueryRowContext(t.Context(), `SELECT GROUP_CONCAT(COLUMN_NAME ORDER BY ORDINAL_POSITION) FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'vreplication'`, sidecar).Scan(&cols); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"owner", "epoch", "lease_until", "pause_pos", "pause_until"} {
		if !strings.Contains(","+cols+",", ","+want+",") {
			t.Errorf("vreplication columns %s lack %s", cols, want)
		}
	}
	// The copy phase's state table is new too: Init creates it beside the old record table.
	var n int
	if err := db.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'copy_state'", sidecar).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("after the upgrade, %s has %d copy_state tables, want 1", sidecar, n)
	}
	r, err := workflow.New(db, sidecar).Get(t.Context(), "orders")
	if err != nil || r.Pos != "MariaDB/0-1-7" || r.State != "Stopped" {
		t.Errorf("record after the upgrade: %+v, %v; want pos MariaDB/0-1-7, Stopped", r, err)
	}
}
