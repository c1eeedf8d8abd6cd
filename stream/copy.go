package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vplayer/vplayer/applier"
	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/copier"
	"github.com/vplayer/vplayer/stall"
	"github.com/vplayer/vplayer/stream/gate"
	"github.com/vplayer/vplayer/workflow"
)

// errCopyDone ends the attempt that finished the copy phase: the next attempt replicates.
var errCopyDone = errors.New("copy done")

// copyEnv is what a copy phase is given by the stream: its copier's configuration, what it needs
// to plan the copy and to hold the stream, and where it reports.
type copyEnv struct {
	cfg    copier.Config
	flavor string                  // go-mysql flavor of the source
	match  func(table string) bool // whether a source table is replicated
	rep    *reporter
}

// copyPhase is the copy of one attempt (SPEC 7a): the copier, and the gate in front of the
// applier through which the copier holds the stream at each of its snapshots' positions.
type copyPhase struct {
	copyEnv
	c    *copier.Copier
	req  *gate.Request
	gate *gate.Gate
}

// newCopyPhase returns the attempt's copy phase, or nil when the workflow is not copying: it has
// no copy planned, or its copy is done. A workflow created to copy (its copy state marked, or,
// from before the mark, state Copying) plans its copy here, under the lease: missing target
// tables created, a non-empty one a terminal error.
func newCopyPhase(ctx context.Context, env copyEnv, rec workflow.Record) (*copyPhase, error) {
	cfg := env.cfg
	state, err := cfg.Store.CopyState(ctx, cfg.ID)
	if err != nil {
		return nil, err
	}
	toPlan := rec.State == workflow.StateCopying // a record from before the mark
	if len(state) == 0 && !toPlan {
		if toPlan, err = cfg.Store.CopyToPlan(ctx, cfg.ID); err != nil {
			return nil, err
		}
	}
	if len(state) == 0 && toPlan {
		tables, err := copier.SourceTables(ctx, cfg.Source, cfg.SourceDB, env.match)
		if err != nil {
			return nil, err
		}
		if err := copier.Plan(ctx, cfg, tables); err != nil {
			if errors.Is(err, copier.ErrNotEmpty) || errors.Is(err, copier.ErrDefinition) {
				return nil, fmt.Errorf("%w: %w", ErrTerminal, err)
			}
			return nil, err
		}
		if state, err = cfg.Store.CopyState(ctx, cfg.ID); err != nil {
			return nil, err
		}
		cfg.Logger.Info("copy planned", "tables", len(state))
	}
	if len(state) == 0 || copier.Done(state) {
		return nil, nil
	}
	cp := &copyPhase{copyEnv: env, c: copier.New(cfg), req: gate.NewRequest()}
	cp.req.Set(workflow.PauseHold, env.flavor) // the applier holds at its start until the first snapshot
	return cp, nil
}

// copyEnv returns what the attempt's copy phase is given; flavor is the flavor of the workflow's
// positions.
func (s *Stream) copyEnv(flavor string) copyEnv {
	return copyEnv{
		cfg: copier.Config{
			Source: s.cfg.Source.Pool, Target: s.cfg.Target, SourceDB: s.cfg.Source.DB, TargetDB: s.cfg.TargetDB,
			Store: s.store, ID: s.id, Lease: s.own.lease, Flavor: flavor, MySQLSource: s.flavor == "mysql",
			ChunkRows: s.cfg.CopyChunkRows, ChunkBytes: s.cfg.CopyChunkBytes, Writers: s.cfg.CopyWriters, Logger: s.log,
			KeepKeys: s.cfg.OnDDL == applier.OnDDLExec || s.cfg.OnDDL == applier.OnDDLExecIgnore,
			Hold:     s.ctl.waitThrottled,
		},
		flavor: s.flavor,
		match:  func(t string) bool { return s.filter.Match(s.cfg.Source.DB, t) },
		rep:    s.rep,
	}
}

// wrap puts the copy's gate between the relay log and the rest of the pipeline; whileHeld is the
// gate's (gate.Config).
func (cp *copyPhase) wrap(relay applier.Fetcher, start string, whileHeld func()) applier.Fetcher {
	cp.gate = gate.New(relay, cp.req, gate.Config{Flavor: cp.flavor, Start: start, WhileHeld: whileHeld})
	return cp.gate
}

// run copies, then records the end of the copy and returns errCopyDone.
func (cp *copyPhase) run(ctx context.Context) error {
	began := time.Now()
	if err := cp.c.Run(ctx, cp.catchUp); err != nil {
		return err
	}
	if err := cp.cfg.Lease.EndCopy(ctx); err != nil {
		return err
	}
	cp.rep.addStateLog(ctx, workflow.StateRunning, fmt.Sprintf("Running: copy done, %d rows", cp.c.RowsCopied()))
	cp.cfg.Logger.Info("copy phase done; replicating", "rows", cp.c.RowsCopied(), "seconds", time.Since(began).Seconds())
	return errCopyDone
}

// catchUp is the copier's copier.CatchUp: it moves the gate's pause to pos and waits until the
// applier has committed everything up to it and the gate holds there. It also records the copy's
// progress in the record's message.
func (cp *copyPhase) catchUp(ctx context.Context, pos binlog.Position) error {
	cp.rep.msg.set(copier.Message(cp.c.State()))
	cp.req.Set(pos.String(), cp.flavor)
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for {
		if paused, at := cp.gate.Paused(); paused {
			if p, err := binlog.ParsePosition(at, cp.flavor); err == nil && p.Contains(pos) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-cp.gate.Notify():
		case <-poll.C:
		}
	}
}

// probe adds the copy's clocks to the watchdog's snapshot: a reader blocked on a full relay log
// while the copy holds the stream is not stalled, and a chunk that makes no progress is.
func (cp *copyPhase) probe(snap *stall.Snapshot) {
	snap.RelayBlockedSince = cp.gate.RelayBlockedSince(snap.RelayBlockedSince)
	w := cp.c.Work()
	snap.CopySince, snap.CopyStatement, snap.CopyStatementSince = w.ProgressSince, w.Statement, w.StatementSince
}

// errStopPosWhileCopying refuses a stop position for a workflow whose copy is to run or not done:
// each of the copy's snapshots moves the workflow's position to the source's, so it may pass any
// position chosen in advance, and the target is consistent only from the copy's end on.
var errStopPosWhileCopying = fmt.Errorf("%w: --stop-pos cannot be used while the workflow copies its tables: each of the copy's snapshots moves its position to the source's, past any position chosen in advance; run it without --stop-pos until the copy is done (state Running), then with --stop-pos, or give --start-pos to skip the copy", ErrTerminal)

// checkStopWhileCopying returns errStopPosWhileCopying when there is a stop position and rec's
// copy is to come or not done (a record from before the copy's mark says Copying).
func checkStopWhileCopying(ctx context.Context, store *workflow.Store, stop binlog.Position, rec workflow.Record) error {
	if stop.IsZero() {
		return nil
	}
	copying, err := store.CopyUnfinished(ctx, rec.ID)
	if err != nil {
		return err
	}
	if copying || rec.State == workflow.StateCopying {
		return errStopPosWhileCopying
	}
	return nil
}

// newState is the state of a workflow created now with --start-pos startPos: Copying without
// one (SPEC 7a).
func newState(startPos string) string {
	if strings.TrimSpace(startPos) == "" {
		return workflow.StateCopying
	}
	return workflow.StateInit
}
