package workflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Deleted describes a record Delete removed.
type Deleted struct {
	ID    int64
	State string
	// Holder is who held the lease when it was deleted (a live owner only with force).
	Holder Holder
	// Owned says a live owner held the lease: it was deleted by force, and that process stops
	// once it finds its record gone (Lease's renewal, within a third of its ttl).
	Owned bool
	// Logs and CopyTables count the log rows and copy state rows deleted with it.
	Logs, CopyTables int64
}

// Delete removes workflow's record, its log rows and its copy state in one transaction, the
// record's row locked from the check of its owner to the commit. While a live owner holds the
// lease it refuses with an error wrapping ErrLeaseHeld, unless force. A workflow without a record
// is ErrNotFound. A sidecar without the lease columns (an older vplayer's) has no owner to
// refuse for; one without a log or copy_state table has nothing there to delete.
func (s *Store) Delete(ctx context.Context, workflow string, force bool) (Deleted, error) {
	cols, err := s.Columns(ctx, "vreplication")
	if err != nil {
		return Deleted{}, err
	}
	if len(cols) == 0 {
		return Deleted{}, fmt.Errorf("%w: %s (%s has no vreplication table)", ErrNotFound, workflow, s.sidecar)
	}
	leaseCols := "'', 0, 0, 0"
	if cols["owner"] && cols["epoch"] && cols["lease_until"] {
		leaseCols = "owner, epoch, lease_until, owner <> '' AND lease_until >= " + nowMillis
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Deleted{}, fmt.Errorf("delete workflow %s: %w", workflow, err)
	}
	defer tx.Rollback()
	var d Deleted
	var until int64
	err = tx.QueryRowContext(ctx, "SELECT id, state, "+leaseCols+" FROM "+s.table("vreplication")+" WHERE workflow = ? FOR UPDATE", workflow).
		Scan(&d.ID, &d.State, &d.Holder.Owner, &d.Holder.Epoch, &until, &d.Owned)
	if errors.Is(err, sql.ErrNoRows) {
		return Deleted{}, fmt.Errorf("%w: %s", ErrNotFound, workflow)
	}
	if err != nil {
		return Deleted{}, fmt.Errorf("delete workflow %s: %w", workflow, err)
	}
	d.Holder.Until = time.UnixMilli(until)
	if d.Owned && !force {
		return d, fmt.Errorf("%w %s until %s", ErrLeaseHeld, d.Holder.Owner, d.Holder.Until.UTC().Format(time.RFC3339Nano))
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM "+s.table("vreplication")+" WHERE id = ?", d.ID); err != nil {
		return Deleted{}, fmt.Errorf("delete workflow %s: %w", workflow, err)
	}
	for _, t := range []struct {
		table string
		n     *int64
	}{{"vreplication_log", &d.Logs}, {"copy_state", &d.CopyTables}} {
		res, err := tx.ExecContext(ctx, "DELETE FROM "+s.table(t.table)+" WHERE vrepl_id = ?", d.ID)
		if isNoSuchTable(err) {
			continue
		}
		if err != nil {
			return Deleted{}, fmt.Errorf("delete workflow %s: %s: %w", workflow, t.table, err)
		}
		*t.n, _ = res.RowsAffected()
	}
	if err := tx.Commit(); err != nil {
		return Deleted{}, fmt.Errorf("delete workflow %s: %w", workflow, err)
	}
	return d, nil
}
