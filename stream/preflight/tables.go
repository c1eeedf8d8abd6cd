package preflight

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/vplayer/vplayer/applier"
	"github.com/vplayer/vplayer/binlog"
)

// checkTables checks the replicated tables: each on the target with the source's columns (unless
// the workflow copies first, which creates it), none with a trigger, at least one replicated;
// and, for a copy from MySQL, the source user's RELOAD privilege.
func checkTables(ctx context.Context, cfg Config, f *findings) error {
	filter, err := cfg.Filter()
	if err != nil {
		f.add("%v", err)
		return errEnough
	}
	srcTables, err := tableColumns(ctx, cfg.Source, cfg.SourceDB)
	if err != nil {
		if uerr := unreachable("source", err); uerr != nil {
			return uerr
		}
		f.add("source: cannot list the tables of %s: %v", cfg.SourceDB, err)
		return errEnough
	}
	targetDB := cfg.targetDB()
	tgtTables, err := tableColumns(ctx, cfg.Target, targetDB)
	if err != nil {
		if uerr := unreachable("target", err); uerr != nil {
			return uerr
		}
		f.add("target: cannot list the tables of %s: %v", targetDB, err)
		return errEnough
	}
	// A workflow that copies first creates the tables its target lacks.
	copying := copyPending(ctx, cfg)
	if copying {
		// The copy's snapshots on MySQL take a global read lock while they start (MariaDB's none).
		if mysqlSource(ctx, cfg.Source) {
			if line := reloadProblem(ctx, cfg.Source); line != "" {
				f.add("%s", line)
			}
		}
	}
	matched := compareTables(ctx, cfg, filter, srcTables, tgtTables, copying, f)
	if err := checkTargetTriggers(ctx, cfg, filter, f); err != nil {
		return err
	}
	if matched == 0 && !filter.All() {
		f.add("source: no table of %s matches --tables %s", cfg.SourceDB, strings.Join(cfg.Tables, ","))
	}
	return nil
}

// compareTables checks each replicated source table against the target's table of its name, and
// returns how many source tables the filter replicates.
func compareTables(ctx context.Context, cfg Config, filter *binlog.Filter, srcTables, tgtTables tables, copying bool, f *findings) int {
	targetDB := cfg.targetDB()
	matched := 0
	for _, name := range slices.Sorted(maps.Keys(srcTables.cols)) {
		if !filter.Match(cfg.SourceDB, name) {
			continue
		}
		matched++
		cols, ok := tgtTables.cols[name]
		switch {
		case !ok && copying:
		case !ok:
			f.add("target: table %s.%s does not exist: create it with the source's definition (SHOW CREATE TABLE %s.%s on the source)", targetDB, name, cfg.SourceDB, name)
		case sharedColumnsDiffer(srcTables.cols[name], cols) != "":
			f.add("target: table %s.%s does not match the source's %s.%s: %s: make the columns they share match, in the same order (either side may have more columns after them)",
				targetDB, name, cfg.SourceDB, name, sharedColumnsDiffer(srcTables.cols[name], cols))
		case srcTables.versioned[name] && !tgtTables.versioned[name]:
			// The source logs history rows and the ends of deleted rows as rows of the current
			// rows' keys: a plain table cannot tell them apart (applier/plan's SetSourceVersioned).
			f.add("target: table %s.%s is not system-versioned but the source's %s.%s is (WITH SYSTEM VERSIONING), and its history rows cannot be applied exactly to a plain table: "+
				"make the target table system-versioned like the source's (re-create it from SHOW CREATE TABLE %s.%s on the source) or leave the table out of --tables",
				targetDB, name, cfg.SourceDB, name, cfg.SourceDB, name)
		default:
			warnKeyless(ctx, cfg, targetDB, name)
		}
	}
	return matched
}

// checkTargetTriggers finds the triggers of the replicated target tables: a failure, or a warning
// under --allow-target-triggers.
func checkTargetTriggers(ctx context.Context, cfg Config, filter *binlog.Filter, f *findings) error {
	switch triggers, err := targetTriggers(ctx, cfg.Target, cfg.targetDB(), cfg.SourceDB, filter); {
	case err != nil:
		if uerr := unreachable("target", err); uerr != nil {
			return uerr
		}
		f.add("target: %v", err)
	case len(triggers) > 0 && cfg.AllowTargetTriggers:
		if cfg.Logger != nil {
			cfg.Logger.Warn("replicated target tables have triggers, allowed by --allow-target-triggers: they fire again for each replicated row, whose effects the binlog already carries",
				"triggers", strings.Join(triggers, ", "))
		}
	case len(triggers) > 0:
		f.add("target: %v", triggersError(triggers))
	}
	return nil
}

// warnKeyless warns when the target table has no primary key and no unique key over NOT NULL
// columns: its rows are matched on every column, one change at a time.
func warnKeyless(ctx context.Context, cfg Config, db, name string) {
	keyless, err := applier.Keyless(ctx, cfg.Target, db, name)
	if err != nil || !keyless || cfg.Logger == nil {
		return
	}
	cfg.Logger.Warn("table has no primary key and no unique key over NOT NULL columns: each row change is applied alone, matching every column with LIMIT 1; add a primary key for speed",
		"table", db+"."+name)
}

// tables are the base tables of a schema: each one's column names, in ordinal order, and which
// are system-versioned.
type tables struct {
	cols      map[string][]string
	versioned map[string]bool
}

// tableColumns returns the base tables of schema.
func tableColumns(ctx context.Context, db *sql.DB, schema string) (tables, error) {
	out := tables{cols: map[string][]string{}, versioned: map[string]bool{}}
	rows, err := db.QueryContext(ctx, `SELECT t.TABLE_NAME, t.TABLE_TYPE, c.COLUMN_NAME FROM information_schema.TABLES t
JOIN information_schema.COLUMNS c ON c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME
WHERE t.TABLE_SCHEMA = ? AND t.TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') ORDER BY t.TABLE_NAME, c.ORDINAL_POSITION`, schema)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		var table, kind, col string
		if err := rows.Scan(&table, &kind, &col); err != nil {
			return out, err
		}
		out.cols[table] = append(out.cols[table], col)
		out.versioned[table] = kind == "SYSTEM VERSIONED"
	}
	return out, rows.Err()
}

// sharedColumnsDiffer describes the first column the two tables' shared columns (the first of
// each, as many as the shorter has) differ in, by name; empty when they agree. Columns after
// the shared ones, on either side, replicate as on a native replica.
func sharedColumnsDiffer(src, tgt []string) string {
	for i := range min(len(src), len(tgt)) {
		if !strings.EqualFold(src[i], tgt[i]) {
			return fmt.Sprintf("column %d is %s on the source but %s on the target", i+1, src[i], tgt[i])
		}
	}
	return ""
}
