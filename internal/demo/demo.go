// Package demo runs `vplayer demo`: a local source and target, a live workload replicated while
// it runs, proof that the target equals the source, and a stall detected and recovered.
package demo

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/internal/compare"
	"github.com/vplayer/vplayer/internal/mysqld"
	"github.com/vplayer/vplayer/internal/workload"
	"github.com/vplayer/vplayer/stream"
	"github.com/vplayer/vplayer/stream/preflight"
	"github.com/vplayer/vplayer/workflow"
)

// Options shape a demo run; the zero value is the full demo.
type Options struct {
	// WorkloadFor is how long the first act's workload runs (default 20s).
	WorkloadFor time.Duration
	// ProgressEvery is the progress line period (default 2s).
	ProgressEvery time.Duration
	// Deadline is the stall deadline of the second act (default 5s).
	Deadline time.Duration
}

const (
	dbName       = "shop"
	workflowName = "demo"
)

// Run runs the demo, printing to w. It returns an error when anything fails, including a target
// that does not match the source.
func Run(ctx context.Context, w io.Writer, o Options) error {
	if o.WorkloadFor <= 0 {
		o.WorkloadFor = 20 * time.Second
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 2 * time.Second
	}
	if o.Deadline <= 0 {
		o.Deadline = 5 * time.Second
	}
	d := &demo{w: w, o: o}
	defer d.close()
	if err := d.start(ctx); err != nil {
		return err
	}
	if err := d.actOne(ctx); err != nil {
		return err
	}
	if err := d.actTwo(ctx); err != nil {
		return err
	}
	d.say("\nDone: replicated a live workload exactly, and detected and recovered from a stall.")
	return nil
}

type demo struct {
	w              io.Writer
	o              Options
	source, target *mysqld.Server
	src, dst       *sql.DB // on database shop
	srcPool        *sql.DB // no database, multi statements, as vplayer opens it
	dstPool        *sql.DB
	store          *workflow.Store
	stopStream     context.CancelFunc
	streamDone     chan error
	mu             sync.Mutex
	attempt        *stream.Attempt
}

func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.w, format+"\n", args...)
}

func (d *demo) close() {
	if d.stopStream != nil {
		d.stopStream()
		<-d.streamDone
	}
	for _, db := range []*sql.DB{d.src, d.dst, d.srcPool, d.dstPool} {
		if db != nil {
			db.Close()
		}
	}
	for _, s := range []*mysqld.Server{d.source, d.target} {
		if s != nil {
			s.Stop()
		}
	}
}

func (d *demo) start(ctx context.Context) error {
	bin, err := mysqld.Find()
	if err != nil {
		return err
	}
	d.say("Starting a local source and target from %s (temporary datadirs, free loopback ports)...", bin)
	var wg sync.WaitGroup
	var serr, terr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		d.source, serr = mysqld.Start(ctx, mysqld.Options{Name: "demo-source", ServerID: 1, Binlog: true})
	}()
	go func() {
		defer wg.Done()
		d.target, terr = mysqld.Start(ctx, mysqld.Options{Name: "demo-target", ServerID: 2})
	}()
	wg.Wait()
	if err := errors.Join(serr, terr); err != nil {
		return fmt.Errorf("start servers: %w", err)
	}
	d.say("  source %s (binlog on, ROW, FULL image, GTIDs)   target %s", d.source.Addr(), d.target.Addr())
	for _, p := range []struct {
		s  *mysqld.Server
		db **sql.DB
		n  string
	}{{d.source, &d.srcPool, ""}, {d.target, &d.dstPool, ""}, {d.source, &d.src, ""}, {d.target, &d.dst, ""}} {
		if *p.db, err = p.s.Pool(p.n); err != nil {
			return err
		}
	}
	for _, db := range []*sql.DB{d.src, d.dst} {
		if _, err := db.ExecContext(ctx, "CREATE DATABASE "+dbName); err != nil {
			return err
		}
	}
	if err := workload.Create(ctx, dbName, d.src, d.dst); err != nil {
		return err
	}
	d.say("  created database %s with tables %s on both", dbName, strings.Join(workload.Tables, ", "))
	d.store = workflow.New(d.dstPool, "_vt")
	return nil
}

// runStream starts the stream in process, logging warnings and errors to the demo's output.
func (d *demo) runStream(ctx context.Context) error {
	logger := slog.New(slog.NewTextHandler(d.w, &slog.HandlerOptions{Level: slog.LevelWarn})).With("workflow", workflowName)
	cfg := stream.DefaultConfig()
	cfg.Workflow = workflowName
	cfg.Source = stream.Source{Host: "127.0.0.1", Port: uint16(d.source.Port()), User: "root", DB: dbName, Pool: d.srcPool}
	cfg.Target, cfg.TargetDB, cfg.StartPos = d.dstPool, dbName, "current"
	cfg.ProgressDeadline, cfg.RetryDelay = d.o.Deadline, 2*time.Second
	cfg.ServerID, cfg.Options, cfg.Logger = binlog.ServerIDFor(workflowName), "{}", logger
	cfg.OnStart = func(a *stream.Attempt) {
		d.mu.Lock()
		d.attempt = a
		d.mu.Unlock()
	}
	if err := preflight.Check(ctx, cfg.Preflight()); err != nil {
		return err
	}
	s, err := stream.New(cfg)
	if err != nil {
		return err
	}
	sctx, cancel := context.WithCancel(ctx)
	d.stopStream = cancel
	d.streamDone = make(chan error, 1)
	go func() { d.streamDone <- s.Run(sctx) }()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if r, err := d.store.Get(ctx, workflowName); err == nil && r.State == workflow.StateRunning {
			return nil
		}
	}
	return errors.New("the workflow did not start within 30s")
}

func (d *demo) progress() string {
	d.mu.Lock()
	a := d.attempt
	d.mu.Unlock()
	if a == nil {
		return "starting"
	}
	st := a.Applier.Stats()
	return fmt.Sprintf("applied %6d transactions, %7d rows in %5d commits | lag %5.1fs | relay log %4d/%d items, %6d/%d bytes",
		st.Transactions.Load(), st.Rows.Load(), st.Commits.Load(), a.Applier.Lag(time.Now()).Seconds(),
		a.Relay.Len(), 5000, a.Relay.Size(), 250000)
}

func (d *demo) actOne(ctx context.Context) error {
	d.say("\nAct 1: replicate a live workload")
	if err := d.runStream(ctx); err != nil {
		return err
	}
	d.say("  vplayer is running (workflow %q); writing inserts, updates (some changing the primary key) and deletes on the source for %v", workflowName, d.o.WorkloadFor)
	wctx, cancel := context.WithTimeout(ctx, d.o.WorkloadFor)
	defer cancel()
	var st workload.Stats
	done := make(chan error, 1)
	go func() {
		done <- workload.Run(wctx, d.src, dbName, workload.Config{Workers: 4, Rate: 1500, Seed: 42}, &st)
	}()
	tick := time.NewTicker(d.o.ProgressEvery)
	defer tick.Stop()
	began := time.Now()
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("workload: %w", err)
			}
			running = false
		case <-tick.C:
			d.say("  [%4.0fs] source wrote %6d transactions | %s", time.Since(began).Seconds(), st.Transactions.Load(), d.progress())
		}
	}
	d.say("  workload done: %d transactions on the source; waiting for vplayer to catch up...", st.Transactions.Load())
	if err := d.waitCaughtUp(ctx, 60*time.Second); err != nil {
		return err
	}
	d.say("  caught up | %s", d.progress())
	return d.compare(ctx)
}

func (d *demo) waitCaughtUp(ctx context.Context, timeout time.Duration) error {
	want, err := stream.CurrentPosition(ctx, d.srcPool, "mariadb")
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		r, err := d.store.Get(ctx, workflowName)
		if err != nil {
			continue
		}
		if p, err := binlog.ParsePosition(r.Pos, "mariadb"); err == nil && p.Contains(want) {
			return nil
		}
	}
	return fmt.Errorf("vplayer did not catch up with the source position %s within %v", want, timeout)
}

func (d *demo) compare(ctx context.Context) error {
	d.say("  comparing target with source, table by table, every value exact (floats by their bits):")
	rs, err := compare.Tables(ctx, d.src, d.dst, dbName, dbName, workload.Tables)
	if err != nil {
		return err
	}
	for _, r := range rs {
		d.say("    %s", r)
	}
	if !compare.AllEqual(rs) {
		return errors.New("the target does NOT match the source")
	}
	d.say("  RESULT: target == source")
	return nil
}

func (d *demo) status(ctx context.Context) string {
	r, err := d.store.Get(ctx, workflowName)
	if err != nil {
		return err.Error()
	}
	msg := r.Message
	if msg == "" {
		msg = "(empty)"
	}
	return fmt.Sprintf("state=%s message=%s", r.State, msg)
}

func (d *demo) actTwo(ctx context.Context) error {
	d.say("\nAct 2: a stall, detected and recovered (--vplayer-progress-deadline %v)", d.o.Deadline)
	var id int64
	if err := d.dst.QueryRowContext(ctx, "SELECT id FROM "+dbName+".customers ORDER BY id DESC LIMIT 1").Scan(&id); err != nil {
		return err
	}
	lock, err := d.dstPool.Conn(ctx)
	if err != nil {
		return err
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, "BEGIN"); err != nil {
		return err
	}
	rows, err := lock.QueryContext(ctx, fmt.Sprintf("SELECT * FROM %s.customers WHERE id = %d FOR UPDATE", dbName, id))
	if err != nil {
		return err
	}
	rows.Close()
	d.say("  another session on the TARGET now holds a lock on customers row %d (SELECT ... FOR UPDATE)", id)
	if _, err := d.src.ExecContext(ctx, fmt.Sprintf("UPDATE %s.customers SET balance = balance + 100 WHERE id = %d", dbName, id)); err != nil {
		return err
	}
	locked := time.Now()
	d.say("  the source updated that row; vplayer's UPDATE on the target now waits for the lock")
	var seen string
	for time.Since(locked) < d.o.Deadline+10*time.Second {
		time.Sleep(250 * time.Millisecond)
		st := d.status(ctx)
		if strings.Contains(st, "stalled") {
			seen = st
			break
		}
	}
	if seen == "" {
		return fmt.Errorf("no stall was reported within %v", d.o.Deadline+10*time.Second)
	}
	d.say("  after %.1fs, vplayer status shows:\n    %s", time.Since(locked).Seconds(), seen)
	d.say("  (vplayer killed its blocked statement so its own locks went, and will retry from the committed position)")
	time.Sleep(time.Second)
	if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
		return err
	}
	released := time.Now()
	d.say("  lock released; waiting for vplayer to retry and catch up...")
	if err := d.waitCaughtUp(ctx, 60*time.Second); err != nil {
		return err
	}
	d.say("  recovered %.1fs after the release | %s", time.Since(released).Seconds(), d.status(ctx))
	return d.compare(ctx)
}
