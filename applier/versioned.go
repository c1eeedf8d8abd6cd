package applier

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"

	"github.com/vplayer/vplayer/applier/plan"
)

// probeVersioning checks that the target lets a session write a versioned table's rows as the
// source's: set its timestamp and insert history rows (MariaDB 10.11 and later, secure_timestamp
// NO, its default).
func probeVersioning(ctx context.Context, db *sql.DB, quoted string) error {
	_, err := db.ExecContext(ctx, "SET STATEMENT timestamp = 1, system_versioning_insert_history = 1 FOR SELECT 1")
	var me *mysql.MySQLError
	if errors.As(err, &me) && (me.Number == 1290 || me.Number == 1193 || me.Number == 1227) {
		return fmt.Errorf("%w: %s is system-versioned, and vplayer writes its rows at the source's times (a session timestamp and system_versioning_insert_history), which the target refuses (%v): "+
			"run the target on MariaDB 10.11 or later with secure_timestamp=NO (the default)", plan.ErrInexact, quoted, err)
	}
	if err != nil {
		return fmt.Errorf("check that the target writes %s as the source's: %w", quoted, err)
	}
	return nil
}
