package applier

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/vplayer/vplayer/workflow"
)

// flush sends the batch: in one round trip when it fits the target's max_allowed_packet, else
// in as many as it needs, cut between statements. A statement that does not fit alone is a
// terminal error naming the variable.
func (a *Applier) flush(ctx context.Context) error {
	if a.b.n == 0 {
		return nil
	}
	defer a.b.reset()
	for first := 0; first < a.b.n; {
		last := a.b.n // statements [first, last) go in this round trip
		start := a.b.starts[first]
		for last > first+1 && a.b.end(last-1)-start > a.maxPacket {
			last--
		}
		if size := a.b.end(last-1) - start; size > a.maxPacket {
			return &PacketError{Shape: a.b.shapeOf(first), Size: size + packetOverhead, MaxAllowed: a.maxPacket + packetOverhead}
		}
		if err := a.send(ctx, first, last); err != nil {
			return err
		}
		first = last
	}
	return nil
}

// send runs statements [first, last) of the batch in one round trip and checks what they affected.
func (a *Applier) send(ctx context.Context, first, last int) error {
	shape := a.b.shape()
	a.statement.Store(&shape)
	a.statementSince.Store(a.cfg.Now().UnixNano())
	q := string(a.b.buf[a.b.starts[first]:a.b.end(last-1)])
	q = strings.TrimSuffix(q, ";")
	var affected []int64
	err := a.session().Raw(func(dc any) error {
		res, err := dc.(driver.ExecerContext).ExecContext(ctx, q, nil)
		if err != nil {
			return err
		}
		if r, ok := res.(mysql.Result); ok {
			affected = r.AllRowsAffected()
		}
		return nil
	})
	a.statementSince.Store(0)
	a.statement.Store(nil)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if workflow.IsFenceViolation(err) {
			return &workflow.FenceError{Err: err}
		}
		if me := a.duplicateKey(err, shape); me != nil {
			return me
		}
		return fmt.Errorf("apply %s: %w", shape, err)
	}
	a.progressed()
	return a.verify(ctx, a.b.checksIn(first, last), first, affected)
}

// duplicateKey describes a duplicate-key error as a row mismatch (an INSERT of a key that exists)
// when the round trip held only one table's changes, and so names it; else nil.
func (a *Applier) duplicateKey(err error, shape string) error {
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1062 {
		return nil
	}
	var t *table
	for _, c := range a.b.checks {
		if t != nil && c.t != t {
			return nil
		}
		t = c.t
	}
	name := shape
	if t != nil {
		name = t.quoted
	}
	return &MismatchError{Kind: InsertExists, Table: name, Key: keyColumns(t), GTID: a.gtid, Pos: a.committed, Cause: err}
}

// keyColumns names t's key columns, for a message.
func keyColumns(t *table) string {
	if t == nil || len(t.keyTuple) == 0 {
		return ""
	}
	return string(t.keyTuple)
}

// PacketError is a statement larger than the target's max_allowed_packet: terminal, since every
// retry would send it again.
type PacketError struct {
	Shape      string // the statement's kind and table
	Size       int    // bytes the statement's packet needs
	MaxAllowed int    // the target's max_allowed_packet, in bytes
}

func (e *PacketError) Error() string {
	return fmt.Sprintf("statement %s is %d bytes, over the target's max_allowed_packet of %d bytes: "+
		"raise it on the target to at least %d (SET GLOBAL max_allowed_packet = %d, and in its configuration file)",
		e.Shape, e.Size, e.MaxAllowed, e.Size, roundUpMiB(e.Size))
}

// roundUpMiB rounds n bytes up to a whole number of MiB, in bytes.
func roundUpMiB(n int) int { return (n + 1<<20 - 1) &^ (1<<20 - 1) }

// commit writes the position and commits the open target transaction, if any.
func (a *Applier) commit(ctx context.Context) error {
	if !a.txOpen {
		return nil
	}
	if err := a.flushPending(); err != nil {
		return err
	}
	now := a.cfg.Now()
	if err := a.checkBeforeCommit(ctx); err != nil {
		return err
	}
	a.b.add("", a.positionSQL(now))
	if a.cfg.BeforeCommit != nil {
		if err := a.flush(ctx); err != nil {
			return err
		}
		if err := a.cfg.BeforeCommit(); err != nil {
			return fmt.Errorf("before commit: %w", err)
		}
	}
	a.b.add("", "COMMIT")
	if err := a.flush(ctx); err != nil {
		return err
	}
	a.txOpen = false
	a.lastSave = now
	a.committedBatch()
	return nil
}

// committedBatch does the bookkeeping of a committed target transaction that saved a.pos.
func (a *Applier) committedBatch() {
	a.committed = a.pos
	a.skipPos = ""
	a.stats.Saves.Add(1)
	if a.commits > 0 {
		a.stats.Commits.Add(1)
		a.stats.Transactions.Add(int64(a.commits))
		a.stats.LastCommitted.Store(a.txTime)
		a.stats.observePerCommit(a.commits)
	}
	a.stats.Rows.Add(int64(a.rows))
	a.commits, a.rows = 0, 0
	a.progressed() // the fetch may still hold work: idle clears the clock once it holds none
	a.txnSince.Store(0)
	if !a.inTxn {
		a.oldestPending.Store(0)
	}
}

func (a *Applier) reachedStop(pos string) bool {
	return a.cfg.StopAt != nil && a.cfg.StopAt(pos)
}

// commitAndStop commits everything up to the stop position and records the stop.
func (a *Applier) commitAndStop(ctx context.Context) error {
	if a.skipPos != "" && !a.txOpen {
		a.pos, a.txTime = a.skipPos, a.skipTime
		if err := a.openTx(); err != nil {
			return err
		}
	}
	if err := a.commit(ctx); err != nil {
		return err
	}
	if err := a.setState(ctx, workflow.StateStopped, "Stopped at position "+a.pos); err != nil {
		return err
	}
	a.stopped = true
	return nil
}

// savePos records a.pos in a transaction of its own.
func (a *Applier) savePos(ctx context.Context) error {
	if err := a.openTx(); err != nil {
		return err
	}
	return a.commit(ctx)
}

// positionSQL is the statement that records a.pos, fenced by the lease when there is one.
func (a *Applier) positionSQL(now time.Time) string {
	if a.cfg.Lease != nil {
		return a.cfg.Lease.PositionSQL(a.pos, now.Unix(), a.txTime)
	}
	return a.cfg.Store.PositionSQL(a.cfg.ID, a.pos, now.Unix(), a.txTime)
}

// setState records a state change, fenced by the lease when there is one.
func (a *Applier) setState(ctx context.Context, state, msg string) error {
	if a.cfg.Lease != nil {
		return a.cfg.Lease.SetState(ctx, state, msg)
	}
	return a.cfg.Store.SetState(ctx, a.cfg.ID, state, msg)
}
