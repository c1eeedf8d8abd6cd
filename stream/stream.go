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
	"github.com/vplayer/vplayer/workflow"
)

// ErrTerminal wraps an error that a retry cannot fix; the record's state is then Error.
var ErrTerminal = errors.New("terminal error")

// StateRetrying is reported through Config.OnState while the stream waits to retry after an
// error; the record's state stays Running.
const StateRetrying = "Retrying"

// errStopRequested means the record's state was set to Stopped from outside (vplayer stop).
var errStopRequested = errors.New("stop requested")

// stopPollInterval is how often a running stream checks whether it was asked to stop.
const stopPollInterval = time.Second

// Attempt is the live pipeline of one attempt, exposed for metrics and tests.
type Attempt struct {
	Relay     *relaylog.Log
	Applier   *applier.Applier
	Heartbeat *heartbeat.Recorder
	Reader    *binlog.Reader
	// Copier is the copy phase's copier, nil when the attempt does not copy.
	Copier *copier.Copier
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
	lease  *workflow.Lease
	pause  *pauseRequest // the vplayer diff pause in force, across attempts

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
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	f, err := binlog.NewFilter(cfg.Source.DB, cfg.Source.Tables)
	if err != nil {
		return nil, err
	}
	if cfg.TargetDB == "" {
		cfg.TargetDB = cfg.Source.DB
	}
	return &Stream{cfg: cfg, store: workflow.New(cfg.Target, cfg.Sidecar), log: cfg.Logger, filter: f, pause: newPauseRequest()}, nil
}

// Run runs the workflow until ctx ends (a requested stop: nil), the stop position or a stop DDL
// is reached (nil), the record is set to Stopped from outside (nil), or a terminal error occurs
// (an error wrapping ErrTerminal). Retryable errors are logged, recorded and retried after the
// retry delay from the committed position.
func (s *Stream) Run(ctx context.Context) error {
	// A server that cannot be reached before the stream owns the workflow is waited for, as
	// after any stream error: only a terminal error or a stop ends the process.
	if err := s.untilReachable(ctx, "start workflow", func() error { return s.prepare(ctx) }); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	lease, err := s.acquire(ctx)
	if err != nil || lease == nil {
		return err // nil: stopped while waiting as a standby
	}
	s.lease = lease
	lease.Keep()
	defer func() {
		if err := lease.Release(); err != nil {
			s.log.Warn("could not release the workflow lease; it expires by itself", "error", err)
		}
	}()
	configure := func() error { return s.store.Configure(ctx, s.id, s.sourceJSON(), s.cfg.Options, s.stopString()) }
	if err := s.untilReachable(ctx, "configure workflow", configure); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	mctx, stopMessenger := context.WithCancel(context.WithoutCancel(ctx))
	s.msg = newMessenger(lease)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.msg.run(mctx)
	}()
	defer func() {
		stopMessenger()
		<-done
	}()
	for {
		s.verdict.Store(0)
		err := s.attempt(ctx)
		switch {
		case ctx.Err() != nil:
			s.setState(workflow.StateStopped, "")
			s.log.Info("workflow stopped", "state", workflow.StateStopped, "reason", "signal")
			return nil
		case errors.Is(err, applier.ErrStopPosition), errors.Is(err, applier.ErrStoppedAtDDL):
			rec, _ := s.store.Get(context.WithoutCancel(ctx), s.cfg.Workflow)
			s.notifyState(workflow.StateStopped)
			s.log.Info("workflow stopped", "state", workflow.StateStopped, "message", rec.Message)
			return nil
		case errors.Is(err, errStopRequested):
			s.notifyState(workflow.StateStopped)
			s.log.Info("workflow stopped", "state", workflow.StateStopped, "reason", "vplayer stop")
			return nil
		case errors.Is(err, errCopyDone):
			continue
		}
		if err == nil {
			err = errors.New("stream ended unexpectedly")
		}
		if errors.Is(err, workflow.ErrLostOwnership) {
			return s.lost(err)
		}
		var fe *workflow.FenceError
		if errors.As(err, &fe) {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			lerr := s.lease.Check(cctx)
			cancel()
			if lerr != nil {
				return s.lost(lerr)
			}
			// Still ours: the server's error was about replicated data, not the fence.
			err = fe.Err
		}
		if s.verdict.Load() == 0 {
			s.report(err)
		}
		if s.verdict.Load() == verdictLost {
			if s.lostErr != nil {
				err = s.lostErr
			}
			return s.lost(err)
		}
		if s.verdict.Load() == verdictTerminal {
			terminal := "terminal error: " + err.Error()
			stopMessenger()
			s.setState(workflow.StateError, terminal)
			return fmt.Errorf("%w: %w", ErrTerminal, err)
		}
		s.notifyState(StateRetrying)
		switch err := s.waitRetry(ctx); {
		case errors.Is(err, errStopRequested):
			s.notifyState(workflow.StateStopped)
			s.log.Info("workflow stopped", "state", workflow.StateStopped, "reason", "vplayer stop")
			return nil
		case err != nil:
			s.setState(workflow.StateStopped, "")
			s.log.Info("workflow stopped", "state", workflow.StateStopped, "reason", "signal")
			return nil
		}
	}
}

// waitRetry waits --retry-delay before the next attempt, still noticing within a second a
// vplayer stop (errStopRequested) or the end of ctx (its error).
func (s *Stream) waitRetry(ctx context.Context) error {
	delay := time.NewTimer(s.cfg.RetryDelay)
	defer delay.Stop()
	poll := time.NewTicker(stopPollInterval)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-delay.C:
			return nil
		case <-poll.C:
			if !s.running {
				continue // the workflow was not started yet: a Stopped record is its old state
			}
			qctx, cancel := context.WithTimeout(ctx, stopPollInterval)
			c, err := s.store.Control(qctx, s.id)
			cancel()
			if err == nil && c.State == workflow.StateStopped {
				return errStopRequested
			}
		}
	}
}

// attempt runs the pipeline once, from the committed position. Until this process has set the
// workflow Running it starts it whatever its state; after that, a Stopped record means vplayer
// stop came while the stream was retrying, and is honoured.
func (s *Stream) attempt(ctx context.Context) error {
	rec, err := s.store.Get(ctx, s.cfg.Workflow)
	if err != nil {
		return err
	}
	if s.running && rec.State == workflow.StateStopped {
		return errStopRequested
	}
	start, err := binlog.ParsePosition(rec.Pos, s.flavor)
	if err != nil {
		return fmt.Errorf("%w: stored position of workflow %s: %w", ErrTerminal, s.cfg.Workflow, err)
	}
	// What a retry cannot fix is found before the binlog connection: a source whose history no
	// longer has the position, a target table that gained a trigger.
	if err := checkSourceHistory(ctx, s.cfg.Source.Pool, s.flavor, start); err != nil {
		return err
	}
	if err := s.checkTriggers(ctx); err != nil {
		return err
	}
	if !s.stop.IsZero() && start.Contains(s.stop) {
		msg := "Stopped at position " + rec.Pos
		if err := s.lease.SetState(ctx, workflow.StateStopped, msg); err != nil {
			return err
		}
		return applier.ErrStopPosition
	}
	cp, err := s.newCopyPhase(ctx, rec, start)
	if err != nil {
		return err
	}
	state, execMode := workflow.StateRunning, s.cfg.ExecMode
	if cp != nil {
		state, execMode = workflow.StateCopying, applier.ExecModeIdempotent
	}
	if rec.State != state {
		if err := s.lease.SetState(ctx, state, rec.Message); err != nil {
			return err
		}
		s.log.Info("workflow "+strings.ToLower(state), "state", state, "pos", rec.Pos)
	}
	s.running = true
	s.notifyState(state)
	// A vplayer diff pause in force holds the new attempt from its first event.
	ctl, err := s.store.Control(ctx, s.id)
	if err != nil {
		return err
	}
	s.pause.set(ctl.Pause, s.flavor)
	ddlStarted, err := s.store.DDLStarted(ctx, s.id)
	if err != nil {
		return err
	}
	if ddlStarted == s.refusedDDL {
		// The mark of a DDL the target refused in this process, left when clearing it failed:
		// the DDL did not run, and its refusal must not read as a sign that it did.
		ddlStarted = ""
	}

	relay := relaylog.New(s.cfg.RelayLogMaxBytes, s.cfg.RelayLogMaxItems)
	var fetch applier.Fetcher = relay
	if cp != nil {
		fetch = cp.wrap(relay, rec.Pos)
	}
	gate := newGate(fetch, s.pause, s.flavor, rec.Pos)
	hb := heartbeat.New(s.cfg.HeartbeatInterval, time.Now())
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
		OnConnect:       s.recordSourceSession,
	})
	var stopAt func(string) bool
	if !s.stop.IsZero() {
		stopAt = func(pos string) bool {
			p, err := binlog.ParsePosition(pos, s.flavor)
			return err == nil && p.Contains(s.stop)
		}
	}
	app := applier.New(applier.Config{
		DB:           s.cfg.Target,
		Store:        s.store,
		ID:           s.id,
		Lease:        s.lease,
		TargetDB:     s.cfg.TargetDB,
		OnDDL:        s.cfg.OnDDL,
		ExecMode:     execMode,
		Copying:      cp != nil,
		StopAt:       stopAt,
		Heartbeat:    hb,
		Logger:       s.log,
		BeforeCommit: s.cfg.BeforeCommit,
		DDLStarted:   ddlStarted,
		DDLRefused:   func(pos string) { s.refusedDDL = pos },
		AfterDDL:     s.cfg.AfterDDL,
	})
	at := &Attempt{Relay: relay, Applier: app, Heartbeat: hb, Reader: reader}
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
			snap.RelayBlockedSince = gate.relayBlockedSince(snap.RelayBlockedSince)
			w := app.Work()
			snap.ProgressSince, snap.TxnSince, snap.Statement, snap.StatementSince = w.ProgressSince, w.TxnSince, w.Statement, w.StatementSince
			snap.HeartbeatSince = hb.InFlightSince()
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
	if err := s.holdsLease(ctx); err != nil {
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
				if fe := (*workflow.FenceError)(nil); !errors.As(err, &fe) {
					if progressed() {
						s.resetErrorClock()
					}
					s.report(err)
				}
			})
		}
		return err
	}
	g.Go(func() error { return first(explainSource(reader.Run(gctx, start, relay), start)) })
	g.Go(func() error { return first(app.Run(gctx, gate, rec.Pos)) })
	g.Go(func() error { return first(dog.Run(gctx)) })
	g.Go(func() error { return first(s.watchStop(gctx, gate)) })
	g.Go(func() error { return first(s.watchLease(gctx)) })
	if cp != nil {
		g.Go(func() error { return first(cp.run(gctx)) })
	}
	err = g.Wait()
	relay.Close()
	if reported != nil {
		err = reported
	}
	if err == nil && ctx.Err() == nil {
		err = errors.New("stream ended without an error")
	}
	return err
}

// watchStop polls the record and returns errStopRequested once its state is Stopped. It also
// follows the vplayer diff pause (see followPause), polling faster while one is in force, and
// at once when the gate has just paused.
func (s *Stream) watchStop(ctx context.Context, gate *gate) error {
	interval := stopPollInterval
	t := time.NewTicker(interval)
	defer t.Stop()
	var w pauseWatch
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-gate.notify:
		}
		qctx, cancel := context.WithTimeout(ctx, stopPollInterval)
		c, err := s.store.Control(qctx, s.id)
		if err == nil && c.State == workflow.StateStopped {
			cancel()
			return errStopRequested
		}
		if err == nil {
			s.followPause(qctx, c, gate, &w)
		}
		cancel()
		next := stopPollInterval
		if w.raw != "" {
			next = pausePollInterval
		}
		if next != interval {
			interval = next
			t.Reset(interval)
		}
	}
}

// prepare resolves the source flavor, creates or resumes the record and settles the start
// position.
func (s *Stream) prepare(ctx context.Context) error {
	flavor, err := SourceFlavor(ctx, s.cfg.Source.Pool)
	if err != nil {
		return err
	}
	s.flavor = flavor
	if s.cfg.StopPos != "" {
		if s.stop, err = binlog.ParsePosition(s.cfg.StopPos, flavor); err != nil {
			return fmt.Errorf("--stop-pos: %w", err)
		}
	}
	if err := s.store.Init(ctx); err != nil {
		return err
	}
	rec, err := s.store.Get(ctx, s.cfg.Workflow)
	switch {
	case errors.Is(err, workflow.ErrNotFound):
		pos, err := s.startPosition(ctx)
		if err != nil {
			return err
		}
		rec, _, err = s.store.Create(ctx, workflow.Record{
			Workflow: s.cfg.Workflow, Source: s.sourceJSON(), Pos: pos.String(), StopPos: s.stopString(),
			DBName: s.cfg.TargetDB, Options: s.cfg.Options, State: s.newState(),
		})
		if err != nil {
			return err
		}
		s.log.Info("workflow created", "pos", rec.Pos, "state", rec.State)
	case err != nil:
		return err
	default:
		s.log.Info("resuming workflow", "previous_state", rec.State, "previous_message", rec.Message, "pos", rec.Pos)
		if err := s.checkStartPos(rec); err != nil {
			return err
		}
	}
	s.id = rec.ID
	return nil
}

func (s *Stream) stopString() string {
	if s.stop.IsZero() {
		return ""
	}
	return s.stop.String()
}
