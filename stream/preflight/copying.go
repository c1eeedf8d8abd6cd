package preflight

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/vplayer/vplayer/sqlq"
	"github.com/vplayer/vplayer/workflow"
)

// copyPending reports whether a run of cfg's workflow would copy: a new workflow without
// --start-pos, or one whose copy is not done. Check then lets target tables be missing: the
// copy creates them. Any error reads as "no": preflight then checks as for replication.
func copyPending(ctx context.Context, cfg Config) bool {
	sidecar := cfg.Sidecar
	if sidecar == "" {
		sidecar = "_vt"
	}
	var id int64
	var state string
	err := cfg.Target.QueryRowContext(ctx, "SELECT id, state FROM "+sqlq.Ident(sidecar)+".vreplication WHERE workflow = ?", cfg.Workflow).Scan(&id, &state)
	switch {
	case errors.Is(err, sql.ErrNoRows) || isUnknownTable(err):
		return strings.TrimSpace(cfg.StartPos) == ""
	case err != nil:
		return false
	case state == workflow.StateCopying:
		return true
	}
	var pending int
	if err := cfg.Target.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+sqlq.Ident(sidecar)+".copy_state WHERE vrepl_id = ? AND done = 0", id).Scan(&pending); err != nil {
		return false
	}
	if pending == 0 {
		// Keys still to build (a sidecar from before deferred keys has no such column: none).
		cfg.Target.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+sqlq.Ident(sidecar)+".copy_state WHERE vrepl_id = ? AND deferred_keys IS NOT NULL", id).Scan(&pending)
	}
	return pending > 0
}

// isUnknownTable reports whether err is the server's "table doesn't exist" (1146) or "unknown
// database" (1049): a target no workflow ran on yet.
func isUnknownTable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1146 || me.Number == 1049)
}

// mysqlSource reports whether the source is a MySQL server (not MariaDB), as far as its version
// tells; false when it cannot be read.
func mysqlSource(ctx context.Context, src *sql.DB) bool {
	var version string
	if err := src.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return false
	}
	return !strings.Contains(strings.ToLower(version), "mariadb")
}
