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

// copyPhase is the copy of one attempt (SPEC 7a): the copier, and the gate in front of the
// applier through which the copier holds the stream at each of its snapshots' positions.
type copyPhase struct {
	s    *Stream
	c    *copier.Copier
	req  *gate.Request
	gate *gate.Gate
}

// newCopyPhase returns the attempt's copy phase, or nil when the workflow is not copying: it has
// no copy planned, or its copy is done. A workflow created to copy (its copy state marked, or,
// from before the mark, state Copying) plans its copy here, under the lease: missing target
// tables created, a non-empty one a terminal error.
func (s *Stream) newCopyPhase(ctx context.Context, rec workflow.Record, start binlog.Position) (*copyPhase, error) {
	state, err := s.store.CopyState(ctx, s.id)
	if err != nil {
		return nil, err
	}
	cfg := s.copierConfig(start.Flavor)
	toPlan := rec.State == workflow.StateCopying // a record from before the mark
	if len(state) == 0 && !toPlan {
		if toPlan, err = s.store.CopyToPlan(ctx, s.id); err != nil {
			return nil, err
		}
	}
	if len(state) == 0 && toPlan {
		tables, err := copier.SourceTables(ctx, s.cfg.Source.Pool, s.cfg.Source.DB, func(t string) bool { return s.filter.Match(s.cfg.Source.DB, t) })
		if err != nil {
			return nil, err
		}
		if err := copier.Plan(ctx, cfg, tables); err != nil {
			if errors.Is(err, copier.ErrNotEmpty) || errors.Is(err, copier.ErrDefinition) {
				return nil, fmt.Errorf("%w: %w", ErrTerminal, err)
			}
			return nil, err
		}
		if state, err = s.store.CopyState(ctx, s.id); err != nil {
			return nil, err
		}
		s.log.Info("copy planned", "tables", len(state))
	}
	if len(state) == 0 || copier.Done(state) {
		return nil, nil
	}
	cp := &copyPhase{s: s, c: copier.New(cfg), req: gate.NewRequest()}
	cp.req.Set(workflow.PauseHold, s.flavor) // the applier holds at its start until the first snapshot
	return cp, nil
}

// copierConfig configures the copier; flavor is the flavor of the workflow's positions.
func (s *Stream) copierConfig(flavor string) copier.Config {
	return copier.Config{
		Source: s.cfg.Source.Pool, Target: s.cfg.Target, SourceDB: s.cfg.Source.DB, TargetDB: s.cfg.TargetDB,
		Store: s.store, ID: s.id, Lease: s.own.lease, Flavor: flavor, MySQLSource: s.flavor == "mysql",
		ChunkRows: s.cfg.CopyChunkRows, ChunkBytes: s.cfg.CopyChunkBytes, Writers: s.cfg.CopyWriters, Logger: s.log,
		KeepKeys: s.cfg.OnDDL == applier.OnDDLExec || s.cfg.OnDDL == applier.OnDDLExecIgnore,
		Hold:     s.ctl.waitThrottled,
	}
}

// wrap puts the copy's gate between the relay log and the rest of the pipeline; whileHeld is the
// gate's (gate.Config).
func (cp *copyPhase) wrap(relay applier.Fetcher, start string, whileHeld func()) applier.Fetcher {
	cp.gate = gate.New(relay, cp.req, gate.Config{Flavor: cp.s.flavor, Start: start, WhileHeld: whileHeld})
	return cp.gate
}

// run copies, then records the end of the copy and returns errCopyDone.
func (cp *copyPhase) run(ctx context.Context) error {
	began := time.Now()
	if err := cp.c.Run(ctx, cp.catchUp); err != nil {
		return err
	}
	if err := cp.s.own.lease.EndCopy(ctx); err != nil {
		return err
	}
	cp.s.rep.addStateLog(ctx, workflow.StateRunning, fmt.Sprintf("Running: copy done, %d rows", cp.c.RowsCopied()))
	cp.s.log.Info("copy phase done; replicating", "rows", cp.c.RowsCopied(), "seconds", time.Since(began).Seconds())
	return errCopyDone
}

// catchUp is the copier's copier.CatchUp: it moves the gate's pause to pos and waits until the
// applier has committed everything up to it and the gate holds there. It also records the copy's
// progress in the record's message.
func (cp *copyPhase) catchUp(ctx context.Context, pos binlog.Position) error {
	cp.s.rep.msg.set(copier.Message(cp.c.State()))
	cp.req.Set(pos.String(), cp.s.flavor)
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for {
		if paused, at := cp.gate.Paused(); paused {
			if p, err := binlog.ParsePosition(at, cp.s.flavor); err == nil && p.Contains(pos) {
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

// checkStopWhileCopying returns errStopPosWhileCopying when the stream has a stop position and
// rec's copy is to come or not done (a record from before the copy's mark says Copying).
func (s *Stream) checkStopWhileCopying(ctx context.Context, rec workflow.Record) error {
	if s.stop.IsZero() {
		return nil
	}
	copying, err := s.store.CopyUnfinished(ctx, rec.ID)
	if err != nil {
		return err
	}
	if copying || rec.State == workflow.StateCopying {
		return errStopPosWhileCopying
	}
	return nil
}

// newState is the state of a workflow created now: Copying without --start-pos (SPEC 7a).
func (s *Stream) newState() string {
	if strings.TrimSpace(s.cfg.StartPos) == "" {
		return workflow.StateCopying
	}
	return workflow.StateInit
}
