// Package bench is the benchmark that cmd/vplayer-bench runs (`make bench`): it times vplayer
// against MariaDB's native replication on the same backlog, with the same durability, on the same
// machine. vplayer runs as the real binary, a separate process: the one Options.Vplayer names, or
// one Run builds from the working directory's module.
//
// One run starts four servers: a source, a vplayer target, and two native replicas, one
// single-threaded and one with four optimistic parallel threads; with Options.ApplyWorkers, one
// vplayer target per worker count instead, each timed as a row of its own ("vplayer (4
// workers)"). Every target runs with the same settings, what an operator who tuned nothing
// runs: MariaDB's defaults (the redo log flushed at every commit, no binary log, a 96M redo log)
// but a buffer pool that holds the tables; the source adds its binary log (row format, full
// metadata, synced at every commit). See sourceOptions. With Options.CompareVplayer one more
// server, the target of a second vplayer build, is timed beside the first in the catch-up modes.
// The initial tables are loaded on the source and replicated to every target before anything is
// timed; then every applier is stopped, a backlog is written to the source, and each applier
// catches it up in turn, never two at once, so that they do not compete for the two CPUs of a
// small machine. Each target is then compared with the source, row by row.
//
// Modes:
//   - catchup: a backlog of 200,000 OLTP write transactions (the statements of sysbench's
//     oltp_write_only: an update by key of an indexed column, an update by key of a non-indexed
//     column, a delete by key and the re-insert of that key; four row changes per transaction)
//     over four tables;
//   - insert: a backlog of 200,000 single-row INSERTs, each its own transaction (sysbench's
//     oltp_insert);
//   - hotrow: a backlog of 200,000 single-row UPDATEs (sysbench's oltp_update_non_index), each
//     of one of 10 rows of one table: every transaction conflicts with many of its neighbours,
//     so parallel apply can only lose here (the report shows N workers over 1);
//   - lag: the source held at a fixed transaction rate while each applier runs live, in turn;
//     the delay with which a timestamp written on the source every 100ms becomes visible on the
//     target gives p50 and p99 lag (see lag.go for the method);
//   - lagfull: the same, but the source writes the mix as fast as Options.Clients (8) sessions
//     can, unpaced, for 60s per applier;
//   - copy (not part of all): an empty target brought to the source's four tables by vplayer's
//     copy phase, by mariadb-dump | mariadb and, where installed, by mydumper/myloader, each on
//     a server of its own with the same durable settings (see copy.go).
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// Modes, as --mode names them.
const (
	ModeCatchup = "catchup"
	ModeInsert  = "insert"
	ModeLag     = "lag"
	ModeHotrow  = "hotrow"
	ModeLagFull = "lagfull"
	ModeAll     = "all"
)

// Mode is one value of --mode and what it measures, for help texts.
type Mode struct {
	Name  string
	About string
}

// Modes returns every mode Options.Mode accepts, in the order a help text lists them.
func Modes() []Mode {
	return []Mode{
		{ModeCatchup, "a backlog of OLTP write transactions (sysbench oltp_write_only's statements)"},
		{ModeInsert, "a backlog of single-row INSERTs, each its own transaction"},
		{ModeHotrow, "a backlog in which every transaction updates one of 10 rows"},
		{ModeLag, "p50/p99 lag with the source at a fixed rate (--rate)"},
		{ModeLagFull, "p50/p99 lag with the source unpaced (--clients sessions)"},
		{ModeAll, "those five, on the same servers (the default)"},
		{ModeCopy, "the copy phase on an empty target beside mariadb-dump | mariadb, mydumper/myloader and the target loading the rows from its own disk"},
	}
}

// Defaults of a full run and of a quick one (--quick: small enough for `make test`).
const (
	// DefaultTransactions is the size of every catch-up backlog.
	DefaultTransactions = 200_000
	DefaultRowsPerTable = 100_000
	DefaultRate         = 1000
	// DefaultDuration is how long the source writes per applier in the lag mode,
	// DefaultFullRateDuration in the lagfull mode.
	DefaultDuration         = 30 * time.Second
	DefaultFullRateDuration = 60 * time.Second
	// DefaultClients is how many sessions write the source in the lagfull mode.
	DefaultClients           = 8
	DefaultQuickTransactions = 2000
	DefaultQuickRowsPerTable = 2000
	DefaultQuickDuration     = 3 * time.Second
	// DefaultBufferPool is every server's innodb_buffer_pool_size: the four tables of a full run
	// (about 100 MB) fit in it, as a production working set would.
	DefaultBufferPool = "256M"
)

// Options shape a run. Zero values take the defaults above (the quick ones when Quick is set).
type Options struct {
	// Mode is ModeCatchup, ModeInsert, ModeHotrow, ModeLag, ModeLagFull, ModeAll (the default:
	// those five) or ModeCopy.
	Mode string
	// Transactions is the size of each backlog (catchup, insert and hotrow modes), in source
	// transactions; 0 takes DefaultTransactions.
	Transactions int
	// RowsPerTable is how many rows each of the four tables holds before the backlog.
	RowsPerTable int
	// Rate is the source's rate in the lag mode, in transactions per second.
	Rate int
	// Duration is how long the source writes while each applier is measured (lag and lagfull
	// modes); 0 takes DefaultDuration (lagfull: DefaultFullRateDuration).
	Duration time.Duration
	// Clients is how many sessions write the source, unpaced, in the lagfull mode (default
	// DefaultClients).
	Clients int
	// ApplyWorkers lists the vplayer worker counts to time, each on a target server of its own
	// and passed to `vplayer run` as --apply-workers; empty runs one vplayer with the binary's
	// default and passes no flag. No two entries are the same.
	ApplyWorkers []int
	// Quick selects the small defaults and names the result files <mode>-quick.json.
	Quick bool
	// ResultsDir receives one JSON file per mode; empty writes none.
	ResultsDir string
	// Vplayer is the command that runs the vplayer binary: its path and any leading arguments;
	// "run" and its flags are appended. Empty: Run builds cmd/vplayer of the working directory's
	// module into a temporary directory first (see BuildVplayer) and times that binary.
	Vplayer []string
	// Env is added to the environment of the vplayer process.
	Env []string
	// CPUProfile, when set, runs vplayer's timed catch-ups in this process, under the CPU
	// profiler, instead of as a separate process, and writes the profile of each mode to
	// CPUProfile with the mode's name inserted before the extension. Peak RSS is then not
	// measured (the process also holds the benchmark).
	CPUProfile string
	// MemProfile, with CPUProfile, also writes the allocation profile of each in-process
	// catch-up (the mode is added to the name), and beside it a .base file to subtract.
	MemProfile string
	// Trace, with CPUProfile, also writes an execution trace of each in-process catch-up (the
	// mode is added to the name), for `go tool trace -pprof=net` (where the applier waits on the
	// target) and -pprof=sync (where the pipeline waits on itself).
	Trace string
	// BufferPool is every server's innodb_buffer_pool_size (default DefaultBufferPool).
	BufferPool string
	// CompareVplayer, when set, is a second vplayer build (its path and any leading arguments,
	// like Vplayer) timed side by side with Vplayer in the catch-up modes: one more server with
	// the same settings is its target, loaded like vplayer's; the build catches up the same
	// backlog, in turn with the other appliers, and its target is compared with the source like
	// theirs. It runs without --apply-workers (it may predate the flag), with its own default.
	CompareVplayer []string
	// CompareFirst times the comparison build before Vplayer instead of after it.
	CompareFirst bool
	// TargetBinlog runs the copy mode's targets with a binary log synced at every commit, as a
	// target with replicas of its own has; myloader is then timed with --enable-binlog too.
	TargetBinlog bool
}

// Validate reports the first invalid setting, before anything starts.
func (o Options) Validate() error {
	if o.Mode != "" && !slices.ContainsFunc(Modes(), func(m Mode) bool { return m.Name == o.Mode }) {
		return fmt.Errorf("--mode is %q: want catchup, insert, hotrow, lag, lagfull, all or copy", o.Mode)
	}
	if o.Transactions < 0 {
		return fmt.Errorf("--transactions is %d: it must not be negative", o.Transactions)
	}
	if o.RowsPerTable < 0 {
		return fmt.Errorf("--rows-per-table is %d: it must not be negative", o.RowsPerTable)
	}
	if o.Rate < 0 {
		return fmt.Errorf("--rate is %d: it must not be negative", o.Rate)
	}
	if o.Duration < 0 {
		return fmt.Errorf("--duration is %v: it must not be negative", o.Duration)
	}
	if o.Clients < 0 {
		return fmt.Errorf("--clients is %d: it must not be negative", o.Clients)
	}
	if err := checkWorkers(o.ApplyWorkers); err != nil {
		return err
	}
	if len(o.ApplyWorkers) > 0 && o.Mode == ModeCopy {
		return errors.New("--apply-workers is for the catch-up and lag modes: the copy mode times one vplayer")
	}
	if len(o.ApplyWorkers) > 1 && len(o.CompareVplayer) > 0 {
		return errors.New("--compare-vplayer compares one build with one other: give at most one --apply-workers entry with it")
	}
	if len(o.ApplyWorkers) > 1 && o.CPUProfile != "" {
		return errors.New("--cpuprofile profiles one vplayer, run in process: give at most one --apply-workers entry with it")
	}
	if (o.Trace != "" || o.MemProfile != "") && o.CPUProfile == "" {
		return errors.New("--trace and --memprofile need --cpuprofile: only an in-process catch-up is profiled")
	}
	if len(o.Vplayer) > 0 && o.Vplayer[0] == "" {
		return errors.New("--vplayer is empty: give the path of the vplayer binary to time")
	}
	if len(o.CompareVplayer) > 0 && o.CompareVplayer[0] == "" {
		return errors.New("--compare-vplayer is empty: give the path of the vplayer binary to compare with")
	}
	if len(o.CompareVplayer) > 0 && (o.Mode == ModeCopy || o.Mode == ModeLag || o.Mode == ModeLagFull) {
		return errors.New("--compare-vplayer times catch-ups only: use it with --mode catchup, insert, hotrow or all")
	}
	if o.TargetBinlog && o.Mode != ModeCopy {
		return errors.New("--target-binlog is for --mode copy: the other modes' targets run without a binary log, as stock replicas do")
	}
	if o.CompareFirst && len(o.CompareVplayer) == 0 {
		return errors.New("--compare-first needs --compare-vplayer: there is no comparison build to time first")
	}
	return nil
}

// withDefaults fills the zero values.
func (o Options) withDefaults() Options {
	if o.Mode == "" {
		o.Mode = ModeAll
	}
	if o.RowsPerTable == 0 {
		o.RowsPerTable = pick(o.Quick, DefaultQuickRowsPerTable, DefaultRowsPerTable)
	}
	if o.Rate == 0 {
		o.Rate = DefaultRate
	}
	if o.Clients == 0 {
		o.Clients = DefaultClients
	}
	if o.BufferPool == "" {
		o.BufferPool = DefaultBufferPool
	}
	return o
}

func pick[T any](quick bool, q, full T) T {
	if quick {
		return q
	}
	return full
}

// transactionsOf is the size of mode's backlog: Transactions, else the mode's default.
func (o Options) transactionsOf(mode string) int {
	switch {
	case o.Transactions > 0:
		return o.Transactions
	case o.Quick:
		return DefaultQuickTransactions
	}
	return DefaultTransactions
}

// durationOf is how long the source writes per applier in a lag mode: Duration, else the mode's
// default.
func (o Options) durationOf(mode string) time.Duration {
	switch {
	case o.Duration > 0:
		return o.Duration
	case o.Quick:
		return DefaultQuickDuration
	case mode == ModeLagFull:
		return DefaultFullRateDuration
	}
	return DefaultDuration
}

// modes returns the modes a run performs, in order.
func (o Options) modes() []string {
	if o.Mode == ModeAll {
		return []string{ModeCatchup, ModeInsert, ModeHotrow, ModeLag, ModeLagFull}
	}
	return []string{o.Mode}
}

// Run runs the benchmark, printing progress and one table per mode to w, and returns the
// results. It returns an error when anything fails, including a target that does not equal the
// source; the results of the modes completed so far are returned with it.
func Run(ctx context.Context, w io.Writer, o Options) ([]*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if len(o.Vplayer) == 0 {
		dir, err := os.MkdirTemp("", "vplayer-bench-build-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		path, err := BuildVplayer(ctx, dir)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "built vplayer from this tree: %s\n", path)
		o.Vplayer = []string{path}
	}
	rows := o.RowsPerTable
	o = o.withDefaults()
	if o.Mode == ModeCopy {
		o.RowsPerTable = rows // the copy mode has defaults of its own
		r, err := runCopy(ctx, w, o)
		if r == nil {
			return nil, err
		}
		r.printCopy(w)
		if o.ResultsDir != "" {
			path, werr := r.write(o.ResultsDir)
			if werr != nil {
				return []*Result{r}, werr
			}
			fmt.Fprintf(w, "wrote %s\n", path)
		}
		return []*Result{r}, err
	}
	c, err := startCluster(ctx, w, o)
	if err != nil {
		return nil, err
	}
	defer c.close()
	if err := c.load(ctx); err != nil {
		return nil, err
	}
	var results []*Result
	for _, m := range o.modes() {
		var r *Result
		switch m {
		case ModeCatchup:
			r, err = c.catchup(ctx, oltpBacklog)
		case ModeInsert:
			r, err = c.catchup(ctx, insertBacklog)
		case ModeHotrow:
			r, err = c.catchup(ctx, hotrowBacklog)
		case ModeLag, ModeLagFull:
			r, err = c.lag(ctx, m)
		}
		if r != nil {
			r.print(w)
			results = append(results, r)
			if o.ResultsDir != "" {
				path, werr := r.write(o.ResultsDir)
				if werr != nil {
					return results, werr
				}
				fmt.Fprintf(w, "wrote %s\n", path)
			}
		}
		if err != nil {
			return results, err
		}
	}
	return results, nil
}
