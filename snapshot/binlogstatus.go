package snapshot

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"

	"github.com/vplayer/vplayer/tablekey"
)

// The statements that show a source's current binary log file and offset. MySQL 8.2 named the
// first anew and 8.4 removed it, answering a syntax error (ER_PARSE_ERROR); MariaDB and MySQL
// before 8.2 know only the first.
const (
	showMasterStatus    = "SHOW MASTER STATUS"
	showBinaryLogStatus = "SHOW BINARY LOG STATUS"
	erParseError        = 1064
)

// Querier runs a query: a *sql.DB, or the *sql.Conn of a session whose state matters.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// BinlogFile returns the source's current binary log file and offset, from SHOW MASTER STATUS or,
// on a server that no longer knows it (MySQL 8.4 and later), SHOW BINARY LOG STATUS. A source
// without a binary log is an error.
func BinlogFile(ctx context.Context, q Querier) (file string, offset uint64, err error) {
	rows, err := binlogStatus(func(stmt string) (*sql.Rows, error) { return q.QueryContext(ctx, stmt) })
	if err != nil {
		return "", 0, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", 0, err
	}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return "", 0, err
		}
		return "", 0, errors.New("the source has no binary log: set log_bin on the source")
	}
	vals, err := tablekey.ScanStrings(rows, len(cols))
	if err != nil {
		return "", 0, err
	}
	if len(vals) < 2 {
		return "", 0, fmt.Errorf("the source's binary log status has %d columns, want its file and position", len(vals))
	}
	if _, err := fmt.Sscan(vals[1], &offset); err != nil {
		return "", 0, fmt.Errorf("the source's binary log position %q: %w", vals[1], err)
	}
	return vals[0], offset, rows.Err()
}

// binlogStatus runs SHOW MASTER STATUS through query and, when the server refuses it as a
// statement it does not know (ER_PARSE_ERROR), SHOW BINARY LOG STATUS. Any other error is the
// answer: the second statement would fail as the first did (a privilege missing, a connection
// lost). Errors name the statements that failed.
func binlogStatus[R any](query func(stmt string) (R, error)) (R, error) {
	r, err := query(showMasterStatus)
	var me *mysql.MySQLError
	switch {
	case err == nil:
		return r, nil
	case !errors.As(err, &me) || me.Number != erParseError:
		return r, fmt.Errorf("%s: %w", showMasterStatus, err)
	}
	r, nerr := query(showBinaryLogStatus)
	if nerr != nil {
		return r, fmt.Errorf("%s: %w; %s: %w", showMasterStatus, err, showBinaryLogStatus, nerr)
	}
	return r, nil
}
