// Package applier writes the events of the relay log to the target database: the transactions of
// one fetch in one target transaction, the position written in that same transaction just before
// COMMIT, so that a crash at any instant neither loses nor duplicates a row.
package applier

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/vplayer/vplayer/applier/plan"
	"github.com/vplayer/vplayer/event"
	"github.com/vplayer/vplayer/heartbeat"
	"github.com/vplayer/vplayer/workflow"
)

// ErrStopPosition is returned when the stream reached its stop position and recorded it.
var ErrStopPosition = errors.New("stop position reached")

// ErrStoppedAtDDL is returned when --on-ddl=stop met a DDL and recorded it.
var ErrStoppedAtDDL = errors.New("stopped at DDL")

// sessionSetup makes the target session accept every value the source could have written and
// pass bytes through untouched.
var sessionSetup = []string{
	"SET NAMES binary",
	"SET SESSION time_zone = '+00:00'",
	"SET SESSION sql_mode = '" + plan.SQLModeStrict + "'",
	"SET SESSION foreign_key_checks = 1", // then per rows event, as the source session had it
	// Row changes are current reads whatever the level; REPEATABLE READ keeps the XA fence's
	// consistent read lock-free (SERIALIZABLE would make it a shared lock held to XA COMMIT).
	"SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ",
}

// packetOverhead is what a round trip's packet holds besides its SQL text.
const packetOverhead = 1024

// skipSaveInterval bounds how often the position of transactions that touched no replicated table
// is saved on its own.
const skipSaveInterval = time.Second

// DefaultWorkers is --apply-workers' default, MaxWorkers its largest value.
const (
	DefaultWorkers = 1
	MaxWorkers     = 64
)

// Record is the applier's side of the workflow record, every write fenced by the owner's lease
// (workflow.Lease implements it): the SQL of the position, heartbeat and DDL-mark writes, which
// the applier places in its own round trips, the fence check inside an XA transaction, the
// state, and the sessions a process taking the workflow over must kill.
type Record interface {
	PositionSQL(pos string, now, txTime int64) string
	HeartbeatSQL(now int64) string
	DDLMarkSQL(pos string) string
	FenceCheckSQL() string
	SetState(ctx context.Context, state, message string) error
	RecordSession(ctx context.Context, connIDs ...int64) error
}

var _ Record = (*workflow.Lease)(nil)

// Config configures an Applier.
type Config struct {
	// DB is the target pool; its DSN must allow multi statements.
	DB *sql.DB
	// Record is how the applier writes the workflow record (required): the ownership lease
	// (*workflow.Lease), which fences every write with its epoch, so that a batch written by a
	// process that lost the workflow fails before its COMMIT.
	Record Record
	// TargetDB is the database the replicated tables live in on the target.
	TargetDB string
	// OnDDL is one of the OnDDL policies; empty means ignore.
	OnDDL string
	// IdleWait is how long a fetch waits for events before the applier does its idle work (save
	// a pending position, record a heartbeat). Default 500ms.
	IdleWait time.Duration
	// MaxBatchBytes bounds the SQL sent in one round trip. Default 4 MiB.
	MaxBatchBytes int
	// StopAt, when set, reports whether a position is at or past the stop position.
	StopAt func(pos string) bool
	// Heartbeat records source heartbeats; nil disables heartbeat recording.
	Heartbeat *heartbeat.Recorder
	// Logger is the stream's logger.
	Logger *slog.Logger
	// BeforeCommit, when set, runs after a batch's rows and position were sent and before its
	// COMMIT; an error aborts the batch. For fault-injection tests.
	BeforeCommit func() error
	// DDLStarted is the position of a DDL an earlier attempt marked started without recording
	// its position after it (workflow.Store.DDLStarted): it may have run already.
	DDLStarted string
	// DDLRefused, when set, is told the position of a DDL the target refused, whose mark this
	// attempt cleared or tried to: the caller keeps it from passing as DDLStarted later.
	DDLRefused func(pos string)
	// AfterDDL, when set, runs after an executed DDL and before its position is recorded; an
	// error ends the attempt there, as a crash would. For fault-injection tests.
	AfterDDL func() error
	// ExecMode is ExecModeStrict (the default, when empty) or ExecModeIdempotent: what a row
	// change that does not match the target does. The pool must run with clientFoundRows, so that
	// statements count the rows they matched.
	ExecMode string
	// Copying says the copy phase runs (with ExecModeIdempotent): rows above a table's last
	// copied key may be absent or present on the target, so mismatches are expected; they are
	// counted, not logged.
	Copying bool
	// ForeignKeyChecksOff, when set, names the tables whose rows go in with foreign_key_checks
	// off whatever the source session had: during the copy, the tables the copy has not settled
	// yet (copier.Copier.Unsettled), whose parents may still miss rows the source has.
	ForeignKeyChecksOff func(Table string) bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Workers is --apply-workers: how many target sessions run batches at once (see
	// parallel.go). 0 or 1 applies every batch on the main session, in order.
	Workers int
	// HeartbeatPeriod is the source's heartbeat period (--source-heartbeat-period): caught up
	// with everything received, lag reads 0 while the last event or heartbeat fetched is no
	// older than that (see LagSince). Default 1s.
	HeartbeatPeriod time.Duration
	// Source, when set, is a pool to the source, on which each replicated table's kind is read
	// with its target definition: a source table that is system-versioned while the target's is
	// not cannot be applied exactly (plan.Table.SetSourceVersioned).
	Source *sql.DB
	// Waiting, when set, reports whether events vplayer received wait in front of the applier,
	// not yet fetched: in the relay log, or held back by a gate. Lag never reads 0 then. It is
	// called from any goroutine and must never block.
	Waiting func() bool
}

// Applier applies relay log events to the target.
type Applier struct {
	cfg    Config
	tables *tableCache
	stats  Stats

	// Read by the stall watchdog and for lag.
	progressSince atomic.Int64 // unix nanos of the last progress while holding work; 0 when holding none
	txnSince      atomic.Int64 // unix nanos when the open target transaction began; 0 when none
	oldestPending atomic.Int64 // source commit time (unix s) of the oldest transaction not yet committed here; 0 when none
	lastSource    atomic.Int64 // latest source commit time (unix s) among the events received; 0 before any
	lastHeartbeat atomic.Int64 // unix nanos when a heartbeat was last received; 0 before any
	lastFetch     atomic.Int64 // unix nanos of the last fetch that brought events; 0 before any
	started       atomic.Int64 // unix nanos when Run began; 0 before
	pendingAt     atomic.Int64 // unix nanos of the fetch that brought the oldest pending transaction, or an earlier one
	inline        tracker      // the round trip in flight on the main or an XA session
	pool          pool         // the workers, when Config.Workers > 1

	// Owned by Run.
	plan      *plan.Planner
	sched     *scheduler
	main      *session
	b         plan.Batch // the executor's own statements (a record write sent alone)
	txOpen    bool       // a target transaction is open (or its BEGIN planned)
	committed string     // the position the open target transaction started from
	lastSave  time.Time
	// xaSessions are the sessions of the XA transactions this attempt opened, by XID: a session
	// that prepared one can do nothing else until it ends it.
	xaSessions map[string]*session
	maxBatch   int
	// maxPacket is the largest round trip the target accepts: its max_allowed_packet, less room
	// for the protocol's own bytes.
	maxPacket int
	stopped   bool
}

// New returns an applier; it connects nothing until Run.
func New(cfg Config) *Applier {
	if cfg.IdleWait <= 0 {
		cfg.IdleWait = 500 * time.Millisecond
	}
	if cfg.MaxBatchBytes <= 0 {
		cfg.MaxBatchBytes = 4 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.OnDDL == "" {
		cfg.OnDDL = plan.OnDDLIgnore
	}
	if cfg.ExecMode == "" {
		cfg.ExecMode = plan.ExecModeStrict
	}
	if cfg.Workers < 1 {
		cfg.Workers = 1
	}
	if cfg.HeartbeatPeriod <= 0 {
		cfg.HeartbeatPeriod = time.Second
	}
	a := &Applier{cfg: cfg, tables: newTableCache(cfg.DB, cfg.Source, cfg.TargetDB, cfg.Logger), maxBatch: cfg.MaxBatchBytes}
	return a
}

// Run applies events from relay until ctx ends or an error occurs. pos is the committed position
// the stream started from. On return, any open target transaction has been rolled back: its
// connection is killed over a separate connection so that its locks go at once.
func (a *Applier) Run(ctx context.Context, relay Fetcher, pos string) (err error) {
	a.started.Store(a.cfg.Now().UnixNano())
	a.committed = pos
	a.lastSave = a.cfg.Now()
	a.txOpen = false
	par := a.cfg.Workers > 1
	maxBatch := a.maxBatch
	if par {
		// Up to Workers batches are held at once, each with its writeset.
		maxBatch = min(maxBatch, parallelMaxBatch)
	}
	cfg := plan.Config{TargetDB: a.cfg.TargetDB, OnDDL: a.cfg.OnDDL, ExecMode: a.cfg.ExecMode, FKOff: a.cfg.ForeignKeyChecksOff,
		MaxBatch: maxBatch, StopAt: a.cfg.StopAt, Writesets: par, Parallel: par, Split: par}
	a.plan = plan.New(cfg, pos)
	a.sched = newScheduler(a.cfg.Workers, pos)
	a.pool.list.Store(nil)
	a.pool.free = nil
	if err := a.connect(ctx); err != nil {
		return err
	}
	defer func() {
		a.progressSince.Store(0)
		a.txnSince.Store(0)
		a.inline.stop()
		a.release(err)
	}()
	if a.cfg.Workers > 1 {
		return a.runParallel(ctx, relay)
	}
	return a.loop(ctx, relay)
}

// loop fetches and applies until ctx ends or an error occurs.
func (a *Applier) loop(ctx context.Context, relay Fetcher) error {
	for {
		// In hot mode (see scheduler.hot) a fetch waits until the jobs in flight committed, as
		// one session's would: the relay log fills meanwhile, so that the fetch, which goes
		// whole, is as large as one session's, not a sliver of what arrived during the commit.
		if a.sched.drainsBeforeFetch() {
			if err := a.drain(ctx); err != nil {
				return err
			}
		}
		fctx, cancel := context.WithTimeout(ctx, a.cfg.IdleWait)
		wctx, woken := a.sched.wakeWhenCommitted(fctx)
		items, ferr := relay.Fetch(wctx)
		woken()
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(ferr, ErrSettle) {
			if err := a.settle(ctx); err != nil {
				return err
			}
			continue
		}
		if fetchFailed(ferr, wctx) {
			return fmt.Errorf("fetch from relay log: %w", ferr)
		}
		if len(items) == 0 && a.sched.held {
			if err := a.endFetch(ctx); err != nil {
				return err
			}
		}
		if len(items) > 0 {
			a.received(items, a.cfg.Now())
			// Taking events is progress, unless workers still hold batches: then only their
			// round trips and commits are (a blocked oldest batch must not hide behind the
			// heartbeats the dispatcher keeps taking).
			if !a.sched.busy() {
				a.progressed()
			}
			if err := a.apply(ctx, items); err != nil {
				return err
			}
			if a.stopped {
				return ErrStopPosition
			}
		}
		if err := a.idle(ctx); err != nil {
			return err
		}
	}
}

// apply applies one fetch: each event planned, then its steps run, in order.
func (a *Applier) apply(ctx context.Context, items []*event.Event) error {
	a.sched.fetchStarting()
	for _, e := range items {
		var t *plan.Table
		if e.Type == event.Rows && a.plan.TakesRows() {
			var err error
			if t, err = a.tables.get(ctx, e.Table); err != nil {
				return err
			}
		}
		a.plan.InFlight(a.sched.inFlightSets())
		steps, err := a.plan.Event(e, t)
		if rerr := a.run(ctx, steps); rerr != nil {
			return rerr
		}
		if ie := (*plan.InexactError)(nil); errors.As(err, &ie) && ie.Pos == "" {
			_, ie.Pos = a.where(nil)
		} else if errors.Is(err, plan.ErrUnsupportedValue) {
			gtid, from := a.where(nil)
			err = fmt.Errorf("%w (source transaction %s, after position %s)", err, gtid, from)
		}
		if err != nil {
			return err
		}
		if a.stopped {
			return nil
		}
		if e.Type == event.Commit {
			if err := a.maybeCut(ctx); err != nil {
				return err
			}
		}
		switch e.Type {
		case event.Begin:
			a.begun(e.Timestamp)
		case event.Heartbeat:
			if !a.plan.State().InTxn && a.cfg.Heartbeat != nil {
				a.cfg.Heartbeat.Received()
			}
		case event.DDL:
			// Whatever the policy did with it, the operator may have changed the target's tables
			// for it (--on-ddl ignore, an online schema change's cut-over): read them again.
			a.tables.reset()
		}
	}
	if a.sched.holdOpen(a.openBatch(), a.cfg.Now(), a.cfg.IdleWait) {
		return nil
	}
	return a.endFetch(ctx)
}

// runStep runs step s on the main session, or an XA transaction's.
func (a *Applier) runStep(ctx context.Context, s *plan.Step) error {
	switch s.Kind {
	case plan.StepSend:
		return a.flush(ctx, a.session(s.XID), s.Stmts)
	case plan.StepCommit:
		return a.commit(ctx, s)
	case plan.StepXAStart:
		return a.xaStart(ctx, s)
	case plan.StepXAPrepare:
		return a.xaPrepare(ctx, s)
	case plan.StepXAOnePhase:
		return a.xaOnePhase(ctx, s)
	case plan.StepXAEnd:
		return a.xaEnd(ctx, s)
	case plan.StepDDL:
		return a.ddl(ctx, s)
	case plan.StepStop:
		if err := a.setState(ctx, workflow.StateStopped, s.Msg); err != nil {
			return err
		}
		a.stopped = true
		if s.AtDDL {
			return ErrStoppedAtDDL
		}
	}
	return nil
}

// idle does the work due when the relay log is quiet: save the position of skipped
// transactions at most once a second, record a heartbeat when one is due.
func (a *Applier) idle(ctx context.Context) error {
	if a.plan.State().TxOpen {
		return nil
	}
	if !a.sched.busy() {
		a.progressSince.Store(0)
	}
	now := a.cfg.Now()
	if a.plan.State().SkipPending && now.Sub(a.lastSave) >= skipSaveInterval {
		steps, err := a.plan.SaveSkipped()
		if err != nil {
			return err
		}
		if err := a.run(ctx, steps); err != nil {
			return err
		}
		now = a.cfg.Now() // the heartbeat write's deadline counts from its own start
	}
	if hb := a.cfg.Heartbeat; hb != nil && hb.Due(now) {
		return hb.Record(ctx, now, func(ctx context.Context) error {
			_, err := a.main.conn.ExecContext(ctx, a.cfg.Record.HeartbeatSQL(now.Unix()))
			if workflow.IsFenceViolation(err) {
				return &workflow.FenceError{Err: err}
			}
			return err
		})
	}
	return nil
}
