package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/vplayer/vplayer/applier"
	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/heartbeat"
	"github.com/vplayer/vplayer/relaylog"
	"github.com/vplayer/vplayer/stall"
	"github.com/vplayer/vplayer/stream/gate"
	"github.com/vplayer/vplayer/stream/preflight"
	"github.com/vplayer/vplayer/throttle"
	"github.com/vplayer/vplayer/workflow"
)

// attempt runs the pipeline once, from the committed position: its setup, then its pipeline
// built, then, once the lease is known to be still this process's, the pipeline run until its
// first error (see the package's doc). Until this process has set the workflow Running it starts
// it whatever its state; after that, a Stopped record means vplayer stop came while the stream
// was retrying, and is honoured.
func (s *Stream) attempt(ctx context.Context) error {
	st, err := s.setup(ctx)
	if err != nil {
		return err
	}
	p := s.build(st)
	if err := s.own.holds(ctx); err != nil {
		return err
	}
	return s.runPipeline(ctx, p)
}

// attemptSetup is what an attempt's setup read from the record and decided.
type attemptSetup struct {
	rec      workflow.Record
	start    binlog.Position // rec.Pos
	cp       *copyPhase      // nil: the attempt does not copy
	execMode string
	// ddlStarted is the record's mark of a DDL that may have run; onlineDDL what the reader
	// knows of the online schema changes met before the position.
	ddlStarted, onlineDDL string
}

// setup reads the record and does the attempt's checks and round trips before its binlog
// connection: the source's history, the target's triggers, the stop position, the copy planned,
// the state set, the pause, throttle and marks the record holds.
func (s *Stream) setup(ctx context.Context) (*attemptSetup, error) {
	// Nothing watches the lease until the pipeline runs: the setup's round trips share one
	// deadline, so that a server that stops answering (a partition, a proxy that keeps the
	// connection open and forwards nothing) fails the attempt, which is retried, instead of
	// holding forever a process that may have lost the workflow meanwhile.
	sctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	rec, err := s.store.Get(sctx, s.cfg.Workflow)
	if err != nil {
		return nil, err
	}
	if s.running && rec.State == workflow.StateStopped {
		return nil, s.own.stopRequested(ctx)
	}
	start, err := binlog.ParsePosition(rec.Pos, s.flavor)
	if err != nil {
		return nil, fmt.Errorf("%w: stored position of workflow %s: %w", ErrTerminal, s.cfg.Workflow, err)
	}
	if err := s.checkStart(sctx, rec, start); err != nil {
		return nil, err
	}
	// Planning a copy may create many tables: its own, longer bound.
	pctx, pcancel := context.WithTimeout(ctx, copyPlanTimeout)
	cp, err := newCopyPhase(pctx, s.copyEnv(start.Flavor), rec)
	pcancel()
	if err != nil {
		return nil, err
	}
	st := &attemptSetup{rec: rec, start: start, cp: cp}
	if err := s.enter(sctx, st); err != nil {
		return nil, err
	}
	if err := s.readMarks(sctx, st); err != nil {
		return nil, err
	}
	return st, nil
}

// checkStart finds, before the binlog connection, what a retry cannot fix (a source whose history
// no longer has the position, a target table that gained a trigger, a stop position while the
// workflow copies) and a stop position already reached, which it records (ErrStopPosition).
func (s *Stream) checkStart(ctx context.Context, rec workflow.Record, start binlog.Position) error {
	if err := preflight.CheckSourceHistory(ctx, s.cfg.Source.Pool, s.flavor, start); err != nil {
		return err
	}
	if err := preflight.CheckTriggers(ctx, s.cfg.Target, s.cfg.TargetDB, s.cfg.Source.DB, s.filter, s.cfg.AllowTargetTriggers); err != nil {
		return err
	}
	if err := checkStopWhileCopying(ctx, s.store, s.stop, rec); err != nil {
		return err
	}
	if !s.stop.IsZero() && start.Contains(s.stop) {
		msg := "Stopped at position " + rec.Pos
		if err := s.own.lease.SetState(ctx, workflow.StateStopped, msg); err != nil {
			return err
		}
		return applier.ErrStopPosition
	}
	return nil
}

// enter sets the workflow Copying when the attempt copies, else Running, with a State row in its
// log when that changes its state, and settles the attempt's exec mode (idempotent while copying).
func (s *Stream) enter(ctx context.Context, st *attemptSetup) error {
	state, execMode := workflow.StateRunning, s.cfg.ExecMode
	if st.cp != nil {
		state, execMode = workflow.StateCopying, applier.ExecModeIdempotent
	}
	st.execMode = execMode
	rec := st.rec
	if rec.State != state {
		if err := s.own.lease.SetState(ctx, state, rec.Message); err != nil {
			return err
		}
		s.rep.addStateLog(ctx, state, state+" at "+rec.Pos+", was "+rec.State)
		s.log.Info("workflow "+strings.ToLower(state), "state", state, "pos", rec.Pos)
	}
	s.running = true
	s.rep.notifyState(state)
	return nil
}

// readMarks reads what the record holds for the attempt besides its position: a vplayer diff
// pause in force, which holds the new attempt from its first event, the manual throttle, the
// mark of a DDL that may have run, and the reader's online schema change state.
func (s *Stream) readMarks(ctx context.Context, st *attemptSetup) error {
	c, err := s.store.Control(ctx, s.id)
	if err != nil {
		return err
	}
	s.ctl.pause.Set(c.Pause, s.flavor)
	s.ctl.followThrottle(c)
	if st.ddlStarted, err = s.store.DDLStarted(ctx, s.id); err != nil {
		return err
	}
	if st.ddlStarted == s.refusedDDL {
		// The mark of a DDL the target refused in this process, left when clearing it failed:
		// the DDL did not run, and its refusal must not read as a sign that it did.
		st.ddlStarted = ""
	}
	// What the reader knows of the online schema changes met before the position (the ALTER
	// run on a shadow table whose cut-over is still to come), saved by the last attempt.
	st.onlineDDL, err = s.store.OnlineDDL(ctx, s.id)
	return err
}

// pipeline is one attempt's pipeline: what runs under its errgroup.
type pipeline struct {
	*attemptSetup
	relay  *relaylog.Log
	gate   *gate.Gate
	th     *throttle.Throttler
	hb     *heartbeat.Recorder
	reader *binlog.Reader
	app    *applier.Applier
	dog    *stall.Watchdog
}

// build makes the attempt's pipeline (nothing connects or runs yet) and hands it to OnStart.
func (s *Stream) build(st *attemptSetup) *pipeline {
	p := &pipeline{attemptSetup: st, relay: relaylog.New(s.cfg.RelayLogMaxBytes, s.cfg.RelayLogMaxItems)}
	p.th = throttle.New(throttle.Config{Target: s.cfg.Target, MaxLoad: s.cfg.MaxLoad, Replicas: s.cfg.ThrottleReplicas,
		MaxReplicaLag: s.cfg.MaxReplicaLag, Manual: s.ctl.manualThrottle})
	s.ctl.throttler.Store(p.th)
	p.hb = heartbeat.New(s.cfg.HeartbeatInterval, time.Now())
	// The gates have the applier commit what they handed over (applier.ErrSettle) before they
	// report a pause; the applier is made after them, since it asks them whether events wait.
	var fetch applier.Fetcher = p.relay
	if p.cp != nil {
		fetch = p.cp.wrap(p.relay, p.rec.Pos, p.hb.Received)
	}
	// Held by a diff pause or a copy round, the applier receives no source heartbeats (they
	// wait in the relay log): each idle turn while held counts as one, so that the record's
	// heartbeat still shows a live stream whose target takes writes.
	p.gate = gate.New(fetch, s.ctl.pause, gate.Config{Flavor: s.flavor, Start: p.rec.Pos, Throttle: p.th, Delay: s.cfg.ApplyDelay,
		WhileHeld: p.hb.Received})
	p.reader = s.newReader(p.onlineDDL)
	p.app = s.newApplier(p)
	at := &Attempt{Relay: p.relay, Applier: p.app, Heartbeat: p.hb, Reader: p.reader, Holds: p.gate}
	if p.cp != nil {
		at.Copier = p.cp.c
	}
	if s.cfg.OnStart != nil {
		s.cfg.OnStart(at)
	}
	p.dog = stall.New(stall.Config{ProgressDeadline: s.cfg.ProgressDeadline, HeartbeatInterval: s.cfg.HeartbeatInterval},
		stall.ProbeFunc(p.probe))
	return p
}

// newReader returns the attempt's binlog reader; onlineDDL is the record's online schema change
// state.
func (s *Stream) newReader(onlineDDL string) *binlog.Reader {
	return binlog.NewReader(binlog.Config{
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
		SaveOnlineDDL:   s.own.lease.SetOnlineDDL,
	})
}

// newApplier returns the attempt's applier, behind p's gate.
func (s *Stream) newApplier(p *pipeline) *applier.Applier {
	var stopAt func(string) bool
	if !s.stop.IsZero() {
		stopAt = func(pos string) bool {
			at, err := binlog.ParsePosition(pos, s.flavor)
			return err == nil && at.Contains(s.stop)
		}
	}
	var fkOff func(string) bool
	if p.cp != nil {
		fkOff = p.cp.c.Unsettled
	}
	return applier.New(applier.Config{
		DB:       s.cfg.Target,
		Record:   s.own.lease,
		TargetDB: s.cfg.TargetDB,
		Source:   s.cfg.Source.Pool,
		OnDDL:    s.cfg.OnDDL,
		ExecMode: p.execMode,
		Copying:  p.cp != nil,
		// During the copy, the changes of a table not settled go in unchecked (copier/fk.go).
		ForeignKeyChecksOff: fkOff,
		Workers:             s.cfg.ApplyWorkers,
		StopAt:              stopAt,
		Heartbeat:           p.hb,
		Logger:              s.log,
		BeforeCommit:        s.cfg.BeforeCommit,
		DDLStarted:          p.ddlStarted,
		DDLRefused:          func(pos string) { s.refusedDDL = pos },
		AfterDDL:            s.cfg.AfterDDL,
		HeartbeatPeriod:     s.cfg.SourceHeartbeatPeriod,
		Waiting:             func() bool { return p.relay.Len() > 0 || p.gate.Waiting() },
	})
}

// probe is the stall watchdog's look at the pipeline.
func (p *pipeline) probe() stall.Snapshot {
	var snap stall.Snapshot
	snap.RelayBlockedSince, _ = p.relay.Blocked()
	snap.RelayBlockedSince = p.gate.RelayBlockedSince(snap.RelayBlockedSince)
	w := p.app.Work()
	snap.ProgressSince, snap.TxnSince, snap.Statement, snap.StatementSince = w.ProgressSince, w.TxnSince, w.Statement, w.StatementSince
	snap.HeartbeatSince = p.hb.InFlightSince()
	snap.HoldCheck, snap.HoldCheckSince = p.th.InFlight()
	if p.cp != nil {
		p.cp.probe(&snap)
	}
	return snap
}

// progressed reports whether the attempt saved a position, recorded a heartbeat or copied rows:
// after progress, an error starts --max-time-to-retry-on-error's clock afresh.
func (p *pipeline) progressed() bool {
	return p.app.Stats().Saves.Load() > 0 || p.hb.Recorded() > 0 || (p.cp != nil && p.cp.c.RowsCopied() > 0)
}

// runPipeline runs p's goroutines under one errgroup until the first error, which it reports at
// once (see first), and returns it.
func (s *Stream) runPipeline(ctx context.Context, p *pipeline) error {
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
					if p.progressed() {
						s.rep.resetErrorClock()
					}
					s.rep.report(err)
				}
			})
		}
		return err
	}
	g.Go(func() error {
		err := p.reader.Run(gctx, p.start, p.relay)
		if gctx.Err() == nil {
			err = s.own.binlogEnded(err)
		}
		return first(explainSource(err, p.start))
	})
	g.Go(func() error { return first(p.app.Run(gctx, p.gate, p.rec.Pos)) })
	g.Go(func() error { return first(p.dog.Run(gctx)) })
	g.Go(func() error { return first(p.th.Run(gctx)) })
	g.Go(func() error { return first(s.ctl.watchStop(gctx, p.gate)) })
	g.Go(func() error { return first(s.own.watch(gctx)) })
	if p.cp != nil {
		g.Go(func() error { return first(p.cp.run(gctx)) })
	}
	err := g.Wait()
	p.relay.Close()
	if reported != nil {
		err = reported
	}
	s.rep.attemptEnded(reported, p.progressed())
	if err == nil && ctx.Err() == nil {
		err = errors.New("stream ended without an error")
	}
	return err
}
