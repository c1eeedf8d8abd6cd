package stream

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/vplayer/vplayer/binlog"
)

// SourceFlavor returns the source's flavor as go-mysql names it: "mariadb" or "mysql".
func SourceFlavor(ctx context.Context, pool *sql.DB) (string, error) {
	var version string
	if err := pool.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return "", fmt.Errorf("connect to source: %w", err)
	}
	if strings.Contains(strings.ToLower(version), "mariadb") {
		return "mariadb", nil
	}
	return "mysql", nil
}

// CurrentPosition returns the source's current binlog position: its GTID position when it has
// one, else its binlog file and offset.
func CurrentPosition(ctx context.Context, pool *sql.DB, flavor string) (binlog.Position, error) {
	var gtid string
	q := "SELECT @@GLOBAL.gtid_executed"
	if flavor == "mariadb" {
		q = "SELECT @@GLOBAL.gtid_binlog_pos"
	}
	if err := pool.QueryRowContext(ctx, q).Scan(&gtid); err == nil && strings.TrimSpace(gtid) != "" {
		return binlog.ParsePosition(strings.ReplaceAll(gtid, "\n", ""), flavor)
	}
	file, pos, err := masterStatus(ctx, pool)
	if err != nil {
		return binlog.Position{}, err
	}
	return binlog.ParsePosition(fmt.Sprintf("%s:%d", file, pos), flavor)
}

func masterStatus(ctx context.Context, pool *sql.DB) (string, uint64, error) {
	rows, err := pool.QueryContext(ctx, "SHOW MASTER STATUS")
	if err != nil {
		// MySQL 8.4 removed SHOW MASTER STATUS for SHOW BINARY LOG STATUS.
		var berr error
		if rows, berr = pool.QueryContext(ctx, "SHOW BINARY LOG STATUS"); berr != nil {
			return "", 0, fmt.Errorf("read source binlog position (SHOW MASTER STATUS): %w", err)
		}
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if !rows.Next() {
		return "", 0, fmt.Errorf("source has no binary log: set log_bin on the source")
	}
	vals := make([]any, len(cols))
	var file string
	var pos uint64
	vals[0], vals[1] = &file, &pos
	for i := 2; i < len(vals); i++ {
		vals[i] = new(sql.RawBytes)
	}
	if err := rows.Scan(vals...); err != nil {
		return "", 0, fmt.Errorf("read source binlog position: %w", err)
	}
	return file, pos, rows.Err()
}
