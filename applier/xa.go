package applier

import (
	"context"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/vplayer/vplayer/applier/plan"
	"github.com/vplayer/vplayer/event"
)

// XA transactions are applied as XA transactions on the target, with the source's XID: the rows
// of a prepared source transaction are prepared on the target (XA START ... XA PREPARE), where
// they stay invisible and locked as on the source, survive the applier's connection and a
// restart of the target, and become visible only when the XA COMMIT arrives, at its place in
// the order. The position after the PREPARE is saved in a transaction of its own, since a
// position written inside the XA transaction would hold the record's row until its COMMIT.
//
// A session that prepared an XA transaction can do nothing but end it (XAER_RMFAIL), so each XA
// transaction gets a session of its own, kept until its XA COMMIT or ROLLBACK in this attempt.
// When the attempt ends first, its XA sessions are killed: a prepared XA transaction outlives its
// session, detached, and a later attempt ends it from its main session.
//
// Crash safety, at every instant:
//   - ended after the target's XA PREPARE, before its position was saved: the retry's XA START
//     of the same XID fails with XAER_DUPID (1440), the XA transaction is there, and its rows
//     are skipped;
//   - ended around XA COMMIT or XA ROLLBACK: a fenced mark (the record's ddl_pos, as for a DDL)
//     is committed just before it, so a retry that meets XAER_NOTA (1397: no such XID) on a
//     marked position knows an earlier attempt ended it. Without the mark, an XA COMMIT of an
//     XID the target never prepared (prepared before the workflow's start position) is a
//     terminal error: its rows cannot be applied.

// xaDetachPolls and xaDetachPoll bound the wait for a prepared XA transaction whose session
// (of an earlier attempt) is being killed: until the server has detached it, other sessions
// cannot see it.
const (
	xaDetachPolls = 20
	xaDetachPoll  = 100 * time.Millisecond
)

// xaListed reports whether XA RECOVER on the target lists xid (x'gtrid',x'bqual',format) as
// prepared and detached from any session.
func (a *Applier) xaListed(ctx context.Context, xid string) (bool, error) {
	gtrid, bqual, format, err := parseXID(xid)
	if err != nil {
		return false, err
	}
	rows, err := a.main.conn.QueryContext(ctx, "XA RECOVER")
	if err != nil {
		return false, err
	}
	defer rows.Close()
	for rows.Next() {
		var f, gl, bl int64
		var data []byte
		if err := rows.Scan(&f, &gl, &bl, &data); err != nil {
			return false, err
		}
		if f == format && int(gl) == len(gtrid) && int(bl) == len(bqual) && string(data) == string(gtrid)+string(bqual) {
			return true, nil
		}
	}
	return false, rows.Err()
}

// parseXID splits x'<gtrid hex>',x'<bqual hex>',<format> (the binlog's spelling, in the case
// binlog.xaStatement gives it) into its parts.
func parseXID(xid string) (gtrid, bqual []byte, format int64, err error) {
	parts := strings.Split(xid, ",")
	if len(parts) != 3 {
		return nil, nil, 0, fmt.Errorf("XID %s: want x'gtrid',x'bqual',format", xid)
	}
	hexPart := func(p string) ([]byte, error) {
		p = strings.TrimSpace(p)
		if len(p) < 3 || (p[0] != 'x' && p[0] != 'X') || p[1] != '\'' || p[len(p)-1] != '\'' {
			return nil, fmt.Errorf("XID %s: %q is not a hex literal", xid, p)
		}
		return hex.DecodeString(p[2 : len(p)-1])
	}
	if gtrid, err = hexPart(parts[0]); err != nil {
		return nil, nil, 0, err
	}
	if bqual, err = hexPart(parts[1]); err != nil {
		return nil, nil, 0, err
	}
	format, err = strconv.ParseInt(strings.TrimSpace(parts[2]), 10, 64)
	return gtrid, bqual, format, err
}

// isXANota reports whether err is XAER_NOTA, an unknown XID.
func isXANota(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == errXANota
}

// XA error numbers.
const (
	errXADupID = 1440 // XAER_DUPID: the XID already exists
	errXANota  = 1397 // XAER_NOTA: unknown XID
	errXARB    = 1402 // XA_RBROLLBACK: the branch was rolled back (one that changed nothing)
)

// session is where a step runs: the session of the XA transaction xid, else the main one.
func (a *Applier) session(xid string) *session {
	if xid != "" {
		if s, ok := a.xaSessions[xid]; ok {
			return s
		}
	}
	return a.main
}

// releaseXA ends the XA sessions of the attempt: killed, so that a prepared transaction is
// detached for the next attempt (and one not yet prepared rolls back).
func (a *Applier) releaseXA() {
	for xid, s := range a.xaSessions {
		a.kill(s.id)
		s.conn.Raw(func(any) error { return driver.ErrBadConn })
		s.conn.Close()
		delete(a.xaSessions, xid)
	}
}

// ErrXA is wrapped by the terminal errors of XA transactions that vplayer cannot apply exactly.
var ErrXA = errors.New("XA transaction cannot be applied")

// xaStart opens the target XA transaction of a source one on a session of its own (the open
// target transaction was committed before, as for a DDL).
func (a *Applier) xaStart(ctx context.Context, s *plan.Step) error {
	xid := s.XID
	conn, id, _, err := a.openSession(ctx)
	if err != nil {
		return err
	}
	if a.xaSessions == nil {
		a.xaSessions = map[string]*session{}
	}
	xs := &session{conn: conn, id: id, tr: &a.inline}
	a.xaSessions[xid] = xs
	if err := a.recordSessions(ctx); err != nil {
		return err
	}
	err = a.flush(ctx, xs, s.Stmts)
	var me *mysql.MySQLError
	switch {
	case err == nil:
	case errors.As(err, &me) && me.Number == errXADupID:
		a.closeXASession(xid)
		prepared, perr := a.xaListed(ctx, xid)
		switch {
		case perr != nil:
			a.cfg.Logger.Warn("could not list the target's prepared XA transactions (XA RECOVER); taking the existing XID for one an earlier attempt prepared",
				"xid", xid, "error", perr)
		case !prepared:
			// Active, not prepared: an earlier attempt's session still rolling it back, or
			// another client's transaction. Neither is ours to skip.
			return fmt.Errorf("XA START %s: the XID is in use on the target by a transaction that is not prepared (an earlier attempt's session still ending, or another client's): %w", xid, err)
		}
		// An earlier attempt prepared it and ended before saving the position after it.
		a.cfg.Logger.Info("XA transaction already prepared on the target by an earlier attempt; not applying its rows again", "xid", xid, "gtid", a.plan.State().GTID)
		a.plan.SkipXA()
	default:
		return err
	}
	a.txOpen = true
	a.txnSince.Store(a.cfg.Now().UnixNano())
	return nil
}

// closeXASession returns the session of XA transaction xid, which holds none now, to the pool.
func (a *Applier) closeXASession(xid string) {
	if s, ok := a.xaSessions[xid]; ok {
		s.conn.Close()
		delete(a.xaSessions, xid)
	}
}

// xaPrepare prepares the open target XA transaction, the lease's fence checked inside it.
func (a *Applier) xaPrepare(ctx context.Context, s *plan.Step) error {
	conn := a.session(s.XID)
	if s.Check != nil {
		if err := a.flush(ctx, conn, s.Check); err != nil {
			return err
		}
	}
	s.Stmts.Insert(s.Slot, a.cfg.Record.FenceCheckSQL())
	if err := a.flush(ctx, conn, s.Stmts); err != nil {
		return err
	}
	a.txOpen = false
	a.countCommitted(conn) // prepared: its rows outlive the session
	return nil
}

// xaOnePhase commits the open target XA transaction in one phase (MySQL's XA COMMIT ... ONE
// PHASE), its position written inside it.
func (a *Applier) xaOnePhase(ctx context.Context, s *plan.Step) error {
	conn := a.session(s.XID)
	if s.Check != nil {
		if err := a.flush(ctx, conn, s.Check); err != nil {
			return err
		}
	}
	s.Stmts.Insert(s.Slot, a.positionSQL(s.End, a.cfg.Now()))
	if err := a.flush(ctx, conn, s.Stmts); err != nil {
		return err
	}
	a.countCommitted(conn)
	a.closeXASession(s.XID)
	a.txOpen = false
	a.committedBatch(s.End)
	return nil
}

// xaEnd applies XA COMMIT or XA ROLLBACK of a prepared transaction, after a mark of its position.
func (a *Applier) xaEnd(ctx context.Context, s *plan.Step) error {
	e := s.Event
	stmt := s.Stmts.Stmt(0)
	maybeRan := e.Pos == a.cfg.DDLStarted
	// The mark commits by itself (the session is in autocommit between transactions) and is
	// fenced: a process that lost the workflow fails there, before the XA statement.
	mark := a.ddlMarkSQL(e.Pos)
	var err error
	if xs, ok := a.xaSessions[e.XID]; ok {
		// Prepared by this attempt: its own session ends it.
		a.b.Add("", mark)
		if err = a.flush(ctx, a.main, &a.b); err != nil {
			return err
		}
		_, err = xs.conn.ExecContext(ctx, stmt)
		var me *mysql.MySQLError
		if err == nil || (errors.As(err, &me) && (me.Number == errXARB || me.Number == errXANota)) {
			a.closeXASession(e.XID) // the XA transaction has ended: the session holds nothing
		}
	} else {
		s.Stmts.Insert(0, mark)
		err = a.flush(ctx, a.main, s.Stmts)
		for i := 0; i < xaDetachPolls && isXANota(err); i++ {
			// The session of an earlier attempt (or process) that prepared it may not have been
			// detached from it yet: the server ends a killed or lost session asynchronously,
			// and until then no other session sees the transaction. Even on a marked position
			// (maybeRan), an unknown XID is believed only once this wait is over.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(xaDetachPoll):
			}
			_, err = a.main.conn.ExecContext(ctx, stmt)
		}
	}
	var me *mysql.MySQLError
	switch {
	case err == nil:
	case errors.As(err, &me) && me.Number == errXARB:
		// A prepared XA transaction that changed nothing on the target (no replicated table)
		// has nothing to commit.
		a.cfg.Logger.Debug("XA transaction changed nothing on the target", "statement", stmt, "pos", e.Pos)
	case errors.As(err, &me) && me.Number == errXANota && maybeRan:
		a.cfg.Logger.Info("XA transaction already ended on the target by an attempt that ended before recording it", "statement", stmt, "pos", e.Pos)
	case errors.As(err, &me) && me.Number == errXANota && e.Type == event.XARollback:
		a.cfg.Logger.Info("XA ROLLBACK of a transaction not prepared on the target (prepared before the workflow's start position): nothing to undo", "xid", e.XID, "pos", e.Pos)
	case errors.As(err, &me) && me.Number == errXANota:
		return fmt.Errorf("%w: XA COMMIT %s at position %s: no XA transaction with this XID is prepared on the target, "+
			"so its rows are not there (it was prepared before the workflow's start position, or ended on the target by hand); "+
			"re-create the workflow from a snapshot taken after it: %v", ErrXA, e.XID, e.Pos, err)
	default:
		return err
	}
	return nil
}
