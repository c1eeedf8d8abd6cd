package bench

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"time"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/stream"
	"github.com/vplayer/vplayer/stream/preflight"
)

// profileVplayer runs vplayer's catch-up in this process, with the settings `vplayer run` uses
// by default (but the one --apply-workers entry, when given), under the CPU profiler; it writes
// the profile and prints the allocations per row change the catch-up made.
func (c *cluster) profileVplayer(ctx context.Context, mode, want string, st genStats) (timing, error) {
	var tm timing
	path := profilePath(c.o.CPUProfile, mode)
	f, err := os.Create(path)
	if err != nil {
		return tm, err
	}
	defer f.Close()
	srcPool, err := open(c.source)
	if err != nil {
		return tm, err
	}
	defer srcPool.Close()
	t := c.main()
	cfg := c.inProcessConfig(srcPool, t)
	cpu := startCPU(os.Getpid(), t.pid, c.sourcePID)
	began := time.Now()
	if err := preflight.Check(ctx, cfg.Preflight()); err != nil {
		return tm, err
	}
	s, err := stream.New(cfg)
	if err != nil {
		return tm, err
	}
	if c.o.MemProfile != "" {
		// The allocation profile counts from the process's start: the base lets pprof subtract
		// what the benchmark itself allocated before the catch-up.
		if err := writeAllocs(profilePath(c.o.MemProfile, mode) + ".base"); err != nil {
			return tm, err
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := pprof.StartCPUProfile(f); err != nil {
		return tm, err
	}
	stopTrace, err := c.startTrace(mode)
	if err != nil {
		pprof.StopCPUProfile()
		return tm, err
	}
	defer stopTrace()
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		runErr = s.Run(sctx)
	}()
	waitErr := waitRecord(ctx, t.store, want, done, func() error { return fmt.Errorf("in-process vplayer ended: %v", runErr) })
	tm.took = time.Since(began)
	used := cpu.stop()
	tm.applierCPU, tm.targetCPU, tm.sourceCPU = used[0], used[1], used[2]
	pprof.StopCPUProfile()
	runtime.ReadMemStats(&after)
	cancel()
	<-done
	if err := c.writeMemProfile(mode); err != nil {
		return tm, err
	}
	if waitErr != nil {
		return tm, waitErr
	}
	if runErr != nil {
		return tm, runErr
	}
	c.say("    CPU profile written to %s (go tool pprof -top %s)", path, path)
	c.sayAllocs(&before, &after, st)
	return tm, nil
}

// inProcessConfig is the configuration of the in-process vplayer that applies to target t:
// `vplayer run`'s defaults, t's worker count when it has one, and no logging.
func (c *cluster) inProcessConfig(srcPool *sql.DB, t vtarget) stream.Config {
	cfg := stream.DefaultConfig()
	cfg.Workflow = workflowName
	cfg.Source = stream.Source{Host: "127.0.0.1", Port: uint16(c.source.Port()), User: "root", DB: dbName, Pool: srcPool}
	cfg.Target, cfg.TargetDB = t.db, dbName
	cfg.ProgressDeadline, cfg.RetryDelay = 10*time.Minute, time.Second
	cfg.ServerID, cfg.Options = binlog.ServerIDFor(workflowName), "{}"
	if t.workers > 0 {
		cfg.ApplyWorkers = t.workers
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return cfg
}

// startTrace starts the execution trace of mode's catch-up when Options.Trace asks for one; stop
// ends it and closes its file.
func (c *cluster) startTrace(mode string) (stop func(), err error) {
	if c.o.Trace == "" {
		return func() {}, nil
	}
	tf, err := os.Create(profilePath(c.o.Trace, mode))
	if err != nil {
		return nil, err
	}
	if err := trace.Start(tf); err != nil {
		tf.Close()
		return nil, err
	}
	return func() {
		trace.Stop()
		tf.Close()
	}, nil
}

// writeMemProfile writes the allocation profile of mode's catch-up when Options.MemProfile asks
// for one.
func (c *cluster) writeMemProfile(mode string) error {
	if c.o.MemProfile == "" {
		return nil
	}
	mp := profilePath(c.o.MemProfile, mode)
	if err := writeAllocs(mp); err != nil {
		return err
	}
	c.say("    allocation profile written to %s (go tool pprof -sample_index=alloc_space -base %s.base %s)", mp, mp, mp)
	return nil
}

// sayAllocs prints what the catch-up allocated, from the memory statistics before and after it,
// per row change and per transaction of st.
func (c *cluster) sayAllocs(before, after *runtime.MemStats, st genStats) {
	rows, txns := st.Rows, st.Transactions
	if rows > 0 {
		c.say("    in-process catch-up allocated %.1f objects and %.0f bytes per row change (%.1f objects per transaction); %d GC cycles",
			float64(after.Mallocs-before.Mallocs)/float64(rows), float64(after.TotalAlloc-before.TotalAlloc)/float64(rows),
			float64(after.Mallocs-before.Mallocs)/float64(txns), after.NumGC-before.NumGC)
	}
}

// profilePath inserts the mode before the extension: cpu.pprof -> cpu-catchup.pprof.
func profilePath(path, mode string) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "-" + mode + ext
}

// writeAllocs writes the allocation profile so far to path.
func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
