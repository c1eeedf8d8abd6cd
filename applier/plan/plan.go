package plan

import (
	"fmt"

	"github.com/vplayer/vplayer/event"
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

// event plans e by its kind, then the stop position when e can end at it, then handing out
// what is planned when it is full.
func (p *Planner) event(e *event.Event, t *Table) error {
	var err error
	switch e.Type {
	case event.Begin:
		err = p.begin(e)
	case event.Statement:
		return p.statementError(e)
	case event.Rows:
		if p.xaSkip {
			return nil // an XA transaction an earlier attempt prepared on the target
		}
		err = p.rowsEvent(e, t)
	case event.Commit:
		err = p.sourceCommit(e)
	case event.XAPrepare:
		p.inTxn = false
		err = p.xaPrepare(e)
	case event.XACommit, event.XARollback:
		err = p.xaEnd(e)
	case event.Skip:
		p.skip(e)
	case event.DDL:
		err = p.ddl(e)
	}
	if err != nil || p.stopped {
		return err
	}
	if endsAtPosition(e.Type) && p.reachedStop(e.Pos) {
		return p.commitAndStop()
	}
	return p.handOutIfFull()
}

// endsAtPosition reports whether an event of type k ends where the stop position can be: it
// ends a source transaction, or stands alone.
func endsAtPosition(k event.Type) bool {
	switch k {
	case event.Commit, event.XAPrepare, event.XACommit, event.XARollback, event.Skip, event.DDL:
		return true
	}
	return false
}

// begin plans the start of a source transaction: an XA one on a session of its own, else in the
// open target transaction, begun if need be.
func (p *Planner) begin(e *event.Event) error {
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
	return nil
}

// rowsEvent plans a rows event of table t in the open target transaction.
func (p *Planner) rowsEvent(e *event.Event, t *Table) error {
	if !p.txOpen {
		return fmt.Errorf("row change for %s.%s outside a transaction", e.Table.Schema, e.Table.Name)
	}
	p.txnBytes += e.Bytes()
	return p.addRows(e, t)
}

// sourceCommit plans a source transaction's COMMIT. The row group stays open across it: the
// transactions of a fetch share one target transaction, so consecutive inserts (or key deletes)
// of one table from successive source transactions become one statement, in the same order.
func (p *Planner) sourceCommit(e *event.Event) error {
	p.inTxn = false
	p.pos, p.txTime = e.Pos, e.Timestamp
	p.commits++
	if p.xid != "" {
		return p.xaOnePhase()
	}
	return nil
}

// skip records the position of a skipped transaction: in the open target transaction, else
// to be saved later (SaveSkipped).
func (p *Planner) skip(e *event.Event) {
	if p.txOpen {
		p.pos = e.Pos
	} else {
		p.skipPos, p.skipTime = e.Pos, e.Timestamp
	}
}

// handOutIfFull hands out what is planned once it is large enough. With workers, a batch whose
// fold is full or whose statements reach MaxBatch is committed at its source transaction's end
// (a worker runs it whole), and only a large open source transaction is sent before; without
// them, or in an XA transaction, statements that reach MaxBatch are sent, the transaction staying
// open.
func (p *Planner) handOutIfFull() error {
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

// reachedStop reports whether pos is the stop position (Config.StopAt).
func (p *Planner) reachedStop(pos string) bool {
	return p.cfg.StopAt != nil && p.cfg.StopAt(pos)
}
