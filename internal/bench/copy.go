package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/vplayer/vplayer/internal/compare"
	"github.com/vplayer/vplayer/internal/mysqld"
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
	cr := &copyRun{w: w, o: o, tmp: tmp, withMydumper: mydumperInstalled()}
	defer cr.close()
	if err := cr.start(ctx); err != nil {
		return nil, err
	}
	srcPos, err := cr.load(ctx, rows)
	if err != nil {
		return nil, err
	}
	loaders := cr.loaders(ctx, srcPos)
	targets := map[string]*sql.DB{}
	for _, l := range loaders {
		targets[l.name] = l.db
	}
	settings, err := settingsOf(ctx, cr.src(), targets)
	if err != nil {
		return nil, err
	}
	r := &Result{
		Mode: ModeCopy, Quick: o.Quick, Time: time.Now().UTC().Truncate(time.Second), Server: cr.servers[0].Version(), CPUs: runtime.NumCPU(),
		Settings: settings.withTiming("loaders run one at a time on empty targets, never two at once; each from its start until the target holds the source's rows (vplayer: until its record is Running, at the source's position, polled every 10ms)"),
		Workload: Workload{Description: "sysbench-shaped tables (id, k, c char(120), pad char(60)), the source idle", Generator: "bench",
			Tables: len(tables), RowsPerTable: rows},
	}
	total := int64(rows) * int64(len(tables))
	for _, l := range loaders {
		a, err := cr.time(ctx, l, total)
		if err != nil {
			return r, err
		}
		r.Appliers = append(r.Appliers, a)
	}
	r.Ratios = copyRatios(r.Appliers)
	for _, a := range r.Appliers {
		if !a.TargetEqual {
			return r, fmt.Errorf("%s: the target differs from the source", a.Name)
		}
	}
	return r, nil
}

// copyRun is the copy mode's servers and their pools: the source first, then one empty target
// per loader.
type copyRun struct {
	w   io.Writer
	o   Options
	tmp string // the loaders' files
	// withMydumper says that mydumper and myloader are installed, and so timed.
	withMydumper bool
	servers      []*mysqld.Server
	dbs          []*sql.DB
}

// mydumperInstalled reports whether mydumper and myloader are on the PATH.
func mydumperInstalled() bool {
	_, mydumperErr := exec.LookPath("mydumper")
	_, myloaderErr := exec.LookPath("myloader")
	return mydumperErr == nil && myloaderErr == nil
}

func (cr *copyRun) say(format string, args ...any) { fmt.Fprintf(cr.w, format+"\n", args...) }

// src is the source's pool.
func (cr *copyRun) src() *sql.DB { return cr.dbs[0] }

// serverNames names the servers to start: the source, then a target per loader, in the order
// of loaders; the target alone's is last.
func (cr *copyRun) serverNames() []string {
	names := []string{"bench-source", "bench-vplayer", "bench-dump"}
	if cr.withMydumper {
		names = append(names, "bench-mydumper")
		if cr.o.TargetBinlog {
			names = append(names, "bench-mydumperb")
		}
	}
	return append(names, "bench-alone")
}

// start starts the servers at once, each target with copyTargetOptions, and opens their pools.
func (cr *copyRun) start(ctx context.Context) error {
	o := cr.o
	bin, err := mysqld.Find()
	if err != nil {
		return err
	}
	names := cr.serverNames()
	if o.TargetBinlog {
		cr.say("Starting %d servers from %s: source and one empty target per loader, every target with the same settings, its binary log on and synced at every commit", len(names), bin)
	} else {
		cr.say("Starting %d servers from %s: source and one empty target per loader, every target with the same settings (stock: no binary log)", len(names), bin)
	}
	if !cr.withMydumper {
		cr.say("  mydumper/myloader not installed (apt-get install mydumper): timed without them")
	}
	cr.servers = make([]*mysqld.Server, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		opts := sourceOptions(n, uint32(i+1), o.BufferPool)
		if i > 0 {
			opts = copyTargetOptions(n, uint32(i+1), o.BufferPool, o.TargetBinlog)
		}
		wg.Go(func() { cr.servers[i], errs[i] = mysqld.Start(ctx, opts) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("start servers: %w", err)
	}
	cr.dbs = make([]*sql.DB, len(cr.servers))
	for i, s := range cr.servers {
		if cr.dbs[i], err = open(s); err != nil {
			return err
		}
	}
	return nil
}

// close closes the pools and stops the servers.
func (cr *copyRun) close() {
	for _, db := range cr.dbs {
		if db != nil {
			db.Close()
		}
	}
	for _, s := range cr.servers {
		if s != nil {
			s.Stop()
		}
	}
}

// load creates and fills the tables on the source, untimed, and returns the source's position.
func (cr *copyRun) load(ctx context.Context, rows int) (srcPos string, err error) {
	began := time.Now()
	cr.say("Loading %d tables of %d rows on the source (untimed)...", len(tables), rows)
	if err := createSchema(ctx, cr.src()); err != nil {
		return "", err
	}
	if err := loadTables(ctx, cr.src(), rows); err != nil {
		return "", err
	}
	cr.say("  loaded in %.1fs", time.Since(began).Seconds())
	return cr.servers[0].GTIDPos(ctx)
}

// time times loader l, once the servers are quiet, and compares its target with the source;
// total is the number of rows it copies.
func (cr *copyRun) time(ctx context.Context, l copyLoader, total int64) (Applier, error) {
	if err := quiesce(ctx, cr.say, cr.dbs); err != nil {
		return Applier{}, err
	}
	cr.say("Timing %s...", l.name)
	start := time.Now()
	rss, err := l.run(ctx, l.server)
	took := time.Since(start)
	if err != nil {
		return Applier{}, fmt.Errorf("%s: %w", l.name, err)
	}
	a := Applier{Name: l.name, Seconds: round(took.Seconds(), 3), RowsPerSec: round(float64(total)/took.Seconds(), 0), PeakRSSBytes: rss}
	rs, err := compare.Tables(ctx, cr.src(), l.db, dbName, dbName, append([]string{}, tables...))
	if err != nil {
		return Applier{}, fmt.Errorf("compare %s's target: %w", l.name, err)
	}
	a.TargetEqual = true
	for _, t := range rs {
		a.TargetEqual = a.TargetEqual && t.Equal()
	}
	cr.say("  %s: %.2fs, %.0f rows/s, peak RSS %s, target %s", a.Name, a.Seconds, a.RowsPerSec, mib(a.PeakRSSBytes), equalWord(a.TargetEqual))
	return a, nil
}

// copyRatios are vplayer's copy rate (the first of appliers) over each other loader's, by
// "vplayer copy/<loader>"; nil when no other loader copied anything.
func copyRatios(appliers []Applier) map[string]float64 {
	var ratios map[string]float64
	v := appliers[0].RowsPerSec
	for _, a := range appliers[1:] {
		if a.RowsPerSec > 0 {
			if ratios == nil {
				ratios = map[string]float64{}
			}
			ratios[nameVplayerCopy+"/"+a.Name] = round(v/a.RowsPerSec, 2)
		}
	}
	return ratios
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
