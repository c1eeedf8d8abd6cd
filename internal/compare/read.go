package compare

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
)

// reader streams one side's rows on a connection of its own. The connection's session reads
// TIMESTAMP values in UTC, so that two instants a local time zone renders alike (the hour a
// clock goes back) stay distinct, and the query is a prepared statement, so that the rows come in
// the binary protocol, where a FLOAT or DOUBLE is its stored bytes rather than a rounded text.
type reader struct {
	conn   *sql.Conn
	stmt   *sql.Stmt
	rows   *sql.Rows
	zone   string // the session's time_zone before the read, restored by close
	values []any
	ptrs   []any
}

// openReader starts query on a connection of db's.
func openReader(ctx context.Context, db *sql.DB, query string, ncols int) (_ *reader, err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	r := &reader{conn: conn, values: make([]any, ncols), ptrs: make([]any, ncols)}
	for i := range r.values {
		r.ptrs[i] = &r.values[i]
	}
	defer func() {
		if err != nil {
			r.close(ctx)
		}
	}()
	if err := conn.QueryRowContext(ctx, "SELECT @@session.time_zone").Scan(&r.zone); err != nil {
		return nil, fmt.Errorf("read time_zone: %w", err)
	}
	if _, err := conn.ExecContext(ctx, "SET time_zone = '+00:00'"); err != nil {
		r.zone = "" // nothing to restore
		return nil, fmt.Errorf("set time_zone: %w", err)
	}
	if r.stmt, err = conn.PrepareContext(ctx, query); err != nil {
		return nil, err
	}
	if r.rows, err = r.stmt.QueryContext(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// next reads the next row into r.values, reporting false at the end.
func (r *reader) next() (bool, error) {
	if !r.rows.Next() {
		return false, r.rows.Err()
	}
	return true, r.rows.Scan(r.ptrs...)
}

// close ends the query and gives the connection back with its time_zone restored; a connection
// whose time_zone could not be restored is closed rather than reused.
func (r *reader) close(ctx context.Context) {
	if r.rows != nil {
		r.rows.Close()
	}
	if r.stmt != nil {
		r.stmt.Close()
	}
	if r.zone != "" {
		if _, err := r.conn.ExecContext(ctx, "SET time_zone = ?", r.zone); err != nil {
			// ErrBadConn tells database/sql to close the connection instead of pooling it.
			_ = r.conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}
	r.conn.Close()
}
