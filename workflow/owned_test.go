package workflow_test

import (
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
	"github.com/vplayer/vplayer/workflow"
)

// A Vitess tablet's sidecar tables, shaped after the columns Vitess's documentation and schema
// files give them: the names are often vplayer's, the schema is not.
const (
	vitessVreplication = `CREATE TABLE vreplication (
  id int NOT NULL AUTO_INCREMENT,
  workflow varbinary(1000) DEFAULT NULL,
  source mediumblob NOT NULL,
  pos varbinary(10000) NOT NULL,
  stop_pos varbinary(10000) DEFAULT NULL,
  max_tps bigint NOT NULL,
  max_replication_lag bigint NOT NULL,
  cell varbinary(1000) DEFAULT NULL,
  tablet_types varbinary(100) DEFAULT NULL,
  time_updated bigint NOT NULL,
  transaction_timestamp bigint NOT NULL,
  state varbinary(100) NOT NULL,
  message varbinary(1000) DEFAULT NULL,
  db_name varbinary(255) NOT NULL,
  rows_copied bigint NOT NULL DEFAULT 0,
  tags varbinary(1024) NOT NULL DEFAULT '',
  time_heartbeat bigint NOT NULL DEFAULT 0,
  workflow_type int NOT NULL DEFAULT 0,
  time_throttled bigint NOT NULL DEFAULT 0,
  component_throttled varchar(255) NOT NULL DEFAULT '',
  workflow_sub_type int NOT NULL DEFAULT 0,
  defer_secondary_keys tinyint(1) NOT NULL DEFAULT 0,
  PRIMARY KEY (id),
  KEY workflow_idx (workflow(64))
) ENGINE=InnoDB`
	vitessVreplicationLog = `CREATE TABLE vreplication_log (
  id bigint NOT NULL AUTO_INCREMENT,
  vrepl_id int NOT NULL,
  type varbinary(256) NOT NULL,
  state varbinary(100) NOT NULL,
  created_at datetime NULL DEFAULT CURRENT_TIMESTAMP,
  updated_at datetime NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  message text NOT NULL,
  count bigint NOT NULL DEFAULT 1,
  PRIMARY KEY (id),
  KEY vrepl_id_idx (vrepl_id)
) ENGINE=InnoDB`
	vitessCopyState = `CREATE TABLE copy_state (
  id bigint unsigned NOT NULL AUTO_INCREMENT,
  vrepl_id int NOT NULL,
  table_name varbinary(128) NOT NULL,
  lastpk varbinary(2000) DEFAULT NULL,
  PRIMARY KEY (id),
  KEY vrepl_id (vrepl_id, table_name)
) ENGINE=InnoDB`
	// An older vplayer's record table that lost a column of the first version's.
	vplayerWithoutOptions = `CREATE TABLE vreplication (
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
  PRIMARY KEY (id),
  UNIQUE KEY workflow (workflow))`
)

// sidecarSchema returns the definitions of the sidecar database's tables, by name.
func sidecarSchema(t *testing.T, db *sql.DB, sidecar string) map[string]string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?", sidecar)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	defs := map[string]string{}
	for _, n := range names {
		var name, def string
		if err := db.QueryRowContext(t.Context(), "SHOW CREATE TABLE `"+n+"`").Scan(&name, &def); err != nil {
			t.Fatal(err)
		}
		defs[n] = def
	}
	return defs
}

// TestStore_InitRefusesForeignTables: a sidecar database holding a table of vplayer's names with
// a schema vplayer did not create (Vitess's, or a damaged one) is refused with an error that
// names the table, why, and --sidecar-db; nothing in the database is created or altered.
func TestStore_InitRefusesForeignTables(t *testing.T) {
	_, target := mysqltest.Pair(t)
	tests := []struct {
		name   string
		tables []string
		want   string // in the error, after the table's name
	}{
		{"vitess", []string{vitessVreplication, vitessVreplicationLog, vitessCopyState}, "`vreplication` (it has column max_tps, which vplayer's has not)"},
		{"vitess_log_only", []string{vitessVreplicationLog}, "`vreplication_log` (its column created_at is datetime, vplayer's is timestamp)"},
		{"vitess_copy_state_only", []string{vitessCopyState}, "`copy_state` (it has column id, which vplayer's has not)"},
		{"first_column_missing", []string{vplayerWithoutOptions}, "`vreplication` (it has no column options)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sidecar := mysqltest.DBName(t) + "_vt"
			db := mysqltest.DB(t, target, sidecar)
			for _, q := range tt.tables {
				if _, err := db.ExecContext(t.Context(), q); err != nil {
					t.Fatal(err)
				}
			}
			before := sidecarSchema(t, db, sidecar)
			err := workflow.New(db, sidecar).Init(t.Context())
			if !errors.Is(err, workflow.ErrForeignTable) {
				t.Fatalf("Init=%v, want an error wrapping ErrForeignTable", err)
			}
			for _, want := range []string{"`" + sidecar + "`." + tt.want, "--sidecar-db (now " + sidecar + ")"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Init's error %q does not say %q", err, want)
				}
			}
			after := sidecarSchema(t, db, sidecar)
			if len(after) != len(before) {
				t.Errorf("Init created tables beside another program's: %d before, %d after", len(before), len(after))
			}
			for name, def := range before {
				if after[name] != def {
					t.Errorf("Init altered %s:\n%s\nwas\n%s", name, after[name], def)
				}
			}
		})
	}
}

// TestStore_InitMarksItsTables: the tables Init creates carry vplayer's comment, and Init over
// them, and over the tables an older vplayer created (no comment, its columns), succeeds.
func TestStore_InitMarksItsTables(t *testing.T) {
	s, db := newStore(t)
	rows, err := db.QueryContext(t.Context(), "SELECT TABLE_NAME, TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?", s.Sidecar())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var name, comment string
		if err := rows.Scan(&name, &comment); err != nil {
			t.Fatal(err)
		}
		n++
		if comment != "vplayer sidecar table" {
			t.Errorf("%s's comment %q, want vplayer's", name, comment)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if got, want := n, 3; got != want {
		t.Errorf("%d sidecar tables, want %d", got, want)
	}
	if err := s.Init(t.Context()); err != nil {
		t.Errorf("Init over its own tables: %v", err)
	}
	// An older vplayer's tables: Init upgrades them (see TestInit_upgradesConcurrently).
	t.Run("older", func(t *testing.T) {
		if err := oldSidecar(t).Init(t.Context()); err != nil {
			t.Errorf("Init over an older vplayer's tables: %v", err)
		}
	})
}
