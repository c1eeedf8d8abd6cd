package bench

import (
	"context"
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
	cfg := stream.DefaultConfig()
	cfg.Workflow = workflowName
	cfg.Source = stream.Source{Host: "127.0.0.1", Port: uint16(c.source.Port()), User: "root", DB: dbName, Pool: srcPool}
	t := c.main()
	cfg.Target, cfg.TargetDB = t.db, dbName
	cfg.ProgressDeadline, cfg.RetryDelay = 10*time.Minute, time.Second
	cfg.ServerID, cfg.Options = binlog.ServerIDFor(workflowName), "{}"
	if t.workers > 0 {
		cfg.ApplyWorkers = t.workers
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
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
	if c.o.Trace != "" {
		tf, err := os.Create(profilePath(c.o.Trace, mode))
		if err != nil {
			pprof.StopCPUProfile()
			return tm, err
		}
		defer tf.Close()
		if err := trace.Start(tf); err != nil {
			pprof.StopCPUProfile()
			return tm, err
		}
		defer trace.Stop()
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		runErr = s.Run(sctx)
	}()
	err = waitRecord(ctx, t.store, want, done, func() error { return fmt.Errorf("in-process vplayer ended: %v", runErr) })
	tm.took = time.Since(began)
	used := cpu.stop()
	tm.applierCPU, tm.targetCPU, tm.sourceCPU = used[0], used[1], used[2]
	pprof.StopCPUProfile()
	runtime.ReadMemStats(&after)
	cancel()
	<-done
	if c.o.MemProfile != "" {
		mp := profilePath(c.o.MemProfile, mode)
		if err := writeAllocs(mp); err != nil {
			return tm, err
		}
		c.say("    allocation profile written to %s (go tool pprof -sample_index=alloc_space -base %s.base %s)", mp, mp, mp)
	}
	if err != nil {
		return tm, err
	}
	if runErr != nil {
		return tm, runErr
	}
	rows, txns := st.Rows, st.Transactions
	c.say("    CPU profile written to %s (go tool pprof -top %s)", path, path)
	if rows > 0 {
		c.say("    in-process catch-up allocated %.1f objects and %.0f bytes per row change (%.1f objects per transaction); %d GC cycles",
			float64(after.Mallocs-before.Mallocs)/float64(rows), float64(after.TotalAlloc-before.TotalAlloc)/float64(rows),
			float64(after.Mallocs-before.Mallocs)/float64(txns), after.NumGC-before.NumGC)
	}
	return tm, nil
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
