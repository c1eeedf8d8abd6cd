package plan

import (
	"fmt"

	"github.com/vplayer/vplayer/event"
)

// The planner's XA transactions: a source transaction prepared with XA PREPARE is applied as an
// XA transaction of the same XID on a session of its own, prepared there, and committed or rolled
// back when the source's XA COMMIT or XA ROLLBACK arrives (see xa.go for the executor's side).

// xaStart plans the target XA transaction of a source one: the open target transaction is
// committed first, as for a DDL.
func (p *Planner) xaStart(e *event.Event) error {
	if err := p.commit(); err != nil {
		return err
	}
	p.xid, p.xaSkip = e.XID, false
	p.mainFKOff, p.fkOff = p.fkOff, false // the new session runs with the checks on
	p.cur.Add("", "XA START "+e.XID)
	p.emit(Step{Kind: StepXAStart, XID: e.XID, Stmts: p.take()})
	p.txOpen = true
	return nil
}

// xaPrepare plans preparing the open target XA transaction, then saving the position after it.
func (p *Planner) xaPrepare(e *event.Event) error {
	if !p.xaSkip {
		if err := p.flushPending(); err != nil {
			return err
		}
		Check := p.checked()
		slot := p.cur.n // the fence check
		p.cur.Add("", "XA END "+p.xid)
		p.cur.Add("XA PREPARE", "XA PREPARE "+p.xid)
		ws := p.takeWriteset()
		if ws != nil {
			ws.barrier = true
		}
		p.emit(Step{Kind: StepXAPrepare, XID: p.xid, Check: Check, Stmts: p.take(), Slot: slot, Writeset: ws})
		p.fkOff = p.mainFKOff // the XA session stays with its prepared transaction
	}
	p.xid, p.xaSkip, p.txOpen = "", false, false
	p.pos, p.txTime = e.Pos, e.Timestamp
	p.rows = 0
	return p.savePos()
}

// xaOnePhase plans committing the open target XA transaction in one phase (MySQL's XA COMMIT ...
// ONE PHASE), its position written inside it.
func (p *Planner) xaOnePhase() error {
	if p.xaSkip {
		// A one-phase XA transaction is never prepared: the XID found at its XA START is not
		// this transaction applied before, and its rows are not on the target.
		return fmt.Errorf("XA COMMIT %s ONE PHASE: its XA START met an XID already prepared on the target, which a one-phase transaction never is; retrying", p.xid)
	}
	if err := p.flushPending(); err != nil {
		return err
	}
	Check := p.checked()
	slot := p.cur.n // the position
	p.cur.Add("", "XA END "+p.xid)
	p.cur.Add("XA COMMIT", "XA COMMIT "+p.xid+" ONE PHASE")
	ws := p.takeWriteset()
	if ws != nil {
		ws.barrier = true
	}
	p.emit(Step{Kind: StepXAOnePhase, XID: p.xid, Check: Check, Stmts: p.take(), Slot: slot, End: p.end(), Writeset: ws})
	p.fkOff = p.mainFKOff // the XA session is gone
	p.xid, p.txOpen = "", false
	return nil
}

// xaEnd plans XA COMMIT or XA ROLLBACK of a prepared transaction, then saving the position.
func (p *Planner) xaEnd(e *event.Event) error {
	if err := p.commit(); err != nil {
		return err
	}
	if e.Type == event.XARollback {
		p.cur.Add("XA ROLLBACK", "XA ROLLBACK "+e.XID)
	} else {
		p.cur.Add("XA COMMIT", "XA COMMIT "+e.XID)
	}
	p.emit(Step{Kind: StepXAEnd, Stmts: p.take(), Event: e, Writeset: &Writeset{barrier: true}})
	p.pos, p.txTime = e.Pos, e.Timestamp
	if e.Type == event.XACommit {
		p.commits++
	}
	return p.savePos()
}
