package stream

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/snapshot"
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

// masterStatus returns the source's current binary log file and offset (SHOW MASTER STATUS, or
// SHOW BINARY LOG STATUS on MySQL 8.4 and later).
func masterStatus(ctx context.Context, pool *sql.DB) (string, uint64, error) {
	file, pos, err := snapshot.BinlogFile(ctx, pool)
	if err != nil {
		return "", 0, fmt.Errorf("read source binlog position: %w", err)
	}
	return file, pos, nil
}
