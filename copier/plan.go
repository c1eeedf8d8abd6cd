package copier

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/vplayer/vplayer/sqlq"
	"github.com/vplayer/vplayer/tablekey"
	"github.com/vplayer/vplayer/workflow"
)

// ErrNotEmpty means a target table holds rows but has no copy state: copying into it would merge
// its rows with the source's.
var ErrNotEmpty = errors.New("target table is not empty")

// SourceTables lists the base tables of db on the source that match, by name.
func SourceTables(ctx context.Context, src *sql.DB, db string, match func(table string) bool) ([]string, error) {
	tables, err := tablekey.BaseTables(ctx, src, db, match)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	return tables, nil
}

// Plan prepares the copy of tables from srcDB to dstDB for workflow id, once: a table missing on
// the target is created from the source's definition (SHOW CREATE TABLE); a table present must be
// empty, unless it already has copy state; then every table gets its copy state, not started, in
// one statement. Tables already planned are left as they are.
func Plan(ctx context.Context, cfg Config, tables []string) error {
	have, err := cfg.Store.CopyState(ctx, cfg.ID)
	if err != nil {
		return err
	}
	planned := map[string]bool{}
	for _, c := range have {
		planned[c.Table] = true
	}
	conn, err := cfg.Target.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect to target: %w", err)
	}
	defer conn.Close()
	// A child table may come before its parent: its foreign keys are checked by the source.
	if _, err := conn.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+sqlq.Ident(cfg.TargetDB)); err != nil {
		return fmt.Errorf("target: create database %s: %w", cfg.TargetDB, err)
	}
	for _, q := range []string{"USE " + sqlq.Ident(cfg.TargetDB), "SET SESSION foreign_key_checks = 0"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("target: %s: %w", q, err)
		}
	}
	var plan []workflow.TableCopy
	for _, name := range tables {
		if planned[name] {
			continue
		}
		exists, err := tableExists(ctx, cfg.Target, cfg.TargetDB, name)
		if err != nil {
			return err
		}
		if !exists {
			if err := createTable(ctx, cfg.Source, conn, cfg.SourceDB, name); err != nil {
				return err
			}
			cfg.logger().Info("created target table from the source's definition", "table", cfg.TargetDB+"."+name)
		} else {
			var one int
			err := cfg.Target.QueryRowContext(ctx, "SELECT 1 FROM "+sqlq.Ident(cfg.TargetDB)+"."+sqlq.Ident(name)+" LIMIT 1").Scan(&one)
			switch {
			case err == nil:
				return fmt.Errorf("%w: %s.%s holds rows and has no copy state: empty it (TRUNCATE TABLE %s.%s) to copy it, or start the workflow with --start-pos at the position its rows correspond to",
					ErrNotEmpty, cfg.TargetDB, name, cfg.TargetDB, name)
			case !errors.Is(err, sql.ErrNoRows):
				return fmt.Errorf("target: read %s.%s: %w", cfg.TargetDB, name, err)
			}
		}
		var est int64
		if err := cfg.Source.QueryRowContext(ctx, "SELECT COALESCE(TABLE_ROWS, 0) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
			cfg.SourceDB, name).Scan(&est); err != nil {
			return fmt.Errorf("source: estimate the rows of %s.%s: %w", cfg.SourceDB, name, err)
		}
		plan = append(plan, workflow.TableCopy{Table: name, Estimated: est})
	}
	return cfg.Store.PlanCopy(ctx, cfg.ID, plan)
}

func tableExists(ctx context.Context, db *sql.DB, schema, name string) (bool, error) {
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", schema, name).Scan(&n); err != nil {
		return false, fmt.Errorf("target: look for table %s.%s: %w", schema, name, err)
	}
	return n > 0, nil
}

// createTable creates table name on conn (whose default database is the target database) from
// the source's SHOW CREATE TABLE.
func createTable(ctx context.Context, src *sql.DB, conn *sql.Conn, srcDB, name string) error {
	var got, ddl string
	if err := src.QueryRowContext(ctx, "SHOW CREATE TABLE "+sqlq.Ident(srcDB)+"."+sqlq.Ident(name)).Scan(&got, &ddl); err != nil {
		return fmt.Errorf("source: SHOW CREATE TABLE %s.%s: %w", srcDB, name, err)
	}
	const prefix = "CREATE TABLE "
	if !strings.HasPrefix(ddl, prefix) {
		return fmt.Errorf("source: SHOW CREATE TABLE %s.%s: unexpected definition %.40q", srcDB, name, ddl)
	}
	ddl = "CREATE TABLE IF NOT EXISTS " + ddl[len(prefix):]
	if _, err := conn.ExecContext(ctx, ddl); err != nil {
		return fmt.Errorf("target: create table %s from the source's definition: %w", name, err)
	}
	return nil
}
