package plan

// The planner's surface besides its plans (see plan.go): what it is told between calls, and what
// it tells of the target transaction it holds, for the executor and the scheduler.

// TakesRows reports whether the planner applies a rows event now, and so needs its table's
// definition; when not, Event skips it (an XA transaction already prepared) or fails.
func (p *Planner) TakesRows() bool { return p.txOpen && !p.xaSkip }

// SkipXA is told that the XA transaction just started is already prepared on the target (by an
// earlier attempt): its rows are skipped, and the statements that follow run on the main session.
func (p *Planner) SkipXA() {
	p.xaSkip = true
	p.fkOff = p.mainFKOff
}

// ForeignKeysUnknown is told that a batch failed in a way that may have left the session's
// foreign_key_checks other than planned (a DDL that exec_ignore let fail).
func (p *Planner) ForeignKeysUnknown() { p.fkUnknown = true }

// InFlight tells the planner the writesets of the batches in flight (nil for a batch that has
// none), for the commits of the calls after it (see Config.Split). The slice is kept, not
// copied: it must not be written afterwards.
func (p *Planner) InFlight(sets []*Writeset) { p.inflight = sets }

// State is what the planner holds between calls, for the executor and the scheduler.
type State struct {
	GTID        string // the source transaction planned last
	InTxn       bool   // a source transaction is open (continues in the next fetch)
	TxOpen      bool   // a target transaction is open (or its BEGIN planned)
	OnXA        bool   // the open target transaction is an XA transaction's
	SkipPending bool   // the position of skipped transactions waits to be saved
	Stopped     bool   // the stop position was reached and planned
}

// State returns what the planner holds now.
func (p *Planner) State() State {
	return State{GTID: p.gtid, InTxn: p.inTxn, TxOpen: p.txOpen, OnXA: p.session() != "", SkipPending: p.skipPos != "", Stopped: p.stopped}
}

// Writeset returns the writeset of the open target transaction so far (Config.Writesets).
// It is the planner's: read it before the next call.
func (p *Planner) Writeset() *Writeset { return &p.ws }

// Splittable reports whether the open target transaction's rows all folded, so that its commit
// can be split (see flushSplit).
func (p *Planner) Splittable() bool {
	return p.cfg.Split && p.cur.n == 1 && p.group.t == nil && p.fold.rows > 0 && p.session() == ""
}

// Pending reports the size of the open target transaction so far: source transactions and bytes
// of statements planned.
func (p *Planner) Pending() (commits, bytes int) { return p.commits, len(p.cur.buf) }

// Detach keeps b, handed out in a step of the last call, from being reused by the next: an
// executor still holds it. Reuse gives it back.
func (p *Planner) Detach(b *Batch) {
	for i, u := range p.used {
		if u == b {
			p.used = append(p.used[:i], p.used[i+1:]...)
			return
		}
	}
}

// Reuse takes back a batch that Detach kept.
func (p *Planner) Reuse(b *Batch) {
	b.Reset()
	p.spare = append(p.spare, b)
}
