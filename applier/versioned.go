package applier

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

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

// ErrPrivilege means the target user lacks a privilege a statement vplayer must run needs: a
// retry cannot fix it, a GRANT does.
var ErrPrivilege = errors.New("the target user lacks a privilege")

// deleteHistoryDenied returns the terminal error of err when it is the target's refusal (1142) of
// a DELETE HISTORY among statements [first, last) of b, the round trip that failed on s: the
// target user lacks the DELETE HISTORY privilege, which applying a system-versioned table's
// DELETE HISTORY needs. Else nil.
func (a *Applier) deleteHistoryDenied(ctx context.Context, s *session, err error, b *plan.Batch, first, last int) error {
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1142 {
		return nil
	}
	var stmt string
	for i := first; i < last && stmt == ""; i++ {
		if q := b.Stmt(i); strings.HasPrefix(q, "DELETE HISTORY ") {
			stmt = q
		}
	}
	if stmt == "" {
		return nil
	}
	user := "the target user"
	var u string
	if s.conn.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&u) == nil {
		if at := strings.LastIndexByte(u, '@'); at > 0 {
			user = "'" + u[:at] + "'@'" + u[at+1:] + "'"
		}
	}
	gtid, from := a.where(s)
	return fmt.Errorf("%w: %s, source transaction %s, after position %s: %w: applying a system-versioned table's DELETE HISTORY needs the DELETE HISTORY privilege: GRANT DELETE HISTORY ON %s.* TO %s",
		ErrPrivilege, stmt, gtid, from, err, "`"+strings.ReplaceAll(a.cfg.TargetDB, "`", "``")+"`", user)
}
