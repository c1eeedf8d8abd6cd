package workflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/vplayer/vplayer/sqlq"
)

// StateCopying is the state of a workflow copying its tables before it replicates (SPEC 7a).
const StateCopying = "Copying"

// copyStateTable is the copy phase's per-table state, one row per replicated table of a workflow
// in copy. A chunk's row change here is committed in the target transaction that writes the
// chunk's rows, so the state says exactly what the target holds.
const copyStateTable = `CREATE TABLE IF NOT EXISTS %s (
  vrepl_id int unsigned NOT NULL,
  table_name varbinary(255) NOT NULL,
  lastpk varbinary(10000) DEFAULT NULL,
  copied_at varbinary(10000) NOT NULL DEFAULT '',
  rows_copied bigint NOT NULL DEFAULT 0,
  rows_estimated bigint NOT NULL DEFAULT 0,
  chunks bigint NOT NULL DEFAULT 0,
  done tinyint NOT NULL DEFAULT 0,
  started_at bigint NOT NULL DEFAULT 0,
  updated_at bigint NOT NULL DEFAULT 0,
  deferred_keys blob DEFAULT NULL,
  PRIMARY KEY (vrepl_id, table_name)
) ENGINE=InnoDB`

// copyMarker is the table name of the copy state row that a workflow created to copy holds until
// its copy is planned: the intent outlives the record's state, which a stop or an error before
// the plan replaces (SPEC 7a: without it, the next run would replicate into empty tables).
const copyMarker = ""

// TableCopy is one table's copy state.
type TableCopy struct {
	Table string
	// LastPK is the key of the last row copied, each column as tablekey.Expr reads it;
	// nil before the first chunk, and for a table without a usable key until it is done.
	LastPK []string
	// CopiedAt is the source position of the snapshot the last chunk was read from.
	CopiedAt string
	// Rows counts the rows copied, Estimated the table's rows as the source estimated them when
	// the copy was planned, Chunks the chunks committed.
	Rows, Estimated, Chunks int64
	Done                    bool
	// StartedAt is when the first chunk committed, UpdatedAt when the last did (unix seconds).
	StartedAt, UpdatedAt int64
	// DeferredKeys are the definitions of the table's secondary keys that the copy dropped when it
	// created the table (as SHOW CREATE TABLE prints them: "KEY `k` (`c`)"), to be built once its
	// rows are copied; nil when there are none left to build.
	DeferredKeys []string
}

// Pending reports whether the table's copy has anything left to do: rows, or keys to build.
func (t TableCopy) Pending() bool { return !t.Done || len(t.DeferredKeys) > 0 }

// CopyState returns the copy state of workflow id, by table name; none when the workflow has no
// copy planned.
func (s *Store) CopyState(ctx context.Context, id int64) ([]TableCopy, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT table_name, lastpk, copied_at, rows_copied, rows_estimated, chunks, done, started_at, updated_at, deferred_keys FROM "+
		s.table("copy_state")+" WHERE vrepl_id = ? AND table_name <> '' ORDER BY table_name", id)
	if err != nil {
		return nil, fmt.Errorf("read the copy state of workflow %d: %w", id, err)
	}
	defer rows.Close()
	var out []TableCopy
	for rows.Next() {
		var c TableCopy
		var lastpk, keys sql.NullString
		if err := rows.Scan(&c.Table, &lastpk, &c.CopiedAt, &c.Rows, &c.Estimated, &c.Chunks, &c.Done, &c.StartedAt, &c.UpdatedAt, &keys); err != nil {
			return nil, fmt.Errorf("read the copy state of workflow %d: %w", id, err)
		}
		if lastpk.Valid {
			if err := json.Unmarshal([]byte(lastpk.String), &c.LastPK); err != nil {
				return nil, fmt.Errorf("copy state of workflow %d, table %s: lastpk %q: %w", id, c.Table, lastpk.String, err)
			}
		}
		if keys.Valid {
			if err := json.Unmarshal([]byte(keys.String), &c.DeferredKeys); err != nil {
				return nil, fmt.Errorf("copy state of workflow %d, table %s: deferred_keys %q: %w", id, c.Table, keys.String, err)
			}
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// CopyToPlan reports whether workflow id was created to copy and its copy is not planned yet.
func (s *Store) CopyToPlan(ctx context.Context, id int64) (bool, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+s.table("copy_state")+" WHERE vrepl_id = ? AND table_name = ''", id).Scan(&n); err != nil {
		return false, fmt.Errorf("read the copy state of workflow %d: %w", id, err)
	}
	return n > 0, nil
}

// CopyUnfinished reports whether workflow id's copy is to come (marked, not planned yet) or has
// something left to do: rows, or keys to build.
func (s *Store) CopyUnfinished(ctx context.Context, id int64) (bool, error) {
	state, err := s.CopyState(ctx, id)
	if err != nil {
		return false, err
	}
	for _, t := range state {
		if t.Pending() {
			return true, nil
		}
	}
	if len(state) == 0 {
		return s.CopyToPlan(ctx, id)
	}
	return false, nil
}

// PlanCopy records the tables of workflow id's copy, each not started, and clears the mark of a
// copy to plan, in one transaction; a table already planned keeps its state.
func (s *Store) PlanCopy(ctx context.Context, id int64, tables []TableCopy) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("plan the copy of workflow %d: %w", id, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "DELETE FROM "+s.table("copy_state")+" WHERE vrepl_id = ? AND table_name = ''", id); err != nil {
		return fmt.Errorf("plan the copy of workflow %d: %w", id, err)
	}
	if len(tables) > 0 {
		var b strings.Builder
		b.WriteString("INSERT IGNORE INTO " + s.table("copy_state") + " (vrepl_id, table_name, rows_estimated, deferred_keys) VALUES ")
		for i, t := range tables {
			if i > 0 {
				b.WriteString(", ")
			}
			keys := "NULL"
			if len(t.DeferredKeys) > 0 {
				j, _ := json.Marshal(t.DeferredKeys)
				keys = sqlq.String(string(j))
			}
			fmt.Fprintf(&b, "(%d, %s, %d, %s)", id, sqlq.String(t.Table), t.Estimated, keys)
		}
		if _, err := tx.ExecContext(ctx, b.String()); err != nil {
			return fmt.Errorf("plan the copy of workflow %d: %w", id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("plan the copy of workflow %d: %w", id, err)
	}
	return nil
}

// ChunkSQL returns the statement that records a committed chunk of table: its last key (nil for
// a table without a usable key), the source position it was read at, rows more copied and
// whether the table is done. first says the chunk starts the table's copy (again): its counts
// start from this chunk. It goes in the chunk's own target transaction. now is unix seconds.
func (s *Store) ChunkSQL(id int64, table string, lastpk []string, pos string, rows int64, first, done bool, now int64) string {
	pk := "NULL"
	if lastpk != nil {
		j, _ := json.Marshal(lastpk)
		pk = sqlq.String(string(j))
	}
	n, r := strconv.FormatInt(now, 10), strconv.FormatInt(rows, 10)
	d := "0"
	if done {
		d = "1"
	}
	set := "rows_copied = rows_copied + " + r + ", chunks = chunks + 1, started_at = IF(started_at = 0, " + n + ", started_at)"
	if first {
		set = "rows_copied = " + r + ", chunks = 1, started_at = " + n
	}
	return "UPDATE " + s.table("copy_state") + " SET lastpk = " + pk + ", copied_at = " + sqlq.String(pos) + ", " + set +
		", done = " + d + ", updated_at = " + n + " WHERE vrepl_id = " + strconv.FormatInt(id, 10) + " AND table_name = " + sqlq.String(table)
}

// KeysBuiltSQL returns the statement that records that table's deferred keys are built.
func (s *Store) KeysBuiltSQL(id int64, table string) string {
	return "UPDATE " + s.table("copy_state") + " SET deferred_keys = NULL WHERE vrepl_id = " + strconv.FormatInt(id, 10) + " AND table_name = " + sqlq.String(table)
}

// DeleteCopyState forgets workflow id's copy state.
func (s *Store) DeleteCopyState(ctx context.Context, id int64) error {
	if _, err := s.db.ExecContext(ctx, "DELETE FROM "+s.table("copy_state")+" WHERE vrepl_id = ?", id); err != nil {
		return fmt.Errorf("delete the copy state of workflow %d: %w", id, err)
	}
	return nil
}

// EndCopy sets the record's state from Copying to Running, its message cleared, if the lease is
// still ours; a record whose state changed meanwhile (a vplayer stop as the copy ended) keeps it.
func (l *Lease) EndCopy(ctx context.Context) error {
	// Assignments run left to right: message is decided from the state before this update.
	return l.update(ctx, "message = IF(state = '"+StateCopying+"', '', message), state = IF(state = '"+StateCopying+"', '"+StateRunning+"', state), time_updated = UNIX_TIMESTAMP()")
}

// SetActiveMessage is SetMessage for a workflow that is Running or Copying: the copy phase's
// progress and its errors. Like SetMessage, it never overwrites what a stop or a terminal error
// recorded.
func (l *Lease) SetActiveMessage(ctx context.Context, message string) error {
	return l.update(ctx, "message = IF(state IN ('"+StateRunning+"', '"+StateCopying+"'), ?, message)", Truncate(message))
}
