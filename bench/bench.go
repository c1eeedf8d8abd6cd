// Package bench runs `vplayer bench`: it times vplayer against MariaDB's native replication on
// the same backlog, with the same durability, on the same machine.
//
// One run starts four servers: a source, a vplayer target, and two native replicas, one
// single-threaded and one with four optimistic parallel threads. Every target runs with the same
// settings, what an operator who tuned nothing runs: MariaDB's defaults (the redo log flushed at
// every commit, no binary log, a 96M redo log) but a buffer pool that holds the tables; the source
// adds its binary log (row format, full metadata, synced at every commit). See sourceOptions. With Options.CompareVplayer a fifth, the target of a second vplayer build, is timed
// beside the first in the catchup and insert modes (the lag mode only keeps it caught up). The initial tables are loaded on the source and replicated to every target before
// anything is timed; then every applier is stopped, a backlog is written to the source, and each
// applier catches it up in turn, never two at once, so that they do not compete for the two CPUs
// of a small machine. Each target is then compared with the source, row by row.
//
// Modes:
//   - catchup: a backlog of OLTP write transactions (the statements of sysbench's
//     oltp_write_only: an update by key of an indexed column, an update by key of a non-indexed
//     column, a delete by key and the re-insert of that key; four row changes per transaction)
//     over four tables;
//   - insert: a backlog of inserts only, single-row transactions and multi-row ones;
//   - lag: the source held at a fixed transaction rate while each applier runs live, in turn;
//     the delay with which a timestamp written on the source every 100ms becomes visible on the
//     target gives p50 and p99 lag (see lag.go for the method);
//   - copy (not part of all): an empty target brought to the source's four tables by vplayer's
//     copy phase, by mariadb-dump | mariadb and, where installed, by mydumper/myloader, each on
//     a server of its own with the same durable settings (see copy.go).
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Modes, as --mode names them.
const (
	ModeCatchup = "catchup"
	ModeInsert  = "insert"
	ModeLag     = "lag"
	ModeAll     = "all"
)

// Defaults of a full run and of a quick one (--quick: small enough for `make test`).
const (
	DefaultTransactions      = 100_000
	DefaultRowsPerTable      = 100_000
	DefaultRate              = 1000
	DefaultDuration          = 30 * time.Second
	DefaultQuickTransactions = 2000
	DefaultQuickRowsPerTable = 2000
	DefaultQuickDuration     = 3 * time.Second
	// DefaultBufferPool is every server's innodb_buffer_pool_size: the four tables of a full run
	// (about 100 MB) fit in it, as a production working set would.
	DefaultBufferPool = "256M"
)

// Options shape a run. Zero values take the defaults above (the quick ones when Quick is set).
type Options struct {
	// Mode is ModeCatchup, ModeInsert, ModeLag or ModeAll (the default).
	Mode string
	// Transactions is the size of each backlog (catchup and insert modes), in source
	// transactions.
	Transactions int
	// RowsPerTable is how many rows each of the four tables holds before the backlog.
	RowsPerTable int
	// Rate is the source's rate in the lag mode, in transactions per second.
	Rate int
	// Duration is how long the source writes at Rate while each applier is measured (lag mode).
	Duration time.Duration
	// Quick selects the small defaults and names the result files <mode>-quick.json.
	Quick bool
	// ResultsDir receives one JSON file per mode; empty writes none.
	ResultsDir string
	// Vplayer is the command that runs the vplayer binary: its path and any leading arguments;
	// "run" and its flags are appended. Required.
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
	// like Vplayer) timed side by side with Vplayer in the catchup and insert modes: a fifth
	// server with the same settings is its target, loaded like vplayer's; the build catches up
	// the same backlog, in turn with the other appliers, and its target is compared with the
	// source like theirs.
	CompareVplayer []string
	// CompareFirst times the comparison build before Vplayer instead of after it.
	CompareFirst bool
	// TargetBinlog runs the copy mode's targets with a binary log synced at every commit, as a
	// target with replicas of its own has; myloader is then timed with --enable-binlog too.
	TargetBinlog bool
}

// Validate reports the first invalid setting, before anything starts.
func (o Options) Validate() error {
	switch o.Mode {
	case "", ModeCatchup, ModeInsert, ModeLag, ModeAll, ModeCopy:
	default:
		return fmt.Errorf("--mode is %q: want catchup, insert, lag, all or copy", o.Mode)
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
	if (o.Trace != "" || o.MemProfile != "") && o.CPUProfile == "" {
		return errors.New("--trace and --memprofile need --cpuprofile: only an in-process catch-up is profiled")
	}
	if len(o.Vplayer) == 0 || o.Vplayer[0] == "" {
		return errors.New("no vplayer binary to run")
	}
	if len(o.CompareVplayer) > 0 && o.CompareVplayer[0] == "" {
		return errors.New("--compare-vplayer is empty: give the path of the vplayer binary to compare with")
	}
	if len(o.CompareVplayer) > 0 && o.Mode == ModeCopy {
		return errors.New("--compare-vplayer times catch-ups only: use it with --mode catchup, insert or all")
	}
	if len(o.CompareVplayer) > 0 && o.Mode == ModeLag {
		return errors.New("--compare-vplayer times catch-ups only: use it with --mode catchup, insert or all")
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
	if o.Transactions == 0 {
		o.Transactions = pick(o.Quick, DefaultQuickTransactions, DefaultTransactions)
	}
	if o.RowsPerTable == 0 {
		o.RowsPerTable = pick(o.Quick, DefaultQuickRowsPerTable, DefaultRowsPerTable)
	}
	if o.Rate == 0 {
		o.Rate = DefaultRate
	}
	if o.Duration == 0 {
		o.Duration = pick(o.Quick, DefaultQuickDuration, DefaultDuration)
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

// modes returns the modes a run performs, in order.
func (o Options) modes() []string {
	if o.Mode == ModeAll {
		return []string{ModeCatchup, ModeInsert, ModeLag}
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
		case ModeLag:
			r, err = c.lag(ctx)
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
