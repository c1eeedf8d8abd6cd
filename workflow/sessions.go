package workflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// The owner's target sessions: the lease records, in the record's sessions column, the
// connection ids of the sessions that can hold a transaction open (the applier's, which also
// writes the heartbeats, and those of its open XA transactions), so that whoever takes an expired lease over can end them. The value is
// "<boot>:<id>[,<id>...]", where boot is the target server's start time in unix seconds: after a
// target restart connection ids start again from 1, and an id recorded before it names some
// other client's session, which must never be killed.
//
// The keepalive's renewal connection, the message writer and the state and log writes go
// through the pool in single autocommit statements: they hold no transaction open between round
// trips, so there is nothing of theirs to end.

// server is a pool or one of its connections.
type server interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// BootTime returns the target server's start time in unix seconds: its clock less its uptime.
func BootTime(ctx context.Context, db server) (int64, error) {
	var now, uptime int64
	var name string
	if err := db.QueryRowContext(ctx, "SELECT UNIX_TIMESTAMP()").Scan(&now); err != nil {
		return 0, fmt.Errorf("read the target's clock: %w", err)
	}
	if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Uptime'").Scan(&name, &uptime); err != nil {
		return 0, fmt.Errorf("read the target's uptime: %w", err)
	}
	return now - uptime, nil
}

// bootSlack is how far apart two computations of bootTime may be for one server run: uptime and
// the clock tick in whole seconds, not together.
const bootSlack = 2

// Parts of the owner that record target sessions (see RecordSessionsOf).
const (
	PartApplier = "applier"
	PartCopy    = "copy"
)

// RecordSession records connIDs as the applier's target sessions: RecordSessionsOf(ctx,
// PartApplier, connIDs...).
func (l *Lease) RecordSession(ctx context.Context, connIDs ...int64) error {
	return l.RecordSessionsOf(ctx, PartApplier, connIDs...)
}

// RecordSessionsOf records connIDs as the target sessions of one part of the lease owner (the
// applier, the copy's writers), replacing that part's earlier ones; the record holds every
// part's, fenced by the epoch, so that the next owner can end them all (see Store.Acquire). It
// returns an error wrapping ErrLostOwnership when the workflow was taken over.
func (l *Lease) RecordSessionsOf(ctx context.Context, part string, connIDs ...int64) error {
	l.sessionsMu.Lock()
	defer l.sessionsMu.Unlock()
	if l.parts == nil {
		l.parts = map[string][]int64{}
	}
	l.parts[part] = append([]int64(nil), connIDs...)
	var all []int64
	for _, p := range slices.Sorted(maps.Keys(l.parts)) {
		all = append(all, l.parts[p]...)
	}
	boot, err := BootTime(ctx, l.store.db)
	if err != nil {
		return fmt.Errorf("record target session of workflow %s: %w", l.name, err)
	}
	return l.recordSession(ctx, "sessions", boot, all...)
}

// RecordSourceSession records connID, a connection to the source server started at boot (see
// BootTime), as the lease owner's binlog connection, fenced by the epoch, so that the next owner
// can end it on the source (see PreviousSourceSession): a frozen owner's binlog dump thread,
// blocked writing to a client that reads nothing, otherwise keeps the workflow's server id on
// the source until the source's net_write_timeout.
func (l *Lease) RecordSourceSession(ctx context.Context, boot, connID int64) error {
	return l.recordSession(ctx, "source_session", boot, connID)
}

func (l *Lease) recordSession(ctx context.Context, column string, boot int64, connIDs ...int64) error {
	ids := make([]string, len(connIDs))
	for i, id := range connIDs {
		ids[i] = strconv.FormatInt(id, 10)
	}
	res, err := l.store.db.ExecContext(ctx, "UPDATE "+l.store.table("vreplication")+
		" SET "+column+" = ? WHERE id = ? AND epoch = ?", strconv.FormatInt(boot, 10)+":"+strings.Join(ids, ","), l.id, l.epoch)
	if err != nil {
		return fmt.Errorf("record %s of workflow %s: %w", column, l.name, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	return l.lost(ctx)
}

// PreviousSourceSession returns the binlog connection the previous owner recorded on the source
// when this lease was taken over from an expired one, for KillSessions on the source; empty when
// there is none.
func (l *Lease) PreviousSourceSession() string { return l.prevSource }

// Ended returns the target connection ids of the previous owner's sessions that Acquire killed,
// and the error of a kill that failed (for the caller to log), if any.
func (l *Lease) Ended() ([]int64, error) { return l.ended, l.endErr }

// parseSessions parses a sessions value; ok is false for an empty or malformed one.
func parseSessions(v string) (boot int64, ids []int64, ok bool) {
	b, list, found := strings.Cut(v, ":")
	if !found {
		return 0, nil, false
	}
	boot, err := strconv.ParseInt(b, 10, 64)
	if err != nil {
		return 0, nil, false
	}
	for _, f := range strings.Split(list, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || id <= 0 {
			return 0, nil, false
		}
		ids = append(ids, id)
	}
	return boot, ids, len(ids) > 0
}

// endExpiredOwner kills the target sessions recorded by the owner of record id when its lease
// has expired on the target's clock, so that a frozen or partitioned owner's open transaction
// rolls back and its locks (of replicated rows and of the record row) go at once, before the
// caller's conditional UPDATE needs the record row, and returns the owner's recorded binlog
// connection for the caller to end on the source. The read takes no lock: it must not wait on
// the very row lock it is about to free. An owner that renewed between the read and the kill
// loses a batch, which it retries; its lease stays its own, as the UPDATE then fails.
func (s *Store) endExpiredOwner(ctx context.Context, conn *sql.Conn, id int64) (ended []int64, source string, err error) {
	var sessions, src sql.NullString
	var expired bool
	err = conn.QueryRowContext(ctx, "SELECT sessions, source_session, owner <> '' AND lease_until < "+nowMillis+
		" FROM "+s.table("vreplication")+" WHERE id = ?", id).Scan(&sessions, &src, &expired)
	if err != nil {
		return nil, "", fmt.Errorf("read sessions of workflow %d: %w", id, err)
	}
	if !expired {
		return nil, "", nil
	}
	ended, err = KillSessions(ctx, conn, sessions.String, AnySession)
	return ended, src.String, err
}

// Which sessions KillSessions may kill.
const (
	// AnySession is every recorded session: the target's, which are the owner's own.
	AnySession = ""
	// BinlogDumps is only the source's binlog dump threads (processlist command "Binlog Dump"
	// or "Binlog Dump GTID"): a source that shows its replicas otherwise (Dolt) is left alone.
	BinlogDumps = "Binlog Dump%"
)

// KillSessions kills the connections of a recorded sessions value on the server db, if they are
// of the server's current run and, unless command is AnySession, the processlist shows them
// running a command LIKE command (or already Killed but not gone: a dump thread blocked writing
// to a frozen client, which a KILL CONNECTION does end); it returns the ids it killed. A connection already gone is no
// error.
func KillSessions(ctx context.Context, db server, sessions, command string) (ended []int64, err error) {
	recBoot, ids, ok := parseSessions(sessions)
	if !ok {
		return nil, nil
	}
	boot, err := BootTime(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("end the previous owner's sessions: %w", err)
	}
	if recBoot < boot-bootSlack || recBoot > boot+bootSlack {
		return nil, nil // recorded before the server restarted: those sessions are gone
	}
	var errs []error
	for _, cid := range ids {
		if command != AnySession {
			var n int
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ? AND (COMMAND LIKE ? OR COMMAND = 'Killed')", cid, command).Scan(&n); err != nil {
				errs = append(errs, fmt.Errorf("look for connection %d of the previous owner: %w", cid, err))
				continue
			}
			if n == 0 {
				continue
			}
		}
		_, kerr := db.ExecContext(ctx, "KILL CONNECTION "+strconv.FormatInt(cid, 10))
		var me *mysql.MySQLError
		switch {
		case kerr == nil:
			ended = append(ended, cid)
		case errors.As(kerr, &me) && me.Number == 1094: // unknown thread id: already gone
		default:
			errs = append(errs, fmt.Errorf("kill connection %d of the previous owner: %w", cid, kerr))
		}
	}
	return ended, errors.Join(errs...)
}

// AddLog adds a row to the workflow's log like Store.AddLog, if the lease is still ours: a
// process that lost the workflow leaves no trace in its history. The epoch is read without a
// lock just before the write (a locking read would wait behind the record row of an open batch,
// the very situation errors are logged in), so a takeover that commits between the two is the
// only way a row of the old owner lands after it. It returns an error wrapping
// ErrLostOwnership when the workflow was taken over.
func (l *Lease) AddLog(ctx context.Context, typ, state, message string) error {
	if err := l.lost(ctx); err != nil {
		return err
	}
	return l.store.AddLog(ctx, l.id, typ, state, message)
}
