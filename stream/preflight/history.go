package preflight

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/vplayer/vplayer/binlog"
)

// PositionFix is what an operator does about a source that cannot serve the recorded position.
const PositionFix = "re-create the workflow from a new snapshot of the source (copy the tables again, delete the workflow's record, start it with --start-pos at the snapshot's position), or point --source at a server whose binary log has the position"

// CheckSourceHistory checks, before the binlog connection, that the source's history still
// contains the recorded position pos: on MariaDB @@gtid_binlog_state, on MySQL
// @@gtid_executed, for a file position SHOW BINARY LOGS. A position the source has not logged
// is an error wrapping binlog.ErrNotInHistory, naming the cause and the fix.
func CheckSourceHistory(ctx context.Context, pool *sql.DB, flavor string, pos binlog.Position) error {
	var history string
	var err error
	switch {
	case pos.Flavor == binlog.FlavorFilePos:
		history, err = binaryLogs(ctx, pool)
	case flavor == "mariadb":
		err = pool.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_binlog_state").Scan(&history)
	default:
		err = pool.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_executed").Scan(&history)
	}
	if err != nil {
		return fmt.Errorf("read the source's binlog history: %w", err)
	}
	if err := binlog.CheckHistory(pos, history); err != nil {
		if errors.Is(err, binlog.ErrNotInHistory) {
			return fmt.Errorf("source %s cannot continue from the recorded position %s: %w: %s", sourceServer(ctx, pool), pos, err, PositionFix)
		}
		return err
	}
	return nil
}

// sourceServer names the source server for a message: its hostname, port and server id.
func sourceServer(ctx context.Context, pool *sql.DB) string {
	var host string
	var port, id int64
	if err := pool.QueryRowContext(ctx, "SELECT @@hostname, @@port, @@server_id").Scan(&host, &port, &id); err != nil {
		return "(unknown)"
	}
	return fmt.Sprintf("%s:%d (server_id %d)", host, port, id)
}

// binaryLogs returns the names of the source's binary log files, comma-separated.
func binaryLogs(ctx context.Context, pool *sql.DB) (string, error) {
	rows, err := pool.QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return "", err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", err
	}
	var names []string
	for rows.Next() {
		var name string
		vals := make([]any, len(cols))
		vals[0] = &name
		for i := 1; i < len(vals); i++ {
			vals[i] = new(sql.RawBytes)
		}
		if err := rows.Scan(vals...); err != nil {
			return "", err
		}
		names = append(names, name)
	}
	return strings.Join(names, ","), rows.Err()
}
