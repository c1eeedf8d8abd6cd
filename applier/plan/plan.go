package plan

import (
	"fmt"

	"github.com/vplayer/vplayer/event"
	"github.com/vplayer/vplayer/sqlq"
)

// Config configures a Planner.
type Config struct {
	TargetDB string
	OnDDL    string
	ExecMode string
	MaxBatch int               // statements are handed out once they reach this many bytes
	StopAt   func(string) bool // nil: no stop position
	// writesets makes commit steps carry the writeset of their rows. Off, the planner spends
	// nothing on them.
	Writesets bool
	// parallel plans for an executor that runs batches on several sessions: each target
	// transaction sets foreign_key_checks before its first rows that need it, whatever the
	// session did before, and a transaction that continues in the next fetch is not sent until
	// it commits or its statements reach maxBatch.
	Parallel bool
	// fkOff, when set, names the tables whose rows go in with foreign_key_checks off whatever
	// the source's rows events say (Config.ForeignKeyChecksOff).
	FKOff func(Table string) bool
	// split lets a commit of a batch whose rows all folded put the statements of the keys that
	// batches still in flight may touch (see Planner.InFlight) into the step's late part, which
	// the executor sends once those batches committed, so that the rest runs beside them.
	Split bool
}

// Planner turns events into steps: see the package comment (doc.go). The zero value is
// not usable: see New.
type Planner struct {
	cfg   Config
	cur   *Batch   // statements not yet handed out
	used  []*Batch // handed out in the steps of the last call
	spare []*Batch // free again
	steps []Step

	group rowGroup
	fold  fold
	ws    Writeset

	fkOff     bool // the session's foreign_key_checks is off once the planned statements ran
	fkUnknown bool // the session's foreign_key_checks may be other than fkOff says
	mainFKOff bool // the main session's fkOff while an XA session is the current one
	txOpen    bool // a target transaction is open
	inTxn     bool // a source transaction is open (split across fetches)
	xid       string
	xaSkip    bool // the open XA transaction is already prepared on the target: skip its rows
	gtid      string
	pos       string
	txTime    int64
	commits   int // source transactions in the open target transaction
	rows      int
	txnBytes  int    // binlog bytes of the open source transaction's rows events
	skipPos   string // position of skipped transactions not yet saved
	skipTime  int64
	stopped   bool
	// inflight are the writesets of the batches in flight when the next step is planned (nil
	// for a batch that has none: it overlaps everything), given by InFlight.
	inflight []*Writeset
}

// New returns a planner whose target session holds no transaction, at position pos.
func New(cfg Config, pos string) *Planner {
	if cfg.OnDDL == "" {
		cfg.OnDDL = OnDDLIgnore
	}
	if cfg.ExecMode == "" {
		cfg.ExecMode = ExecModeStrict
	}
	return &Planner{cfg: cfg, cur: new(Batch), pos: pos}
}

// recycle frees the statements of the last call's steps.
func (p *Planner) recycle() {
	for _, b := range p.used {
		b.Reset()
		p.spare = append(p.spare, b)
	}
	clear(p.used)
	p.used = p.used[:0]
	clear(p.steps)
	p.steps = p.steps[:0]
}

// take hands out the pending statements and starts new ones.
func (p *Planner) take() *Batch {
	b := p.cur
	p.used = append(p.used, b)
	p.cur = p.fresh()
	return b
}

// fresh returns an empty batch: a spare one, or a new one.
func (p *Planner) fresh() *Batch {
	if n := len(p.spare); n > 0 {
		b := p.spare[n-1]
		p.spare = p.spare[:n-1]
		return b
	}
	return new(Batch)
}

// session is the XA transaction whose session the statements planned now run on.
func (p *Planner) session() string {
	if p.xaSkip {
		return ""
	}
	return p.xid
}

func (p *Planner) emit(s Step) { p.steps = append(p.steps, s) }

// Event plans e; t is the definition of e's table when e is a rows event that TakesRows. The
// steps are valid until the next call.
func (p *Planner) Event(e *event.Event, t *Table) ([]Step, error) {
	p.recycle()
	if p.stopped {
		return nil, nil
	}
	if err := p.event(e, t); err != nil {
		return p.steps, err
	}
	return p.steps, nil
}

func (p *Planner) event(e *event.Event, t *Table) error {
	switch e.Type {
	case event.Begin:
		p.gtid = e.GTID
		p.txnBytes = 0
		if e.XID != "" {
			if err := p.xaStart(e); err != nil {
				return err
			}
		} else {
			p.openTx()
		}
		p.inTxn = true
	case event.Statement:
		return p.statementError(e)
	case event.Rows:
		if p.xaSkip {
			return nil // an XA transaction an earlier attempt prepared on the target
		}
		if !p.txOpen {
			return fmt.Errorf("row change for %s.%s outside a transaction", e.Table.Schema, e.Table.Name)
		}
		p.txnBytes += e.Bytes()
		if err := p.addRows(e, t); err != nil {
			return err
		}
	case event.Commit:
		// The row group stays open across the commit: the transactions of a fetch share one
		// target transaction, so consecutive inserts (or key deletes) of one table from
		// successive source transactions become one statement, in the same order.
		p.inTxn = false
		p.pos, p.txTime = e.Pos, e.Timestamp
		p.commits++
		if p.xid != "" {
			if err := p.xaOnePhase(); err != nil {
				return err
			}
		}
		if p.reachedStop(e.Pos) {
			return p.commitAndStop()
		}
	case event.XAPrepare:
		p.inTxn = false
		if err := p.xaPrepare(e); err != nil {
			return err
		}
		if p.reachedStop(e.Pos) {
			return p.commitAndStop()
		}
	case event.XACommit, event.XARollback:
		if err := p.xaEnd(e); err != nil {
			return err
		}
		if p.reachedStop(e.Pos) {
			return p.commitAndStop()
		}
	case event.Skip:
		if p.txOpen {
			p.pos = e.Pos
		} else {
			p.skipPos, p.skipTime = e.Pos, e.Timestamp
		}
		if p.reachedStop(e.Pos) {
			return p.commitAndStop()
		}
	case event.DDL:
		if err := p.ddl(e); err != nil || p.stopped {
			return err
		}
		if p.reachedStop(e.Pos) {
			return p.commitAndStop()
		}
	}
	if p.cfg.Parallel && !p.inTxn && p.txOpen && p.xid == "" && p.fold.full() {
		// Committed here rather than flushed while open: a batch whose rows all folded can
		// be split (see flushSplit).
		return p.commit()
	}
	if len(p.cur.buf) >= p.cfg.MaxBatch {
		switch {
		case !p.cfg.Parallel || p.xid != "":
			p.send()
		case !p.inTxn && p.txOpen:
			return p.commit() // a batch for a worker, held until its commit
		case p.inTxn && p.largeTxn():
			p.send() // the open source transaction alone is large: it runs on the main session
		}
		// Else the batch is cut at its open transaction's COMMIT, just past maxBatch.
	}
	return nil
}

// largeTxn reports whether the open source transaction is large enough, with workers, to be sent
// before its commit (on the main session, alone) rather than held for a worker: what a fetch
// ends in the middle of is then held only when it is small.
func (p *Planner) largeTxn() bool { return p.txnBytes >= largeTxnBytes }

// largeTxnBytes is the size of a source transaction that largeTxn calls large.
const largeTxnBytes = 128 << 10

// EndFetch plans the end of a fetch: its transactions commit together, unless the last one
// continues in the next fetch, whose statements so far are sent.
func (p *Planner) EndFetch() ([]Step, error) {
	p.recycle()
	if p.stopped {
		return nil, nil
	}
	if !p.inTxn {
		return p.steps, p.commit()
	}
	// Workers run a batch whole at its commit: one source transaction continuing in the next
	// fetch is held, its rows left in the fold, unless it is already large enough to run alone
	// on the main session.
	if !p.cfg.Parallel || p.largeTxn() {
		if err := p.flushPending(); err != nil {
			return p.steps, err
		}
		p.send()
	}
	return p.steps, nil
}

// Cut plans the commit of the open target transaction at a transaction boundary, before the
// fetch ends: an executor with a free session runs what is planned so far while the rest of the
// fetch is planned. Nothing when a source transaction is open.
func (p *Planner) Cut() ([]Step, error) {
	p.recycle()
	if p.stopped || p.inTxn || !p.txOpen {
		return nil, nil
	}
	return p.steps, p.commit()
}

// SaveSkipped plans saving the position of skipped transactions in a transaction of its own.
func (p *Planner) SaveSkipped() ([]Step, error) {
	p.recycle()
	p.pos, p.txTime = p.skipPos, p.skipTime
	return p.steps, p.savePos()
}

func (p *Planner) reachedStop(pos string) bool {
	return p.cfg.StopAt != nil && p.cfg.StopAt(pos)
}

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

// ddl plans a schema change by the OnDDL policy, after committing the open target transaction.
func (p *Planner) ddl(e *event.Event) error {
	if err := p.commit(); err != nil {
		return err
	}
	p.pos, p.txTime = e.Pos, e.Timestamp
	switch p.cfg.OnDDL {
	case OnDDLStop:
		if err := p.savePos(); err != nil {
			return err
		}
		p.emit(Step{Kind: StepStop, Msg: "Stopped at DDL " + e.Query, AtDDL: true})
		p.stopped = true
		return nil
	case OnDDLExec, OnDDLExecIgnore:
		// Run in the target database, with the names that qualify the source database pointed at
		// the target database too, after the executor's mark (slot 0).
		if p.cfg.Parallel {
			p.fkUnknown = true // the planned state followed batches that workers ran
		}
		p.foreignKeys(true) // a DDL's references need not exist yet, nor its rows match them
		p.cur.Add("", "USE "+sqlq.Ident(p.cfg.TargetDB))
		p.cur.Add(ddlShape(e.Query), requalify(e.Query, e.DBRefs, sqlq.Ident(p.cfg.TargetDB)))
		p.emit(Step{Kind: StepDDL, Stmts: p.take(), Event: e, Writeset: &Writeset{barrier: true}})
	}
	return p.savePos()
}
