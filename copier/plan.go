package copier

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/vplayer/vplayer/sqlq"
	"github.com/vplayer/vplayer/tabledef"
	"github.com/vplayer/vplayer/workflow"
)

// ErrNotEmpty means a target table holds rows but has no copy state: copying into it would merge
// its rows with the source's.
var ErrNotEmpty = errors.New("target table is not empty")

// ErrDefinition means the target refused the source's definition of a table for a reason no
// retry fixes: a collation, character set or storage engine it does not know, syntax it does not
// take (a MySQL 8 source's utf8mb4_0900_* collations on MariaDB before 11.4.5, say).
var ErrDefinition = errors.New("the target refuses the source's table definition")

// definitionErrors are the server errors of a CREATE TABLE that the definition itself causes.
var definitionErrors = map[uint16]bool{
	1064: true, // syntax error
	1067: true, // invalid default value
	1115: true, // unknown character set
	1273: true, // unknown collation
	1286: true, // unknown storage engine
}

// SourceTables lists the base tables of db on the source that match, by name.
func SourceTables(ctx context.Context, src *sql.DB, db string, match func(table string) bool) ([]string, error) {
	tables, err := tabledef.BaseTables(ctx, src, db, match)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	return tables, nil
}

// Plan prepares the copy of tables from srcDB to dstDB for workflow id, once: a table missing on
// the target is created from the source's definition (SHOW CREATE TABLE); a table present must be
// empty, unless it already has copy state, and share its first columns with the source's table
// (either may have more columns after them: the copy writes the shared ones; see ErrColumns);
// then every table gets its copy state, not started, in one statement. Tables already planned are
// left as they are.
func Plan(ctx context.Context, cfg Config, tables []string) (err error) {
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
	defer func() {
		// Not back to the pool: its default database and foreign_key_checks are the plan's.
		conn.Raw(func(any) error { return driver.ErrBadConn })
		conn.Close()
	}()
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
	defer func() {
		// Once the plan records them, the secondary keys of the tables the copy created go: the
		// rows go in faster without them, and each table's are built at the end of its copy (a
		// key still there then is left as it is).
		for _, t := range plan {
			if len(t.DeferredKeys) > 0 && err == nil {
				dropKeys(ctx, cfg, conn, t)
			}
		}
	}()
	for _, name := range tables {
		if planned[name] {
			continue
		}
		exists, err := tableExists(ctx, cfg.Target, cfg.TargetDB, name)
		if err != nil {
			return err
		}
		var deferred []string
		if !exists {
			if err := createTable(ctx, cfg.Source, conn, cfg.SourceDB, name); err != nil {
				return err
			}
			cfg.logger().Info("created target table from the source's definition", "table", cfg.TargetDB+"."+name)
			if !cfg.KeepKeys {
				if deferred, err = deferrableKeys(ctx, conn, name); err != nil {
					return err
				}
			}
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
			if err := checkColumns(ctx, cfg, name); err != nil {
				return err
			}
		}
		var est int64
		if err := cfg.Source.QueryRowContext(ctx, "SELECT COALESCE(TABLE_ROWS, 0) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
			cfg.SourceDB, name).Scan(&est); err != nil {
			return fmt.Errorf("source: estimate the rows of %s.%s: %w", cfg.SourceDB, name, err)
		}
		plan = append(plan, workflow.TableCopy{Table: name, Estimated: est, DeferredKeys: deferred})
	}
	return cfg.Store.PlanCopy(ctx, cfg.ID, plan)
}

// checkColumns checks that the target's table name shares its first columns with the source's,
// by name and in order (either may have more after them): an ErrColumns otherwise.
func checkColumns(ctx context.Context, cfg Config, name string) error {
	src, err := tabledef.Load(ctx, cfg.Source, cfg.SourceDB, name)
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	dst, err := tabledef.Load(ctx, cfg.Target, cfg.TargetDB, name)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	if _, differ := tabledef.SharedColumns(src.Columns, dst.Columns); differ != "" {
		return columnsDiffer(cfg.SourceDB, cfg.TargetDB, name, differ, src.Columns, dst.Columns)
	}
	return nil
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
		var me *mysql.MySQLError
		if errors.As(err, &me) && definitionErrors[me.Number] {
			return fmt.Errorf("%w: target: create table %s from the source's definition: %w: create %s on the target yourself, with the same columns and keys in a form the target accepts (the copy fills an existing empty table), then run vplayer again",
				ErrDefinition, name, err, name)
		}
		return fmt.Errorf("target: create table %s from the source's definition: %w", name, err)
	}
	return nil
}

// deferrableKeys returns the definitions of the secondary keys of table (on conn, in the target
// database) that the copy builds after its rows: the plain B-tree keys that are not unique, of an
// InnoDB table with a primary key and without foreign keys (an index a foreign key needs stays).
// Unique keys stay: they are what makes the idempotent apply of the binlog during the copy exact.
// A table without a primary key keeps its keys too: the binlog's changes to it are applied
// while it is copied, each finding its row through them.
func deferrableKeys(ctx context.Context, conn *sql.Conn, table string) ([]string, error) {
	var got, ddl string
	if err := conn.QueryRowContext(ctx, "SHOW CREATE TABLE "+sqlq.Ident(table)).Scan(&got, &ddl); err != nil {
		return nil, fmt.Errorf("target: SHOW CREATE TABLE %s: %w", table, err)
	}
	return deferrableKeysOf(ddl), nil
}

// deferrableKeysOf is deferrableKeys of a table SHOW CREATE TABLE prints as ddl.
func deferrableKeysOf(ddl string) []string {
	lines := strings.Split(ddl, "\n")
	if strings.Contains(ddl, " FOREIGN KEY ") || !strings.Contains(ddl, "\n  PRIMARY KEY (") || !strings.Contains(lines[len(lines)-1], "ENGINE=InnoDB") {
		return nil
	}
	var keys []string
	for _, l := range lines {
		if strings.HasPrefix(l, "  KEY `") {
			keys = append(keys, strings.TrimSuffix(strings.TrimPrefix(l, "  "), ","))
		}
	}
	return keys
}

// keyName returns the quoted name of a key definition ("KEY `k` (...)": "`k`").
func keyName(def string) string {
	rest := strings.TrimPrefix(def, "KEY ")
	for i := 1; i < len(rest); i++ {
		if rest[i] == '`' {
			if i+1 < len(rest) && rest[i+1] == '`' {
				i++
				continue
			}
			return rest[:i+1]
		}
	}
	return rest
}

// unquote returns a quoted identifier's name.
func unquote(q string) string {
	return strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(q, "`"), "`"), "``", "`")
}

// dropKeys drops t's deferred keys from the empty table the plan created. A key the server
// will not drop (one an AUTO_INCREMENT column needs) stays, and so do the others: the copy then
// writes the table with them, and building them at its end finds them there.
func dropKeys(ctx context.Context, cfg Config, conn *sql.Conn, t workflow.TableCopy) {
	drops := make([]string, len(t.DeferredKeys))
	for i, def := range t.DeferredKeys {
		drops[i] = "DROP KEY " + keyName(def)
	}
	if _, err := conn.ExecContext(ctx, "ALTER TABLE "+sqlq.Ident(t.Table)+" "+strings.Join(drops, ", ")); err != nil {
		cfg.logger().Info("the copy writes the table with its secondary keys: they could not be dropped before it", "table", cfg.TargetDB+"."+t.Table, "error", err)
		return
	}
	cfg.logger().Info("secondary keys deferred: built once the table's rows are copied", "table", cfg.TargetDB+"."+t.Table, "keys", len(drops))
}
