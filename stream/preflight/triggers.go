package preflight

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/vplayer/vplayer/binlog"
)

// ErrTargetTriggers is wrapped by the error naming triggers on replicated target tables: they
// would fire a second time, row events already carrying their effects.
var ErrTargetTriggers = errors.New("triggers on replicated target tables would fire a second time")

// targetTriggers returns the triggers on the target tables of db that filter replicates (a
// target table replicates the source table of its name), as "db.table: trigger", in order.
func targetTriggers(ctx context.Context, tgt *sql.DB, db, sourceDB string, filter *binlog.Filter) ([]string, error) {
	rows, err := tgt.QueryContext(ctx, `SELECT EVENT_OBJECT_TABLE, TRIGGER_NAME FROM information_schema.TRIGGERS
WHERE EVENT_OBJECT_SCHEMA = ? ORDER BY EVENT_OBJECT_TABLE, TRIGGER_NAME`, db)
	if err != nil {
		return nil, fmt.Errorf("list the triggers of %s on the target: %w", db, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var table, name string
		if err := rows.Scan(&table, &name); err != nil {
			return nil, err
		}
		if filter.Match(sourceDB, table) {
			out = append(out, fmt.Sprintf("%s.%s: %s", db, table, name))
		}
	}
	return out, rows.Err()
}

// triggersError is the one-line error naming triggers and the fix.
func triggersError(triggers []string) error {
	return fmt.Errorf("%w (row events already carry their effects): %s: drop them on the target (DROP TRIGGER), or pass --allow-target-triggers to let them fire again",
		ErrTargetTriggers, strings.Join(triggers, ", "))
}

// CheckTriggers fails with an error wrapping ErrTargetTriggers, naming them and the fix, when a
// target table of targetDB that filter replicates (from sourceDB) has a trigger, unless allow
// (--allow-target-triggers). Each attempt runs it at its start, so a trigger created while the
// stream runs is found at the next attempt.
func CheckTriggers(ctx context.Context, tgt *sql.DB, targetDB, sourceDB string, filter *binlog.Filter, allow bool) error {
	triggers, err := targetTriggers(ctx, tgt, targetDB, sourceDB, filter)
	if err != nil || len(triggers) == 0 {
		return err
	}
	if allow {
		return nil
	}
	return fmt.Errorf("target: %w", triggersError(triggers))
}
