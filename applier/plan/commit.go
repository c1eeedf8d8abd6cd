package plan

// The open target transaction's life: begun, its statements sent while it stays open, committed
// with the position it ends at (and its writeset), and the commit that records the stop.

// openTx begins a target transaction, unless one is open.
func (p *Planner) openTx() {
	if p.txOpen {
		return
	}
	p.cur.Add("", "BEGIN")
	p.txOpen = true
	if p.cfg.Parallel {
		p.fkUnknown = true // the session that runs it may have run any other batch before
	}
	p.emit(Step{Kind: StepBegin})
}

// send hands out the pending statements to be sent now, the transaction staying open.
func (p *Planner) send() {
	if p.cur.n == 0 {
		return
	}
	if p.cfg.Parallel && !p.ws.barrier {
		// Sent before its commit, the batch runs on the main session, alone: its writeset would
		// only grow with the transaction.
		p.ws = Writeset{barrier: true}
	}
	p.emit(Step{Kind: StepSend, XID: p.session(), Stmts: p.take()})
}

// checked hands out, in strict mode, the pending statements when they hold checked ones, to be
// sent before the statement that commits them is added: their counts come back with the round
// trip, and a mismatch must be found while the transaction can still be rolled back. One round
// trip more per commit that holds checked statements; none in idempotent mode, which only
// counts. nil when there is nothing to send first.
func (p *Planner) checked() *Batch {
	if p.cfg.ExecMode != ExecModeStrict || len(p.cur.checks) == 0 {
		return nil
	}
	return p.take()
}

// end returns what committing the open target transaction saves, and starts counting afresh.
func (p *Planner) end() Saved {
	s := Saved{Pos: p.pos, TxTime: p.txTime, Commits: p.commits, Rows: p.rows, InTxn: p.inTxn}
	p.commits, p.rows = 0, 0
	p.skipPos = ""
	return s
}

// takeWriteset hands out the writeset of the rows planned so far, when writesets are on.
func (p *Planner) takeWriteset() *Writeset {
	if !p.cfg.Writesets {
		return nil
	}
	ws := p.ws
	p.ws = Writeset{}
	return &ws
}

// commit plans the commit of the open target transaction, if any, with the position.
func (p *Planner) commit() error {
	if !p.txOpen {
		return nil
	}
	late, err := p.flushSplit()
	if err != nil {
		return err
	}
	Check := p.checked()
	p.emit(Step{Kind: StepCommit, XID: p.session(), Check: Check, Stmts: p.take(), Late: late, End: p.end(), Writeset: p.takeWriteset()})
	p.txOpen = false
	return nil
}

// flushSplit is flushPending for a commit: when the batch's rows all folded (only its BEGIN is
// planned) and batches in flight (InFlight) may touch some of its keys, their statements go
// into the returned batch instead of the pending ones. nil when nothing goes there.
func (p *Planner) flushSplit() (*Batch, error) {
	if err := p.flushGroup(); err != nil {
		return nil, err
	}
	var late func(*Table, string) bool
	if p.Splittable() && len(p.inflight) > 0 {
		late = lateKeys(p.inflight)
	}
	if late == nil {
		return nil, p.fold.appendTo(p.cur, p.cfg.ExecMode, p.gtid)
	}
	b := p.spareBatch()
	if err := p.fold.appendSplit(p.cur, b, p.cfg.ExecMode, p.gtid, late); err != nil {
		return nil, err
	}
	if b.n == 0 {
		return nil, nil // recycled with the call's other batches
	}
	return b, nil
}

// spareBatch returns an empty batch handed out in the steps of this call.
func (p *Planner) spareBatch() *Batch {
	b := p.fresh()
	p.used = append(p.used, b)
	return b
}

// savePos plans a transaction of its own that records p.pos.
func (p *Planner) savePos() error {
	p.openTx()
	return p.commit()
}

// commitAndStop plans committing everything up to the stop position and recording the stop.
func (p *Planner) commitAndStop() error {
	if p.skipPos != "" && !p.txOpen {
		p.pos, p.txTime = p.skipPos, p.skipTime
		p.openTx()
	}
	if err := p.commit(); err != nil {
		return err
	}
	p.emit(Step{Kind: StepStop, Msg: "Stopped at position " + p.pos})
	p.stopped = true
	return nil
}
