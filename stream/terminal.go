package stream

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/vplayer/vplayer/applier"
	"github.com/vplayer/vplayer/binlog"
)

// isTerminal reports whether err is one that no retry can fix, whatever the time spent
// retrying: see SPEC 4.4.
func isTerminal(err error) bool {
	return errors.Is(err, ErrTerminal) || applier.IsTerminal(err) || binlog.IsTerminal(err) ||
		errors.Is(err, binlog.ErrNotInHistory) || errors.Is(err, ErrTargetTriggers)
}

// terminalText is the message of a terminal error: "terminal error: " and what went wrong, once,
// whether err wraps ErrTerminal (its text then begins with it) or is one by its kind.
func terminalText(err error) string {
	prefix := ErrTerminal.Error() + ": "
	return prefix + strings.TrimPrefix(err.Error(), prefix)
}

// positionFix is what an operator does about a source that cannot serve the recorded position.
const positionFix = "re-create the workflow from a new snapshot of the source (copy the tables again, delete the workflow's record, start it with --start-pos at the snapshot's position), or point --source at a server whose binary log has the position"

// explainSource names the cause and the fix of a source error that no retry can fix, the
// server's refusal to serve the binlog after start (1236); other errors are returned as they
// are.
func explainSource(err error, start binlog.Position) error {
	if !binlog.IsTerminal(err) {
		return err
	}
	return fmt.Errorf("the source cannot serve its binary log after %s (purged from it, or never in it): %w: %s", start, err, positionFix)
}

// checkSourceHistory checks, before the binlog connection, that the source's history still
// contains the recorded position pos: on MariaDB @@gtid_binlog_state, on MySQL
// @@gtid_executed, for a file position SHOW BINARY LOGS. A position the source has not logged
// is an error wrapping binlog.ErrNotInHistory, naming the cause and the fix.
func checkSourceHistory(ctx context.Context, pool *sql.DB, flavor string, pos binlog.Position) error {
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
			return fmt.Errorf("source %s cannot continue from the recorded position %s: %w: %s", sourceServer(ctx, pool), pos, err, positionFix)
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
