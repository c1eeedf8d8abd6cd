package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/vplayer/vplayer/applier"
	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/copier"
	"github.com/vplayer/vplayer/heartbeat"
	"github.com/vplayer/vplayer/relaylog"
	"github.com/vplayer/vplayer/stall"
	"github.com/vplayer/vplayer/stream/gate"
	"github.com/vplayer/vplayer/stream/preflight"
	"github.com/vplayer/vplayer/throttle"
	"github.com/vplayer/vplayer/workflow"
)

// ErrTerminal wraps an error that a retry cannot fix; the record's state is then Error.
var ErrTerminal = errors.New("terminal error")

// StateRetrying is reported through Config.OnState while the stream waits to retry after an
// error; the record's state stays Running.
const StateRetrying = "Retrying"

// setupTimeout bounds the round trips of an attempt before its pipeline runs (reading the
// record, the source's history, the target's triggers, setting the state): a few small queries.
const setupTimeout = 10 * time.Second

// copyPlanTimeout bounds the planning of a copy (the target's tables created from the source's).
const copyPlanTimeout = 2 * time.Minute

// Attempt is the live pipeline of one attempt, exposed for metrics and tests.
type Attempt struct {
	Relay     *relaylog.Log
	Applier   *applier.Applier
	Heartbeat *heartbeat.Recorder
	Reader    *binlog.Reader
	// Copier is the copy phase's copier, nil when the attempt does not copy.
	Copier *copier.Copier
	// Holds tells whether the attempt is held on purpose (a throttle, --apply-delay) and how
	// long it has been held in all.
	Holds Holds
}

// Holds is what an attempt tells of its holds on purpose. Safe from any goroutine; never blocks.
type Holds interface {
	// Hold returns the hold in force, if any.
	Hold() (throttle.Hold, bool)
	// HeldTotal is the attempt's time held so far, the hold in force included.
	HeldTotal(now time.Time) time.Duration
}

// Stream runs one workflow.
type Stream struct {
	cfg    Config
	store  *workflow.Store
	log    *slog.Logger
	flavor string // go-mysql flavor of the source
	filter *binlog.Filter
	stop   binlog.Position
	id     int64
	msg    *messenger
	own    *owner          // made by prepare
	lease  *workflow.Lease // the owner's, once acquired: the stream's record writes are fenced by it
	pause  *gate.Request   // the vplayer diff pause in force, across attempts
	// manual is the manual throttle (vplayer throttle) as the record last said, across attempts;
	// throttler is the live attempt's.
	manual    atomic.Pointer[throttle.Manual]
	throttler atomic.Pointer[throttle.Throttler]
	// holdWatch is the stop poller's view of the hold, across attempts (one poller at a time),
	// so that a hold that outlives an attempt is one hold, and one that ends at an attempt's end
	// is logged by the next.
	holdWatch holdWatch

	// verdict is the current attempt's reported error's fate: 0 not reported yet, verdictRetry
	// or verdictTerminal. It is decided once, in report, so the log line, OnError and the retry
	// loop never disagree when --max-time-to-retry-on-error runs out between two looks.
	verdict atomic.Int32

	// Owned by Run's goroutine and the attempt's applier (which runs only while Run waits).
	running    bool   // this process set the workflow Running: a Stopped record is a stop request
	refusedDDL string // position of the last DDL the target refused in this process
	lostErr    error  // the loss found when a terminal error was about to be reported

	errMu    sync.Mutex
	errKey   string    // kind of the last error, for --max-time-to-retry-on-error
	errSince time.Time // when that kind of error was first seen
}

// New returns a stream for cfg; nothing is connected until Run.
func New(cfg Config) (*Stream, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Target == nil || cfg.Source.Pool == nil {
		return nil, errors.New("stream: Config.Target and Config.Source.Pool are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	f, err := cfg.filter()
	if err != nil {
		return nil, err
	}
	if cfg.TargetDB == "" {
		cfg.TargetDB = cfg.Source.DB
	}
	return &Stream{cfg: cfg, store: workflow.New(cfg.Target, cfg.Sidecar), log: cfg.Logger, filter: f, pause: gate.NewRequest()}, nil
}

// attempt runs the pipeline once, from the committed position. Until this process has set the
// workflow Running it starts it whatever its state; after that, a Stopped record means vplayer
// stop came while the stream was retrying, and is honoured.
func (s *Stream) attempt(ctx context.Context) error {
	// Nothing watches the lease until the pipeline runs: the setup's round trips share one
	// deadline, so that a server that stops answering (a partition, a proxy that keeps the
	// connection open and forwards nothing) fails the attempt, which is retried, instead of
	// holding forever a process that may have lost the workflow meanwhile.
	sctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	rec, err := s.store.Get(sctx, s.cfg.Workflow)
	if err != nil {
		return err
	}
	if s.running && rec.State == workflow.StateStopped {
		return s.stopRequested(ctx)
	}
	start, err := binlog.ParsePosition(rec.Pos, s.flavor)
	if err != nil {
		return fmt.Errorf("%w: stored position of workflow %s: %w", ErrTerminal, s.cfg.Workflow, err)
	}
	// What a retry cannot fix is found before the binlog connection: a source whose history no
	// longer has the position, a target table that gained a trigger.
	if err := preflight.CheckSourceHistory(sctx, s.cfg.Source.Pool, s.flavor, start); err != nil {
		return err
	}
	if err := preflight.CheckTriggers(sctx, s.cfg.Target, s.cfg.TargetDB, s.cfg.Source.DB, s.filter, s.cfg.AllowTargetTriggers); err != nil {
		return err
	}
	if err := s.checkStopWhileCopying(sctx, rec); err != nil {
		return err
	}
	if !s.stop.IsZero() && start.Contains(s.stop) {
		msg := "Stopped at position " + rec.Pos
		if err := s.lease.SetState(sctx, workflow.StateStopped, msg); err != nil {
			return err
		}
		return applier.ErrStopPosition
	}
	// Planning a copy may create many tables: its own, longer bound.
	pctx, pcancel := context.WithTimeout(ctx, copyPlanTimeout)
	cp, err := s.newCopyPhase(pctx, rec, start)
	pcancel()
	if err != nil {
		return err
	}
	state, execMode := workflow.StateRunning, s.cfg.ExecMode
	if cp != nil {
		state, execMode = workflow.StateCopying, applier.ExecModeIdempotent
	}
	if rec.State != state {
		if err := s.lease.SetState(sctx, state, rec.Message); err != nil {
			return err
		}
		s.addStateLog(sctx, state, state+" at "+rec.Pos+", was "+rec.State)
		s.log.Info("workflow "+strings.ToLower(state), "state", state, "pos", rec.Pos)
	}
	s.running = true
	s.notifyState(state)
	// A vplayer diff pause in force holds the new attempt from its first event.
	ctl, err := s.store.Control(sctx, s.id)
	if err != nil {
		return err
	}
	s.pause.Set(ctl.Pause, s.flavor)
	s.followThrottle(ctl)
	ddlStarted, err := s.store.DDLStarted(sctx, s.id)
	if err != nil {
		return err
	}
	if ddlStarted == s.refusedDDL {
		// The mark of a DDL the target refused in this process, left when clearing it failed:
		// the DDL did not run, and its refusal must not read as a sign that it did.
		ddlStarted = ""
	}
	// What the reader knows of the online schema changes met before the position (the ALTER
	// run on a shadow table whose cut-over is still to come), saved by the last attempt.
	onlineDDL, err := s.store.OnlineDDL(sctx, s.id)
	if err != nil {
		return err
	}

	relay := relaylog.New(s.cfg.RelayLogMaxBytes, s.cfg.RelayLogMaxItems)
	th := throttle.New(throttle.Config{Target: s.cfg.Target, MaxLoad: s.cfg.MaxLoad, Replicas: s.cfg.ThrottleReplicas,
		MaxReplicaLag: s.cfg.MaxReplicaLag, Manual: s.manualThrottle})
	s.throttler.Store(th)
	hb := heartbeat.New(s.cfg.HeartbeatInterval, time.Now())
	// The gates wait, before they report a pause, until the applier committed what they handed
	// over; the applier is made after them, since it asks them whether events wait.
	var app *applier.Applier
	settle := func(ctx context.Context) error { return app.Settle(ctx) }
	var fetch applier.Fetcher = relay
	if cp != nil {
		fetch = cp.wrap(relay, rec.Pos, hb.Received, settle)
	}
	// Held by a diff pause or a copy round, the applier receives no source heartbeats (they
	// wait in the relay log): each idle turn while held counts as one, so that the record's
	// heartbeat still shows a live stream whose target takes writes.
	gt := gate.New(fetch, s.pause, gate.Config{Flavor: s.flavor, Start: rec.Pos, Throttle: th, Delay: s.cfg.ApplyDelay,
		WhileHeld: hb.Received, Settle: settle})
	reader := binlog.NewReader(binlog.Config{
		Flavor:          s.flavor,
		Host:            s.cfg.Source.Host,
		Port:            s.cfg.Source.Port,
		User:            s.cfg.Source.User,
		Password:        s.cfg.Source.Password,
		TLS:             s.cfg.Source.TLS,
		ServerID:        s.cfg.ServerID,
		HeartbeatPeriod: s.cfg.SourceHeartbeatPeriod,
		Filter:          s.filter,
		KeepFilePos:     s.stop.Flavor == binlog.FlavorFilePos,
		Logger:          s.log,
		OnConnect:       s.own.recordSourceSession,
		OnlineDDLState:  onlineDDL,
		SaveOnlineDDL:   s.lease.SetOnlineDDL,
	})
	var stopAt func(string) bool
	if !s.stop.IsZero() {
		stopAt = func(pos string) bool {
			p, err := binlog.ParsePosition(pos, s.flavor)
			return err == nil && p.Contains(s.stop)
		}
	}
	var fkOff func(string) bool
	if cp != nil {
		fkOff = cp.c.Unsettled
	}
	app = applier.New(applier.Config{
		DB:       s.cfg.Target,
		Record:   s.lease,
		TargetDB: s.cfg.TargetDB,
		OnDDL:    s.cfg.OnDDL,
		ExecMode: execMode,
		Copying:  cp != nil,
		// During the copy, the changes of a table not settled go in unchecked (copier/fk.go).
		ForeignKeyChecksOff: fkOff,
		Workers:             s.cfg.ApplyWorkers,
		StopAt:              stopAt,
		Heartbeat:           hb,
		Logger:              s.log,
		BeforeCommit:        s.cfg.BeforeCommit,
		DDLStarted:          ddlStarted,
		DDLRefused:          func(pos string) { s.refusedDDL = pos },
		AfterDDL:            s.cfg.AfterDDL,
		HeartbeatPeriod:     s.cfg.SourceHeartbeatPeriod,
		Waiting:             func() bool { return relay.Len() > 0 || gt.Waiting() },
	})
	at := &Attempt{Relay: relay, Applier: app, Heartbeat: hb, Reader: reader, Holds: gt}
	if cp != nil {
		at.Copier = cp.c
	}
	if s.cfg.OnStart != nil {
		s.cfg.OnStart(at)
	}
	dog := stall.New(stall.Config{ProgressDeadline: s.cfg.ProgressDeadline, HeartbeatInterval: s.cfg.HeartbeatInterval},
		stall.ProbeFunc(func() stall.Snapshot {
			var snap stall.Snapshot
			snap.RelayBlockedSince, _ = relay.Blocked()
			snap.RelayBlockedSince = gt.RelayBlockedSince(snap.RelayBlockedSince)
			w := app.Work()
			snap.ProgressSince, snap.TxnSince, snap.Statement, snap.StatementSince = w.ProgressSince, w.TxnSince, w.Statement, w.StatementSince
			snap.HeartbeatSince = hb.InFlightSince()
			snap.HoldCheck, snap.HoldCheckSince = th.InFlight()
			if cp != nil {
				cp.probe(&snap)
			}
			return snap
		}))

	// progressed reports whether this attempt saved a position or recorded a heartbeat: after
	// progress, an error starts --max-time-to-retry-on-error's clock afresh.
	progressed := func() bool {
		return app.Stats().Saves.Load() > 0 || hb.Recorded() > 0 || (cp != nil && cp.c.RowsCopied() > 0)
	}
	if err := s.own.holds(ctx); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	var once sync.Once
	var reported error
	// first reports the attempt's first real error at once, before errgroup cancels the others.
	// Two goroutines can fail together (a heartbeat write and the watchdog reach the same
	// deadline): the one reported is the one the attempt returns, whichever errgroup kept.
	first := func(err error) error {
		if err == nil || (gctx.Err() != nil && errors.Is(err, context.Canceled)) {
			return nil
		}
		if ctx.Err() == nil && !errors.Is(err, applier.ErrStopPosition) && !errors.Is(err, applier.ErrStoppedAtDDL) && !errors.Is(err, errStopRequested) && !errors.Is(err, errCopyDone) {
			once.Do(func() {
				reported = err
				// A fenced write's failure is a lost workflow or a data error; Run tells which
				// (it asks the record) and reports it then.
				if fe := (*workflow.FenceError)(nil); !errors.As(err, &fe) && !errors.Is(err, errReconnectNow) {
					if progressed() {
						s.resetErrorClock()
					}
					s.report(err)
				}
			})
		}
		return err
	}
	g.Go(func() error {
		err := reader.Run(gctx, start, relay)
		if gctx.Err() == nil {
			err = s.own.binlogEnded(err)
		}
		return first(explainSource(err, start))
	})
	g.Go(func() error { return first(app.Run(gctx, gt, rec.Pos)) })
	g.Go(func() error { return first(dog.Run(gctx)) })
	g.Go(func() error { return first(th.Run(gctx)) })
	g.Go(func() error { return first(s.watchStop(gctx, gt)) })
	g.Go(func() error { return first(s.own.watch(gctx)) })
	if cp != nil {
		g.Go(func() error { return first(cp.run(gctx)) })
	}
	err = g.Wait()
	relay.Close()
	if reported != nil {
		err = reported
	}
	s.attemptEnded(reported, progressed())
	if err == nil && ctx.Err() == nil {
		err = errors.New("stream ended without an error")
	}
	return err
}
