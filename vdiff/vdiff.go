// Package vdiff compares a workflow's source and target tables at one consistent point while the
// source keeps taking writes, and says which rows differ.
//
// Run takes a consistent snapshot on the source and reads the binlog position P it corresponds
// to; has the workflow apply exactly up to P and stop there; takes a consistent snapshot on the
// target, checked to be at P; lets the workflow go on; and compares the two snapshots table by
// table, by chunk checksums first and row by row only in chunks whose checksums differ.
//
// Holding the workflow at P: when a live vplayer process owns the workflow (its lease on the
// record), Run pauses it through the record (workflow.RequestPause, PauseAt, ClearPause; the
// stream's gate does the rest). It first asks the stream to stop at its next transaction
// boundary and waits for the acknowledgement, and only then takes the source snapshot: P is then
// at or past everything the target has, and the stream, held, cannot run past P before it hears
// of it. When no process owns the workflow, Run catches the target up to P itself, through
// Config.CatchUp (the stream with a stop position), which leaves the workflow Stopped at P.
package vdiff

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/snapshot"
	"github.com/vplayer/vplayer/sqlq"
	"github.com/vplayer/vplayer/tabledef"
	"github.com/vplayer/vplayer/workflow"
)

// DefaultPauseLease is how long a pause outlives its diff: a diff renews it every poll, and a
// stream whose diff died goes on by itself once it expires.
const DefaultPauseLease = 30 * time.Second

// pollInterval is how often Run reads the record while it waits for the stream.
const pollInterval = 100 * time.Millisecond

// Config configures Run.
type Config struct {
	Workflow string
	// Store is the target's workflow record store.
	Store *workflow.Store
	// Source and Target are pools to the two servers.
	Source, Target *sql.DB
	// Tables, when set, restricts the comparison to the workflow's tables matching these entries
	// (names and /regex/); empty compares every table the workflow replicates.
	Tables []string
	// Options shape each table's comparison.
	Options Options
	// WaitTimeout bounds each wait for the workflow: the running stream's pause, its reaching the
	// snapshot position, or the catch-up. Default 5m.
	WaitTimeout time.Duration
	// PauseLease is the pause's lease; default DefaultPauseLease.
	PauseLease time.Duration
	// CatchUp applies the workflow up to and including pos in this process, for a workflow no
	// vplayer process runs. Nil: such a diff fails unless the target is already at the position.
	CatchUp func(ctx context.Context, rec workflow.Record, pos string) error
	Logger  *slog.Logger
}

// Report is the outcome of Run.
type Report struct {
	Workflow           string
	SourceDB, TargetDB string
	// Pos is the source position both snapshots correspond to.
	Pos string
	// Paused says how the target got there: a running vplayer was paused at Pos (true), or the
	// diff applied the workflow up to Pos itself (false).
	Paused bool
	Tables []TableResult
}

// Equal reports whether every table is equal.
func (r *Report) Equal() bool {
	for _, t := range r.Tables {
		if !t.Equal() {
			return false
		}
	}
	return true
}

// Differing returns how many tables differ.
func (r *Report) Differing() int {
	n := 0
	for _, t := range r.Tables {
		if !t.Equal() {
			n++
		}
	}
	return n
}

// Run compares the workflow's tables at one consistent position (see the package comment).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.WaitTimeout <= 0 {
		cfg.WaitTimeout = 5 * time.Minute
	}
	if cfg.PauseLease <= 0 {
		cfg.PauseLease = DefaultPauseLease
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	d := &differ{cfg: cfg, store: cfg.Store, log: cfg.Logger}
	return d.run(ctx)
}

type differ struct {
	cfg   Config
	store *workflow.Store
	log   *slog.Logger
	rec   workflow.Record
}

func (d *differ) run(ctx context.Context) (*Report, error) {
	rec, err := d.store.Get(ctx, d.cfg.Workflow)
	if err != nil {
		return nil, err
	}
	d.rec = rec
	copying := rec.State == workflow.StateCopying
	// An older record table lacks the pause columns: Init adds them.
	if err := d.store.Init(ctx); err != nil {
		return nil, err
	}
	if !copying {
		// A copy stopped or failed midway leaves the record Stopped or Error: its copy state
		// says the copy is not done.
		if copying, err = d.store.CopyUnfinished(ctx, rec.ID); err != nil {
			return nil, err
		}
	}
	if copying {
		return nil, fmt.Errorf("workflow %s is copying its tables: its target is not complete yet; run the diff once vplayer status shows it Running", rec.Workflow)
	}
	source, err := workflow.ParseSource(rec.Source)
	if err != nil || source.Database == "" {
		return nil, fmt.Errorf("workflow %s: its record names no source database", rec.Workflow)
	}
	rep := &Report{Workflow: rec.Workflow, SourceDB: source.Database, TargetDB: rec.DBName}
	if rep.TargetDB == "" {
		rep.TargetDB = rep.SourceDB
	}
	tables, err := d.tables(ctx, source.Database, source.Tables)
	if err != nil {
		return nil, err
	}
	start, err := binlog.ParsePosition(rec.Pos, "")
	if err != nil {
		return nil, fmt.Errorf("workflow %s: stored position: %w", rec.Workflow, err)
	}
	ctl, err := d.store.Control(ctx, rec.ID)
	if err != nil {
		return nil, err
	}

	var src, dst *snapshot.Snapshot
	defer func() {
		src.Close()
		dst.Close()
	}()
	var pos binlog.Position
	if ctl.Owned {
		rep.Paused = true
		src, dst, pos, err = d.pauseRunning(ctx, start.Flavor, ctl.Owner)
	} else {
		src, dst, pos, err = d.catchUp(ctx, start)
	}
	if err != nil {
		return nil, err
	}
	rep.Pos = pos.String()
	for _, name := range tables {
		d.log.Info("comparing", "table", name)
		r, err := CompareTable(ctx, src.Conn, dst.Conn, rep.SourceDB, rep.TargetDB, name, d.cfg.Options)
		if err != nil {
			return nil, fmt.Errorf("compare %s: %w", name, err)
		}
		rep.Tables = append(rep.Tables, r)
	}
	return rep, nil
}

// tables lists the source tables the workflow replicates, restricted by Config.Tables.
func (d *differ) tables(ctx context.Context, db string, replicated []string) ([]string, error) {
	wf, err := binlog.NewFilter(db, replicated)
	if err != nil {
		return nil, fmt.Errorf("workflow %s: its tables: %w", d.rec.Workflow, err)
	}
	// The shadow and trash tables of an online schema change in progress are not the
	// workflow's: the stream does not replicate them, so they are not compared either.
	opts, err := workflow.ParseOptions(d.rec.Options)
	if err != nil {
		return nil, fmt.Errorf("workflow %s: its options: %w", d.rec.Workflow, err)
	}
	online, err := binlog.ParseOnlineDDLPatterns(opts.OnlineDDLPatterns)
	if err != nil {
		return nil, fmt.Errorf("workflow %s: its --online-ddl-patterns: %w", d.rec.Workflow, err)
	}
	wf.SetOnlineDDL(online)
	only, err := binlog.NewFilter(db, d.cfg.Tables)
	if err != nil {
		return nil, fmt.Errorf("--tables: %w", err)
	}
	out, err := tabledef.BaseTables(ctx, d.cfg.Source, db, func(name string) bool { return wf.Match(db, name) && only.Match(db, name) })
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no table of %s to compare: the workflow replicates %v, --tables asks for %v", db, replicated, d.cfg.Tables)
	}
	return out, nil
}

// pauseRunning holds the running stream at the source snapshot's position and takes the target
// snapshot there. The pause is cleared before it returns, whatever happens.
func (d *differ) pauseRunning(ctx context.Context, flavor, owner string) (src, dst *snapshot.Snapshot, pos binlog.Position, err error) {
	id := d.rec.ID
	if err := d.store.RequestPause(ctx, id, d.cfg.PauseLease); err != nil {
		return nil, nil, pos, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if cerr := d.store.ClearPause(cctx, id); cerr != nil {
			d.log.Warn("could not clear the pause; it expires by itself", "lease", d.cfg.PauseLease, "error", cerr)
			if err == nil {
				err = cerr
			}
		}
	}()
	d.log.Info("pausing the running vplayer", "owner", owner)
	if _, err := d.wait(ctx, "the running vplayer to pause", func(c workflow.Control) bool { return c.Pause == workflow.PauseHeld }); err != nil {
		return nil, nil, pos, err
	}
	src, pos, err = snapshot.Source(ctx, d.cfg.Source, flavor)
	if err != nil {
		return nil, nil, pos, err
	}
	d.log.Info("source snapshot taken; letting the stream apply up to it", "pos", pos.String())
	if err := d.store.PauseAt(ctx, id, pos.String(), d.cfg.PauseLease); err != nil {
		src.Close()
		return nil, nil, pos, err
	}
	if _, err := d.wait(ctx, "the stream to reach "+pos.String(), func(c workflow.Control) bool { return contains(c.Pos, pos) }); err != nil {
		src.Close()
		return nil, nil, pos, err
	}
	dst, err = d.targetAt(ctx, pos)
	if err != nil {
		src.Close()
		return nil, nil, pos, err
	}
	if err := d.store.ClearPause(ctx, id); err != nil {
		src.Close()
		dst.Close()
		return nil, nil, pos, err
	}
	d.log.Info("target snapshot taken; the stream goes on", "pos", pos.String())
	return src, dst, pos, nil
}

// catchUp takes the source snapshot and, when the target is behind it, applies the workflow up
// to its position in this process, then takes the target snapshot.
func (d *differ) catchUp(ctx context.Context, start binlog.Position) (src, dst *snapshot.Snapshot, pos binlog.Position, err error) {
	src, pos, err = snapshot.Source(ctx, d.cfg.Source, start.Flavor)
	if err != nil {
		return nil, nil, pos, err
	}
	if !start.Contains(pos) {
		if d.cfg.CatchUp == nil {
			src.Close()
			return nil, nil, pos, fmt.Errorf("workflow %s is at %s, behind the source snapshot at %s, and no vplayer runs it", d.rec.Workflow, d.rec.Pos, pos)
		}
		d.log.Info("no vplayer runs the workflow: applying it up to the source snapshot here", "from", d.rec.Pos, "to", pos.String())
		cctx, cancel := context.WithTimeout(ctx, d.cfg.WaitTimeout)
		err := d.cfg.CatchUp(cctx, d.rec, pos.String())
		cancel()
		if err != nil {
			src.Close()
			return nil, nil, pos, fmt.Errorf("apply workflow %s up to %s: %w", d.rec.Workflow, pos, err)
		}
		if ctx.Err() != nil {
			src.Close()
			return nil, nil, pos, ctx.Err()
		}
		if c, err := d.store.Control(ctx, d.rec.ID); err != nil || !contains(c.Pos, pos) {
			src.Close()
			if err != nil {
				return nil, nil, pos, err
			}
			return nil, nil, pos, fmt.Errorf("workflow %s reached only %s of the source snapshot's %s within %v: is the stream stuck, or did another vplayer take the workflow?",
				d.rec.Workflow, c.Pos, pos, d.cfg.WaitTimeout)
		}
	}
	dst, err = d.targetAt(ctx, pos)
	if err != nil {
		src.Close()
		return nil, nil, pos, err
	}
	return src, dst, pos, nil
}

// targetAt takes the target snapshot and checks that the record, read inside it, is exactly at
// pos.
func (d *differ) targetAt(ctx context.Context, pos binlog.Position) (*snapshot.Snapshot, error) {
	dst, err := snapshot.Target(ctx, d.cfg.Target)
	if err != nil {
		return nil, err
	}
	var got string
	q := "SELECT pos FROM " + sqlq.Ident(d.store.Sidecar()) + ".vreplication WHERE id = ?"
	if err := dst.Conn.QueryRowContext(ctx, q, d.rec.ID).Scan(&got); err != nil {
		dst.Close()
		return nil, fmt.Errorf("target snapshot: read the workflow's position: %w", err)
	}
	p, err := binlog.ParsePosition(got, "")
	if err != nil || !p.Equal(pos) {
		dst.Close()
		return nil, fmt.Errorf("the target snapshot is at %s, not at the source snapshot's %s: the workflow moved (was it started or stopped during the diff?)", got, pos)
	}
	return dst, nil
}

// wait polls the record until done holds, renewing the pause as it goes. It fails when the
// pause is lost, the workflow stops, its process goes away, or WaitTimeout passes.
func (d *differ) wait(ctx context.Context, what string, done func(workflow.Control) bool) (workflow.Control, error) {
	deadline := time.Now().Add(d.cfg.WaitTimeout)
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	lastRenew := time.Now()
	for {
		c, err := d.store.Control(ctx, d.rec.ID)
		if err != nil {
			return c, err
		}
		switch {
		case done(c):
			return c, nil
		case c.State == workflow.StateStopped || c.State == workflow.StateError:
			return c, fmt.Errorf("workflow %s became %s (at %s) while waiting for %s: see vplayer status", d.rec.Workflow, c.State, c.Pos, what)
		case c.Pause == "":
			return c, fmt.Errorf("waiting for %s: %w", what, workflow.ErrPauseLost)
		case !c.Owned:
			return c, fmt.Errorf("waiting for %s: no vplayer process owns workflow %s any more: run the diff again", what, d.rec.Workflow)
		case time.Now().After(deadline):
			return c, fmt.Errorf("waited %v for %s (the workflow is at %s): is the stream stuck or far behind? see vplayer status, or raise --wait-timeout", d.cfg.WaitTimeout, what, c.Pos)
		}
		if time.Since(lastRenew) >= time.Second {
			if err := d.store.RenewPause(ctx, d.rec.ID, c.Pause, d.cfg.PauseLease); err != nil && !errors.Is(err, workflow.ErrPauseLost) {
				return c, err
			}
			lastRenew = time.Now()
		}
		select {
		case <-ctx.Done():
			return c, ctx.Err()
		case <-t.C:
		}
	}
}

// contains reports whether the stored position pos is at or past want.
func contains(pos string, want binlog.Position) bool {
	p, err := binlog.ParsePosition(pos, "")
	return err == nil && p.Contains(want)
}
