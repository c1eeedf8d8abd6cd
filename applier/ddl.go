package applier

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"

	"github.com/vplayer/vplayer/applier/plan"
	"github.com/vplayer/vplayer/workflow"
)

// ddl runs a DDL step (--on-ddl exec or exec_ignore): the DDL after a mark of its position. The
// target transaction was committed before it.
func (a *Applier) ddl(ctx context.Context, s *plan.Step) error {
	e := s.Event
	if e.CutOver != "" {
		if e.Query == e.CutOver {
			return plan.CutOverUnknown(e)
		}
		a.cfg.Logger.Info("online schema change cut-over: running the ALTER the tool ran on its shadow table on the table instead",
			"cut_over", e.CutOver, "query", e.Query, "pos", e.Pos)
	}
	// DDL commits by itself, outside the fenced position write. The statement before it in the
	// same multi-statement marks the DDL started, fenced: a process that lost the workflow fails
	// there and never reaches the DDL, and the DDL's implicit commit makes the mark durable
	// before the DDL runs.
	s.Stmts.Insert(0, a.ddlMarkSQL(e.Pos))
	// The DDL is pending until its position is saved: lag counts from it meanwhile.
	if a.oldestPending.Load() == 0 {
		a.oldestPending.Store(e.Timestamp)
	}
	err := a.flush(ctx, a.main, s.Stmts)
	var fe *workflow.FenceError
	maybeRan := e.Pos == a.cfg.DDLStarted
	switch {
	case err == nil && maybeRan:
		a.cfg.Logger.Warn("DDL marked started by an attempt that ended before recording it ran again; "+
			"it had not run then, or it is one that can run twice (an unnamed index, a rename cycle): check the target's schema",
			"query", e.Query, "pos", e.Pos)
	case err == nil:
	case errors.As(err, &fe) || ctx.Err() != nil:
		return err
	case maybeRan && alreadyApplied(err):
		// An earlier attempt ran this DDL and ended before recording its position.
		a.cfg.Logger.Warn("DDL already executed by an attempt that ended before recording it; not running it again",
			"query", e.Query, "pos", e.Pos, "error", err)
	case a.cfg.OnDDL == plan.OnDDLExec:
		// The server refused the DDL, so it did not run: drop the mark, so that a retry does
		// not take the same refusal for a sign that it ran. Without the server's answer (a
		// lost connection) it may have run, and the mark stays.
		var me *mysql.MySQLError
		if errors.As(err, &me) {
			if a.cfg.DDLRefused != nil {
				a.cfg.DDLRefused(e.Pos)
			}
			if _, cerr := a.main.conn.ExecContext(ctx, a.ddlMarkSQL("")); cerr != nil {
				a.cfg.Logger.Warn("could not clear the mark of a failed DDL", "error", cerr)
			}
		}
		return err
	default:
		a.cfg.Logger.Warn("DDL failed on the target, ignored by --on-ddl=exec_ignore", "query", e.Query, "error", err)
		a.plan.ForeignKeysUnknown() // the batch may have failed before its SET of foreign_key_checks
	}
	a.tables.reset()
	if a.cfg.AfterDDL != nil {
		if err := a.cfg.AfterDDL(); err != nil {
			return fmt.Errorf("after DDL: %w", err)
		}
	}
	return nil
}

// ddlMarkSQL marks the DDL ending at pos as started, or clears the mark (pos ""), fenced by the
// lease.
func (a *Applier) ddlMarkSQL(pos string) string {
	return a.cfg.Record.DDLMarkSQL(pos)
}

// alreadyApplied reports whether err is what a DDL fails with when it already ran: what it
// creates exists, or what it drops or renames is gone.
func alreadyApplied(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	switch me.Number {
	case 1007, // database exists
		1008, // database doesn't exist (DROP DATABASE)
		1050, // table exists
		1051, // unknown table (DROP TABLE)
		1054, // unknown column (CHANGE or RENAME COLUMN)
		1060, // duplicate column name
		1061, // duplicate key name
		1091, // can't drop: check that it exists
		1146, // table doesn't exist (RENAME TABLE, ALTER of a renamed table)
		1826: // duplicate foreign key constraint name
		return true
	}
	return false
}
