package workflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// OnlineDDL returns the online schema change state the reader last saved in the record of
// workflow id (the record's online_ddl, JSON the binlog package reads and writes): what it knows
// of the shadow tables of gh-ost or pt-online-schema-change it met. Empty when none.
func (s *Store) OnlineDDL(ctx context.Context, id int64) (string, error) {
	var state sql.NullString
	err := s.db.QueryRowContext(ctx, "SELECT online_ddl FROM "+s.table("vreplication")+" WHERE id = ?", id).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("read the online schema change state of workflow %d: %w", id, err)
	}
	return state.String, nil
}

// SetOnlineDDL saves the online schema change state in the record if the lease is still ours.
func (l *Lease) SetOnlineDDL(ctx context.Context, state string) error {
	return l.update(ctx, "online_ddl = ?", state)
}
