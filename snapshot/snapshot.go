// Package snapshot opens consistent snapshots: a read-only REPEATABLE READ transaction on a
// connection of its own, and on a source the binlog position the snapshot corresponds to, taken
// without a long lock (MariaDB reports it; MySQL needs FLUSH TABLES WITH READ LOCK held only
// while the transaction starts). vplayer diff and the copy phase share it.
package snapshot

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vplayer/vplayer/binlog"
)

// snapshotSetup makes a snapshot session read what the other side reads: TIMESTAMP values in
// UTC, and one read view for the whole transaction.
var snapshotSetup = []string{
	"SET SESSION time_zone = '+00:00'",
	"SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ",
}

const startSnapshot = "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"

// startSnapshotOnly is what beginSnapshot falls back to on a server that refuses startSnapshot's
// two characteristics together but accepts each alone (Dolt): the snapshot matters, READ ONLY
// only guards against writes the diff never makes.
const startSnapshotOnly = "START TRANSACTION WITH CONSISTENT SNAPSHOT"

// beginSnapshot starts the snapshot transaction on conn: startSnapshot, else startSnapshotOnly.
func beginSnapshot(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, startSnapshot)
	if err == nil {
		return nil
	}
	if _, ferr := conn.ExecContext(ctx, startSnapshotOnly); ferr != nil {
		return fmt.Errorf("%s: %w; %s: %w", startSnapshot, err, startSnapshotOnly, ferr)
	}
	return nil
}

// Snapshot is a read-only transaction on a connection of its own. Conn runs queries inside it;
// Close ends it.
type Snapshot struct {
	Conn *sql.Conn

	// at is where a source snapshot stands in the server's own terms, cheap to read: the
	// binlog file and offset on MariaDB, the executed GTID set or the file and offset on MySQL.
	// Two snapshots at the same at see the same transactions. Empty for a target snapshot.
	at      string
	mariadb bool
	flavor  string
}

// Close ends the transaction and returns the connection.
func (s *Snapshot) Close() {
	if s == nil || s.Conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.Conn.ExecContext(ctx, "ROLLBACK")
	s.Conn.Close()
	s.Conn = nil
}

func openSnapshotConn(ctx context.Context, db *sql.DB) (*sql.Conn, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	for _, q := range snapshotSetup {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			conn.Close()
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	return conn, nil
}

// Target opens a consistent snapshot on a server whose binlog position does not matter (a
// workflow's target).
func Target(ctx context.Context, db *sql.DB) (*Snapshot, error) {
	conn, err := openSnapshotConn(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("target snapshot: %w", err)
	}
	if err := beginSnapshot(ctx, conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("target snapshot: %w", err)
	}
	return &Snapshot{Conn: conn}, nil
}

// Source opens a consistent snapshot on the source and returns the binlog position it
// corresponds to, in the flavor of the workflow's positions (binlog.FlavorMariaDB, FlavorMySQL or
// FlavorFilePos).
//
// MariaDB reports the binlog file and offset of a consistent snapshot (binlog_snapshot_file and
// binlog_snapshot_position) without any lock; BINLOG_GTID_POS turns them into a GTID position.
// MySQL has no such status: the snapshot is taken under FLUSH TABLES WITH READ LOCK, held only
// while the transaction starts and the position is read, as mysqldump --single-transaction does.
func Source(ctx context.Context, db *sql.DB, flavor string) (*Snapshot, binlog.Position, error) {
	conn, err := openSnapshotConn(ctx, db)
	if err != nil {
		return nil, binlog.Position{}, fmt.Errorf("source snapshot: %w", err)
	}
	s := &Snapshot{Conn: conn, flavor: flavor}
	var version string
	if err := conn.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		s.Close()
		return nil, binlog.Position{}, fmt.Errorf("source snapshot: %w", err)
	}
	var pos binlog.Position
	if s.mariadb = strings.Contains(strings.ToLower(version), "mariadb"); s.mariadb {
		var file, offset string
		if file, offset, err = mariaSnapshot(ctx, conn); err == nil {
			s.at = file + ":" + offset
			pos, err = mariaPosition(ctx, conn, flavor, file, offset)
		}
	} else if pos, err = mysqlSnapshot(ctx, conn, flavor); err == nil {
		s.at = pos.String()
	}
	if err != nil {
		s.Close()
		return nil, binlog.Position{}, fmt.Errorf("source snapshot: %w", err)
	}
	return s, pos, nil
}

// Another opens one more snapshot on db, the source s was opened on, and returns it when it
// sees exactly the transactions s sees (it stands at the same binlog coordinates); otherwise
// (the source committed in between) it closes it and returns nil. It costs less than Source: on
// MariaDB it compares binlog coordinates, without turning them into a GTID position.
func (s *Snapshot) Another(ctx context.Context, db *sql.DB) (*Snapshot, error) {
	conn, err := openSnapshotConn(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("source snapshot: %w", err)
	}
	more := &Snapshot{Conn: conn, mariadb: s.mariadb, flavor: s.flavor}
	if s.mariadb {
		var file, offset string
		if file, offset, err = mariaSnapshot(ctx, conn); err == nil {
			more.at = file + ":" + offset
		}
	} else {
		var pos binlog.Position
		if pos, err = mysqlSnapshot(ctx, conn, s.flavor); err == nil {
			more.at = pos.String()
		}
	}
	if err != nil {
		more.Close()
		return nil, fmt.Errorf("source snapshot: %w", err)
	}
	if more.at != s.at || s.at == "" {
		more.Close()
		return nil, nil
	}
	return more, nil
}

// mariaSnapshot starts the snapshot on conn and returns the binlog file and offset it
// corresponds to.
func mariaSnapshot(ctx context.Context, conn *sql.Conn) (file, offset string, err error) {
	if err := beginSnapshot(ctx, conn); err != nil {
		return "", "", err
	}
	rows, err := conn.QueryContext(ctx, "SHOW STATUS LIKE 'binlog_snapshot_%'")
	if err != nil {
		return "", "", err
	}
	status := map[string]string{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			rows.Close()
			return "", "", err
		}
		status[strings.ToLower(name)] = value
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", "", err
	}
	file, offset = status["binlog_snapshot_file"], status["binlog_snapshot_position"]
	if file == "" || offset == "" {
		return "", "", errors.New("the source reports no binlog_snapshot_file: is its binary log on?")
	}
	return file, offset, nil
}

// mariaPosition is the position of MariaDB binlog coordinates in flavor. BINLOG_GTID_POS reads
// the binlog file from its start up to offset: tens of milliseconds for a file of some hundred
// megabytes.
func mariaPosition(ctx context.Context, conn *sql.Conn, flavor, file, offset string) (binlog.Position, error) {
	if flavor == binlog.FlavorFilePos {
		return binlog.ParsePosition(binlog.FlavorFilePos+"/"+file+":"+offset, "mariadb")
	}
	var gtid sql.NullString
	if err := conn.QueryRowContext(ctx, "SELECT BINLOG_GTID_POS(?, ?)", file, offset).Scan(&gtid); err != nil {
		return binlog.Position{}, fmt.Errorf("BINLOG_GTID_POS(%s, %s): %w", file, offset, err)
	}
	if !gtid.Valid {
		return binlog.Position{}, fmt.Errorf("BINLOG_GTID_POS(%s, %s) is NULL", file, offset)
	}
	return binlog.ParsePosition(binlog.FlavorMariaDB+"/"+gtid.String, "mariadb")
}

func mysqlSnapshot(ctx context.Context, conn *sql.Conn, flavor string) (pos binlog.Position, err error) {
	if _, err := conn.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
		return pos, fmt.Errorf("FLUSH TABLES WITH READ LOCK (needs the RELOAD privilege): %w", err)
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, uerr := conn.ExecContext(uctx, "UNLOCK TABLES"); uerr != nil && err == nil {
			err = fmt.Errorf("UNLOCK TABLES: %w", uerr)
		}
	}()
	if err := beginSnapshot(ctx, conn); err != nil {
		return pos, err
	}
	if flavor == binlog.FlavorFilePos {
		file, offset, err := BinlogFile(ctx, conn)
		if err != nil {
			return pos, err
		}
		return binlog.ParsePosition(fmt.Sprintf("%s/%s:%d", binlog.FlavorFilePos, file, offset), "mysql")
	}
	var gtid string
	if err := conn.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_executed").Scan(&gtid); err != nil {
		return pos, err
	}
	return binlog.ParsePosition(binlog.FlavorMySQL+"/"+strings.ReplaceAll(gtid, "\n", ""), "mysql")
}
