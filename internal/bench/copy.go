package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"text/tabwriter"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/vplayer/vplayer/internal/compare"
	"github.com/vplayer/vplayer/internal/mysqld"
	"github.com/vplayer/vplayer/sqlq"
	"github.com/vplayer/vplayer/workflow"
)

// ModeCopy times vplayer's copy phase against a dump and load (not part of ModeAll).
const ModeCopy = "copy"

// Defaults of the copy mode: four tables of 150k sysbench rows, 600k in all.
const (
	DefaultCopyRowsPerTable      = 150_000
	DefaultQuickCopyRowsPerTable = 5000
)

// Names of the copy mode's loaders.
const (
	nameVplayerCopy = "vplayer copy"
	nameDump        = "mariadb-dump --single-transaction | mariadb"
	nameMydumper    = "mydumper -t 4 + myloader -t 4"
	// nameMydumperBinlog is myloader writing the target's binary log, as vplayer and mariadb do
	// (its default leaves it off, so a target's own replicas miss the rows).
	nameMydumperBinlog = "mydumper -t 4 + myloader -t 4 --enable-binlog"
	// nameAlone is no copy tool but the target alone: what the same server needs to load the
	// same rows from its own disk, already in its text format, one session per table, with no
	// source to read and nothing on the wire. A loader through SQL gets below it only by giving
	// the server less work (vplayer's copy builds the secondary keys after the rows).
	nameAlone = "target alone: LOAD DATA INFILE of local files, a session per table"
)

// copyLoader is one way to bring the source's tables to an empty target.
type copyLoader struct {
	name   string
	server *mysqld.Server
	db     *sql.DB
	run    func(ctx context.Context, dst *mysqld.Server) (rss int64, err error)
}

// runCopy starts a source and one empty target per loader, all with the same durable settings,
// loads the sysbench tables on the source, then times each loader in turn (never two at once)
// from its start until the target holds the source's rows (vplayer: until its record is Running
// and at the source's position), and compares every target with the source.
func runCopy(ctx context.Context, w io.Writer, o Options) (_ *Result, err error) {
	rows := o.RowsPerTable
	if rows == 0 {
		rows = pick(o.Quick, DefaultQuickCopyRowsPerTable, DefaultCopyRowsPerTable)
	}
	tmp, err := os.MkdirTemp("", "vplayer-bench-copy-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin, err := mysqld.Find()
	if err != nil {
		return nil, err
	}
	_, mydumperErr := exec.LookPath("mydumper")
	_, myloaderErr := exec.LookPath("myloader")
	withMydumper := mydumperErr == nil && myloaderErr == nil
	names := []string{"bench-source", "bench-vplayer", "bench-dump"}
	if withMydumper {
		names = append(names, "bench-mydumper")
		if o.TargetBinlog {
			names = append(names, "bench-mydumperb")
		}
	}
	aloneAt := len(names)
	names = append(names, "bench-alone")
	say := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	if o.TargetBinlog {
		say("Starting %d servers from %s: source and one empty target per loader, every target with the same settings, its binary log on and synced at every commit", len(names), bin)
	} else {
		say("Starting %d servers from %s: source and one empty target per loader, every target with the same settings (stock: no binary log)", len(names), bin)
	}
	if !withMydumper {
		say("  mydumper/myloader not installed (apt-get install mydumper): timed without them")
	}
	servers := make([]*mysqld.Server, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		opts := sourceOptions(n, uint32(i+1), o.BufferPool)
		if i > 0 {
			opts = copyTargetOptions(n, uint32(i+1), o.BufferPool, o.TargetBinlog)
		}
		wg.Go(func() { servers[i], errs[i] = mysqld.Start(ctx, opts) })
	}
	wg.Wait()
	defer func() {
		for _, s := range servers {
			if s != nil {
				s.Stop()
			}
		}
	}()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("start servers: %w", err)
	}
	dbs := make([]*sql.DB, len(servers))
	for i, s := range servers {
		if dbs[i], err = open(s); err != nil {
			return nil, err
		}
		defer dbs[i].Close()
	}
	src := dbs[0]
	began := time.Now()
	say("Loading %d tables of %d rows on the source (untimed)...", len(tables), rows)
	if err := createSchema(ctx, src); err != nil {
		return nil, err
	}
	if err := loadTables(ctx, src, rows); err != nil {
		return nil, err
	}
	say("  loaded in %.1fs", time.Since(began).Seconds())
	srcPos, err := servers[0].GTIDPos(ctx)
	if err != nil {
		return nil, err
	}
	dsnArgs := func(s *mysqld.Server) []string {
		return []string{"-h", "127.0.0.1", "-P", strconv.Itoa(s.Port()), "-u", "root"}
	}
	loaders := []copyLoader{
		{name: nameVplayerCopy, server: servers[1], db: dbs[1], run: func(ctx context.Context, dst *mysqld.Server) (int64, error) {
			if _, err := dbs[1].ExecContext(ctx, "CREATE DATABASE "+dbName); err != nil {
				return 0, err
			}
			c := &cluster{w: w, o: o, tmp: tmp, source: servers[0]}
			v, err := c.startVplayer(ctx, vtarget{name: nameVplayer, cmd: o.Vplayer, server: dst}, "")
			if err != nil {
				return 0, err
			}
			store := workflow.New(dbs[1], "_vt")
			if err := v.waitFor(ctx, store, srcPos); err != nil {
				v.stop()
				return 0, err
			}
			for {
				r, err := store.Get(ctx, workflowName)
				if err == nil && r.State == workflow.StateRunning {
					break
				}
				select {
				case <-ctx.Done():
					v.stop()
					return 0, ctx.Err()
				case <-time.After(pollInterval):
				}
			}
			rss, rerr := v.peakRSS()
			if err := v.stop(); err != nil {
				return 0, err
			}
			return rss, rerr
		}},
		{name: nameDump, server: servers[2], db: dbs[2], run: func(ctx context.Context, dst *mysqld.Server) (int64, error) {
			dump := exec.CommandContext(ctx, "mariadb-dump", append(dsnArgs(servers[0]), "--single-transaction", "--gtid", "--databases", dbName)...)
			load := exec.CommandContext(ctx, "mariadb", dsnArgs(dst)...)
			pipe, err := dump.StdoutPipe()
			if err != nil {
				return 0, err
			}
			load.Stdin = pipe
			var derr, lerr lockedBuffer
			dump.Stderr, load.Stderr = &derr, &lerr
			if err := load.Start(); err != nil {
				return 0, err
			}
			if err := dump.Run(); err != nil {
				load.Wait()
				return 0, fmt.Errorf("mariadb-dump: %w: %s", err, derr.String())
			}
			if err := load.Wait(); err != nil {
				return 0, fmt.Errorf("mariadb: %w: %s", err, lerr.String())
			}
			return 0, nil
		}},
	}
	if withMydumper {
		mydumper := func(dir string, loadArgs ...string) func(context.Context, *mysqld.Server) (int64, error) {
			return func(ctx context.Context, dst *mysqld.Server) (int64, error) {
				dir := filepath.Join(tmp, dir)
				if out, err := exec.CommandContext(ctx, "mydumper", append(dsnArgs(servers[0]), "-t", "4", "-B", dbName, "-o", dir)...).CombinedOutput(); err != nil {
					return 0, fmt.Errorf("mydumper: %w: %s", err, out)
				}
				if out, err := exec.CommandContext(ctx, "myloader", append(append(dsnArgs(dst), "-t", "4", "-d", dir), loadArgs...)...).CombinedOutput(); err != nil {
					return 0, fmt.Errorf("myloader: %w: %s", err, out)
				}
				return 0, nil
			}
		}
		loaders = append(loaders, copyLoader{name: nameMydumper, server: servers[3], db: dbs[3], run: mydumper("mydumper")})
		if o.TargetBinlog {
			loaders = append(loaders, copyLoader{name: nameMydumperBinlog, server: servers[4], db: dbs[4], run: mydumper("mydumper-binlog", "--enable-binlog")})
		}
	}
	loaders = append(loaders, copyLoader{name: nameAlone, server: servers[aloneAt], db: dbs[aloneAt], run: aloneLoad(ctx, src, dbs[aloneAt], filepath.Join(tmp, "alone"))})
	total := int64(rows) * int64(len(tables))
	targets := map[string]*sql.DB{}
	for _, l := range loaders {
		targets[l.name] = l.db
	}
	settings, err := settingsOf(ctx, src, targets)
	if err != nil {
		return nil, err
	}
	r := &Result{
		Mode: ModeCopy, Quick: o.Quick, Time: time.Now().UTC().Truncate(time.Second), Server: servers[0].Version(), CPUs: runtime.NumCPU(),
		Settings: settings.withTiming("loaders run one at a time on empty targets, never two at once; each from its start until the target holds the source's rows (vplayer: until its record is Running, at the source's position, polled every 10ms)"),
		Workload: Workload{Description: "sysbench-shaped tables (id, k, c char(120), pad char(60)), the source idle", Generator: "bench",
			Tables: len(tables), RowsPerTable: rows},
	}
	all := append([]string{}, tables...)
	for _, l := range loaders {
		if err := quiesce(ctx, say, dbs); err != nil {
			return r, err
		}
		say("Timing %s...", l.name)
		start := time.Now()
		rss, err := l.run(ctx, l.server)
		took := time.Since(start)
		if err != nil {
			return r, fmt.Errorf("%s: %w", l.name, err)
		}
		a := Applier{Name: l.name, Seconds: round(took.Seconds(), 3), RowsPerSec: round(float64(total)/took.Seconds(), 0), PeakRSSBytes: rss}
		rs, err := compare.Tables(ctx, src, l.db, dbName, dbName, all)
		if err != nil {
			return r, fmt.Errorf("compare %s's target: %w", l.name, err)
		}
		a.TargetEqual = true
		for _, t := range rs {
			a.TargetEqual = a.TargetEqual && t.Equal()
		}
		say("  %s: %.2fs, %.0f rows/s, peak RSS %s, target %s", a.Name, a.Seconds, a.RowsPerSec, mib(a.PeakRSSBytes), equalWord(a.TargetEqual))
		r.Appliers = append(r.Appliers, a)
	}
	v := r.Appliers[0].RowsPerSec
	for _, a := range r.Appliers[1:] {
		if a.RowsPerSec > 0 {
			if r.Ratios == nil {
				r.Ratios = map[string]float64{}
			}
			r.Ratios[nameVplayerCopy+"/"+a.Name] = round(v/a.RowsPerSec, 2)
		}
	}
	for _, a := range r.Appliers {
		if !a.TargetEqual {
			return r, fmt.Errorf("%s: the target differs from the source", a.Name)
		}
	}
	return r, nil
}

// aloneLoad returns the target-alone loader (see nameAlone). It writes each table's rows on the source
// into a file of dir with SELECT ... INTO OUTFILE and reads their definitions, both untimed, now;
// the loader then creates each table on the target as the source defines it and loads its file
// with LOAD DATA INFILE in one transaction, as the copy does, every table in its own session at
// once and with unique_checks off, so that InnoDB loads the empty tables in bulk and sorts
// their keys. The servers are local: the target reads the files the source wrote.
func aloneLoad(ctx context.Context, src, db *sql.DB, dir string) func(context.Context, *mysqld.Server) (int64, error) {
	defs := make([]string, len(tables))
	files := make([]string, len(tables))
	prep := func() error {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for i, t := range tables {
			var name string
			if err := src.QueryRowContext(ctx, "SHOW CREATE TABLE "+sqlq.Ident(dbName)+"."+sqlq.Ident(t)).Scan(&name, &defs[i]); err != nil {
				return fmt.Errorf("read the definition of %s: %w", t, err)
			}
			files[i] = filepath.Join(dir, t+".txt")
			if _, err := src.ExecContext(ctx, "SELECT * FROM "+sqlq.Ident(dbName)+"."+sqlq.Ident(t)+" INTO OUTFILE "+sqlq.String(files[i])); err != nil {
				return fmt.Errorf("write the rows of %s into %s: %w", t, files[i], err)
			}
		}
		return nil
	}
	prepErr := prep()
	return func(ctx context.Context, _ *mysqld.Server) (int64, error) {
		if prepErr != nil {
			return 0, prepErr
		}
		if _, err := db.ExecContext(ctx, "CREATE DATABASE "+sqlq.Ident(dbName)); err != nil {
			return 0, err
		}
		g, gctx := errgroup.WithContext(ctx)
		for i := range tables {
			g.Go(func() error {
				conn, err := db.Conn(gctx)
				if err != nil {
					return err
				}
				defer conn.Close()
				for _, q := range []string{"USE " + sqlq.Ident(dbName), defs[i], "SET SESSION unique_checks = 0, foreign_key_checks = 0", "BEGIN",
					"LOAD DATA INFILE " + sqlq.String(files[i]) + " INTO TABLE " + sqlq.Ident(tables[i]), "COMMIT"} {
					if _, err := conn.ExecContext(gctx, q); err != nil {
						return fmt.Errorf("%s: %w", q, err)
					}
				}
				return nil
			})
		}
		return 0, g.Wait()
	}
}

// printCopy writes the copy mode's table.
func (r *Result) printCopy(w io.Writer) {
	fmt.Fprintf(w, "\nCOPY (%s, %d CPUs)\n%s\n", r.Server, r.CPUs, r.Settings.line())
	fmt.Fprintf(w, "%d tables x %d rows (%d rows), %s\n", r.Workload.Tables, r.Workload.RowsPerTable, r.Workload.Tables*r.Workload.RowsPerTable, r.Workload.Description)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "loader\tseconds\trows/s\tvplayer/this\tpeak RSS\ttarget\t")
	for _, a := range r.Appliers {
		ratio := "-"
		if v, ok := r.Ratios[nameVplayerCopy+"/"+a.Name]; ok {
			ratio = fmt.Sprintf("%.2fx", v)
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.0f\t%s\t%s\t%s\t\n", a.Name, a.Seconds, a.RowsPerSec, ratio, mib(a.PeakRSSBytes), equalWord(a.TargetEqual))
	}
	tw.Flush()
	times := map[string]float64{}
	for _, a := range r.Appliers {
		times[a.Name] = a.Seconds
	}
	v, dump, alone := times[nameVplayerCopy], times[nameDump], times[nameAlone]
	if v > 0 && dump > 0 && alone > 0 {
		fmt.Fprintf(w, "3x %s would be %.2f s; the target alone loads the rows from its own disk in %.2f s (%.2fx %s), and vplayer's copy, which also reads the source, in %.2f s\n",
			nameDump, dump/3, alone, dump/alone, nameDump, v)
	}
}

// lockedBuffer collects a process's stderr.
type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}
