package workflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Reads for vplayer status. They read a sidecar as they find it, whatever vplayer created it and
// without upgrading it (Init is the writer's): a column or a table that an older vplayer did not
// create is reported unknown, never an error.

// Details are the columns of a record that later versions added to vreplication, as a status
// shows them: the lease, the manual throttle and the vplayer diff pause. Each Has field says
// whether the sidecar has the columns at all.
type Details struct {
	// HasLease says the sidecar has the lease columns (owner, epoch, lease_until).
	HasLease bool
	// Owner is the lease's holder ("" when none holds it), Epoch its fencing token and
	// LeaseUntil its expiry on the target's clock (zero when released or never taken).
	Owner      string
	Epoch      uint64
	LeaseUntil time.Time
	// HasThrottle says the sidecar has the manual throttle's columns.
	HasThrottle bool
	// ThrottleUntil is the end of the manual throttle (vplayer throttle) on the target's clock,
	// zero when there is none; ThrottleForever says it has no end. ThrottleReason is its reason.
	ThrottleUntil   time.Time
	ThrottleForever bool
	ThrottleReason  string
	// HasPause says the sidecar has the pause columns.
	HasPause bool
	// Pause is the vplayer diff pause request (PauseHold, PauseHeld or a position), "" when none;
	// PauseUntil is its lease's end on the target's clock.
	Pause      string
	PauseUntil time.Time
}

// Leased reports whether a live owner holds the lease at now (the target's clock).
func (d Details) Leased(now time.Time) bool {
	return d.Owner != "" && !d.LeaseUntil.Before(now)
}

// Throttled reports whether the manual throttle holds at now (the target's clock).
func (d Details) Throttled(now time.Time) bool {
	return d.ThrottleForever || !d.ThrottleUntil.IsZero() && d.ThrottleUntil.After(now)
}

// Paused reports whether a live vplayer diff pause is in force at now (the target's clock).
func (d Details) Paused(now time.Time) bool {
	return d.Pause != "" && !d.PauseUntil.Before(now)
}

// detailColumns are the columns Details reads, each with the value a sidecar without it reads as.
var detailColumns = []struct{ name, missing string }{
	{"owner", "''"}, {"epoch", "0"}, {"lease_until", "0"},
	{"throttle_until", "0"}, {"throttle_reason", "''"},
	{"pause_pos", "NULL"}, {"pause_until", "0"},
}

// Columns returns the columns table of the sidecar has, by name; none when the table does not
// exist.
func (s *Store) Columns(ctx context.Context, table string) (map[string]bool, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", s.sidecar, table)
	if err != nil {
		return nil, fmt.Errorf("read the columns of %s: %w", s.table(table), err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, fmt.Errorf("read the columns of %s: %w", s.table(table), err)
		}
		out[strings.ToLower(c)] = true
	}
	return out, rows.Err()
}

// Details reads every record's Details, by record id, and the target's clock (milliseconds) in
// the same statement, against which the lease, throttle and pause times compare.
func (s *Store) Details(ctx context.Context) (map[int64]Details, time.Time, error) {
	cols, err := s.Columns(ctx, "vreplication")
	if err != nil {
		return nil, time.Time{}, err
	}
	sel := []string{"id", nowMillis}
	for _, c := range detailColumns {
		if cols[c.name] {
			sel = append(sel, c.name)
		} else {
			sel = append(sel, c.missing)
		}
	}
	rows, err := s.db.QueryContext(ctx, "SELECT "+strings.Join(sel, ", ")+" FROM "+s.table("vreplication"))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("read workflow details: %w", err)
	}
	defer rows.Close()
	out := map[int64]Details{}
	var now int64
	for rows.Next() {
		var id, leaseUntil, throttleUntil, pauseUntil int64
		var d Details
		var pause sql.NullString
		if err := rows.Scan(&id, &now, &d.Owner, &d.Epoch, &leaseUntil, &throttleUntil, &d.ThrottleReason, &pause, &pauseUntil); err != nil {
			return nil, time.Time{}, fmt.Errorf("read workflow details: %w", err)
		}
		d.HasLease = cols["owner"] && cols["epoch"] && cols["lease_until"]
		d.HasThrottle = cols["throttle_until"] && cols["throttle_reason"]
		d.HasPause = cols["pause_pos"] && cols["pause_until"]
		d.LeaseUntil = millis(leaseUntil)
		d.ThrottleForever = throttleUntil >= maxThrottleMillis
		if !d.ThrottleForever {
			d.ThrottleUntil = millis(throttleUntil)
		}
		d.Pause, d.PauseUntil = pause.String, millis(pauseUntil)
		out[id] = d
	}
	if err := rows.Err(); err != nil {
		return nil, time.Time{}, fmt.Errorf("read workflow details: %w", err)
	}
	if len(out) == 0 {
		if err := s.db.QueryRowContext(ctx, "SELECT "+nowMillis).Scan(&now); err != nil {
			return nil, time.Time{}, fmt.Errorf("read the target's clock: %w", err)
		}
	}
	return out, time.UnixMilli(now), nil
}

// millis is a column of unix milliseconds as a time, zero for 0.
func millis(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// LogRow is one row of a workflow's vreplication_log.
type LogRow struct {
	ID      int64
	Type    string
	State   string
	Message string
	// Count is how many times the row was logged in a row (repeats increment it).
	Count int64
	// CreatedAt is when it was first logged, UpdatedAt when last (unix seconds).
	CreatedAt, UpdatedAt int64
}

// LastLogs returns the last n rows of workflow id's log, oldest first. ok is false when the
// sidecar has no log table.
func (s *Store) LastLogs(ctx context.Context, id int64, n int) (logs []LogRow, ok bool, err error) {
	rows, err := s.db.QueryContext(ctx, "SELECT id, type, state, message, count, UNIX_TIMESTAMP(created_at), UNIX_TIMESTAMP(updated_at) FROM "+
		s.table("vreplication_log")+" WHERE vrepl_id = ? ORDER BY id DESC LIMIT ?", id, n)
	if isNoSuchTable(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read the log of workflow %d: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var r LogRow
		if err := rows.Scan(&r.ID, &r.Type, &r.State, &r.Message, &r.Count, &r.CreatedAt, &r.UpdatedAt); err != nil {
			return nil, false, fmt.Errorf("read the log of workflow %d: %w", id, err)
		}
		logs = append(logs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("read the log of workflow %d: %w", id, err)
	}
	for i, j := 0, len(logs)-1; i < j; i, j = i+1, j-1 {
		logs[i], logs[j] = logs[j], logs[i]
	}
	return logs, true, nil
}

// CopyProgress is a workflow's copy state as a status shows it.
type CopyProgress struct {
	// ToPlan says the workflow was created to copy and its copy is not planned yet.
	ToPlan bool
	// Tables are the planned tables' states, by name. A sidecar without the deferred_keys column
	// leaves every DeferredKeys nil.
	Tables []TableCopy
}

// CopyProgresses reads the copy state of every workflow, by record id; a workflow without copy
// state has none. ok is false when the sidecar has no copy_state table.
func (s *Store) CopyProgresses(ctx context.Context) (out map[int64]CopyProgress, ok bool, err error) {
	cols, err := s.Columns(ctx, "copy_state")
	if err != nil {
		return nil, false, err
	}
	if len(cols) == 0 {
		return nil, false, nil
	}
	keys := "NULL"
	if cols["deferred_keys"] {
		keys = "deferred_keys"
	}
	rows, err := s.db.QueryContext(ctx, "SELECT vrepl_id, table_name, copied_at, rows_copied, rows_estimated, chunks, done, started_at, updated_at, "+keys+
		" FROM "+s.table("copy_state")+" ORDER BY vrepl_id, table_name")
	if err != nil {
		return nil, false, fmt.Errorf("read the copy state: %w", err)
	}
	defer rows.Close()
	out = map[int64]CopyProgress{}
	for rows.Next() {
		var id int64
		var c TableCopy
		var dk sql.NullString
		if err := rows.Scan(&id, &c.Table, &c.CopiedAt, &c.Rows, &c.Estimated, &c.Chunks, &c.Done, &c.StartedAt, &c.UpdatedAt, &dk); err != nil {
			return nil, false, fmt.Errorf("read the copy state: %w", err)
		}
		p := out[id]
		if c.Table == copyMarker {
			p.ToPlan = true
		} else {
			if dk.Valid {
				// A value this vplayer cannot read still says keys are left to build.
				if json.Unmarshal([]byte(dk.String), &c.DeferredKeys) != nil || len(c.DeferredKeys) == 0 {
					c.DeferredKeys = []string{dk.String}
				}
			}
			p.Tables = append(p.Tables, c)
		}
		out[id] = p
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("read the copy state: %w", err)
	}
	return out, true, nil
}

// isNoSuchTable reports whether err is the server's "table doesn't exist" (1146) or "unknown
// database" (1049).
func isNoSuchTable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1146 || me.Number == 1049)
}

// IsNoSidecar reports whether err says the sidecar database or its record table does not exist:
// no workflow ever ran with this sidecar on this target.
func IsNoSidecar(err error) bool { return isNoSuchTable(err) }
