package stream

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/vplayer/vplayer/applier"
)

// ErrPreflight wraps the failures of Preflight, one line each.
var ErrPreflight = errors.New("preflight failed")

// Preflight checks, before anything is written, that the source logs what vplayer needs, that the
// target is reachable and writable, that every replicated table exists on the target (unless the
// workflow copies first, which creates it) with the source's column count and has no trigger (unless --allow-target-triggers). It returns every
// failure, one line each, wrapping ErrPreflight: a configuration that a retry cannot fix. A
// server that cannot be reached is instead an error wrapping ErrUnreachable, and nothing else is
// checked: the caller retries.
func Preflight(ctx context.Context, cfg Config) error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	// unreachable reports err as the side's server not reachable when it is one.
	unreachable := func(side string, err error) error {
		if !IsUnreachable(err) {
			return nil
		}
		return fmt.Errorf("%s %w: %w", side, ErrUnreachable, err)
	}

	src := cfg.Source.Pool
	if err := src.PingContext(ctx); err != nil {
		if uerr := unreachable("source", err); uerr != nil {
			return uerr
		}
		add("source: cannot connect: %v", err)
		return joinProblems(problems)
	}
	var logBin, format, image string
	if err := src.QueryRowContext(ctx, "SELECT @@GLOBAL.log_bin, @@GLOBAL.binlog_format, @@GLOBAL.binlog_row_image").Scan(&logBin, &format, &image); err != nil {
		if uerr := unreachable("source", err); uerr != nil {
			return uerr
		}
		add("source: cannot read its binlog settings: %v", err)
	} else {
		if logBin != "1" && !strings.EqualFold(logBin, "ON") {
			add("source: log_bin is OFF: start the source with --log-bin")
		}
		if !strings.EqualFold(format, "ROW") {
			add("source: binlog_format is %s: set binlog_format=ROW (SET GLOBAL binlog_format='ROW' and in the server's configuration)", format)
		}
		// FULL, NOBLOB and MINIMAL images are applied exactly (SPEC 7); MySQL's PARTIAL_JSON
		// is checked below.
		if !strings.EqualFold(image, "FULL") && !strings.EqualFold(image, "NOBLOB") && !strings.EqualFold(image, "MINIMAL") {
			add("source: binlog_row_image is %s: set binlog_row_image=FULL", image)
		}
		// MySQL only (MariaDB has no such variable): a partial JSON update logs a diff, which
		// vplayer does not apply.
		var options string
		if err := src.QueryRowContext(ctx, "SELECT @@GLOBAL.binlog_row_value_options").Scan(&options); err == nil && strings.Contains(strings.ToUpper(options), "PARTIAL_JSON") {
			add("source: binlog_row_value_options is %s: vplayer does not apply partial JSON updates; set binlog_row_value_options='' (SET GLOBAL and in the server's configuration)", options)
		}
	}
	if _, _, err := masterStatus(ctx, src); err != nil {
		if uerr := unreachable("source", err); uerr != nil {
			return uerr
		}
		add("source: %v: grant the user REPLICATION CLIENT (MariaDB: BINLOG MONITOR) and REPLICATION SLAVE", err)
	}

	tgt := cfg.Target
	var readOnly string
	if err := tgt.QueryRowContext(ctx, "SELECT @@GLOBAL.read_only").Scan(&readOnly); err != nil {
		if uerr := unreachable("target", err); uerr != nil {
			return uerr
		}
		add("target: cannot connect: %v", err)
		return joinProblems(problems)
	}
	if readOnly == "1" || strings.EqualFold(readOnly, "ON") {
		add("target: read_only is ON: vplayer must write to the target; point --target at a writable primary or SET GLOBAL read_only=OFF")
	}

	filter, err := cfg.filter()
	if err != nil {
		add("%v", err)
		return joinProblems(problems)
	}
	srcTables, err := tableColumns(ctx, src, cfg.Source.DB)
	if err != nil {
		if uerr := unreachable("source", err); uerr != nil {
			return uerr
		}
		add("source: cannot list the tables of %s: %v", cfg.Source.DB, err)
		return joinProblems(problems)
	}
	targetDB := cfg.TargetDB
	if targetDB == "" {
		targetDB = cfg.Source.DB
	}
	tgtTables, err := tableColumns(ctx, tgt, targetDB)
	if err != nil {
		if uerr := unreachable("target", err); uerr != nil {
			return uerr
		}
		add("target: cannot list the tables of %s: %v", targetDB, err)
		return joinProblems(problems)
	}
	// A workflow that copies first creates the tables its target lacks.
	copying := copyPending(ctx, cfg)
	if copying {
		// The copy's snapshots on MySQL take a global read lock while they start (MariaDB's none).
		if flavor, err := SourceFlavor(ctx, src); err == nil && flavor == "mysql" {
			if line := reloadProblem(ctx, src); line != "" {
				add("%s", line)
			}
		}
	}
	matched := 0
	for _, name := range sortedKeys(srcTables) {
		if !filter.Match(cfg.Source.DB, name) {
			continue
		}
		matched++
		cols, ok := tgtTables[name]
		switch {
		case !ok && copying:
		case !ok:
			add("target: table %s.%s does not exist: create it with the source's definition (SHOW CREATE TABLE %s.%s on the source)", targetDB, name, cfg.Source.DB, name)
		case sharedColumnsDiffer(srcTables[name], cols) != "":
			add("target: table %s.%s does not match the source's %s.%s: %s: make the columns they share match, in the same order (either side may have more columns after them)",
				targetDB, name, cfg.Source.DB, name, sharedColumnsDiffer(srcTables[name], cols))
		default:
			warnKeyless(ctx, cfg, tgt, targetDB, name)
		}
	}
	switch triggers, err := targetTriggers(ctx, tgt, targetDB, cfg.Source.DB, filter); {
	case err != nil:
		if uerr := unreachable("target", err); uerr != nil {
			return uerr
		}
		add("target: %v", err)
	case len(triggers) > 0 && cfg.AllowTargetTriggers:
		if cfg.Logger != nil {
			cfg.Logger.Warn("replicated target tables have triggers, allowed by --allow-target-triggers: they fire again for each replicated row, whose effects the binlog already carries",
				"triggers", strings.Join(triggers, ", "))
		}
	case len(triggers) > 0:
		add("target: %v", triggersError(triggers))
	}
	if matched == 0 && !filter.All() {
		add("source: no table of %s matches --tables %s", cfg.Source.DB, strings.Join(cfg.Source.Tables, ","))
	}
	return joinProblems(problems)
}

// warnKeyless warns when the target table has no primary key and no unique key over NOT NULL
// columns: its rows are matched on every column, one change at a time.
func warnKeyless(ctx context.Context, cfg Config, tgt *sql.DB, db, name string) {
	keyless, err := applier.Keyless(ctx, tgt, db, name)
	if err != nil || !keyless || cfg.Logger == nil {
		return
	}
	cfg.Logger.Warn("table has no primary key and no unique key over NOT NULL columns: each row change is applied alone, matching every column with LIMIT 1; add a primary key for speed",
		"table", db+"."+name)
}

func joinProblems(problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w:\n  %s", ErrPreflight, strings.Join(problems, "\n  "))
}

// tableColumns returns the column names of each base table of schema, in ordinal order.
func tableColumns(ctx context.Context, db *sql.DB, schema string) (map[string][]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT t.TABLE_NAME, c.COLUMN_NAME FROM information_schema.TABLES t
JOIN information_schema.COLUMNS c ON c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME
WHERE t.TABLE_SCHEMA = ? AND t.TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') ORDER BY t.TABLE_NAME, c.ORDINAL_POSITION`, schema)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var table, col string
		if err := rows.Scan(&table, &col); err != nil {
			return nil, err
		}
		out[table] = append(out[table], col)
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

func sortedKeys(m map[string][]string) []string {
	return slices.Sorted(maps.Keys(m))
}
