package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/vplayer/vplayer/bench"
)

// newBenchFlags returns vplayer bench's flags, and where --vplayer goes (empty: this binary).
func newBenchFlags(stderr io.Writer) (*pflag.FlagSet, *bench.Options, *string) {
	o := &bench.Options{}
	vplayerPath := new(string)
	fs := pflag.NewFlagSet("vplayer bench", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.StringVar(&o.Mode, "mode", bench.ModeAll, "what to measure: catchup (OLTP write backlog), insert (insert-only backlog), hotrow (every transaction updates one of 10 rows), lag (p50/p99 lag at a fixed source rate), lagfull (p50/p99 lag with the source unpaced), all (those five), or copy (the copy phase on an empty target beside mariadb-dump | mariadb, mydumper/myloader and the target loading the rows from its own disk)")
	fs.Var(workersFlag{&o.ApplyWorkers}, "apply-workers", "time one vplayer per entry, each on a target server of its own and run with --apply-workers N, e.g. 1,4 (default: one vplayer with its own default, no flag passed)")
	fs.IntVar(&o.Transactions, "transactions", 0, fmt.Sprintf("transactions in each backlog (default %d; %d with --quick)", bench.DefaultTransactions, bench.DefaultQuickTransactions))
	fs.IntVar(&o.RowsPerTable, "rows-per-table", 0, fmt.Sprintf("rows in each of the 4 tables before the backlog (default %d; %d with --quick; copy mode: %d, %d with --quick)", bench.DefaultRowsPerTable, bench.DefaultQuickRowsPerTable, bench.DefaultCopyRowsPerTable, bench.DefaultQuickCopyRowsPerTable))
	fs.IntVar(&o.Rate, "rate", bench.DefaultRate, "lag mode: source transactions per second")
	fs.DurationVar(&o.Duration, "duration", 0, fmt.Sprintf("lag and lagfull modes: how long the source writes while each applier is measured (default %v, lagfull %v; %v with --quick)", bench.DefaultDuration, bench.DefaultFullRateDuration, bench.DefaultQuickDuration))
	fs.IntVar(&o.Clients, "clients", bench.DefaultClients, "lagfull mode: sessions writing the source as fast as they can")
	fs.BoolVar(&o.Quick, "quick", false, "small backlogs and a short lag run: the whole benchmark in about a minute")
	fs.StringVar(vplayerPath, "vplayer", "", "the vplayer binary to time (default: this binary)")
	fs.StringVar(&o.ResultsDir, "results-dir", "bench/results", "directory for the JSON results, one file per mode (empty: none)")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "run vplayer's timed catch-ups in process under the CPU profiler and write the profiles here (the mode is added to the name); peak RSS is then not measured")
	fs.StringVar(&o.MemProfile, "memprofile", "", "with --cpuprofile: also write the allocation profile of each in-process catch-up here (and a .base to subtract)")
	fs.StringVar(&o.Trace, "trace", "", "with --cpuprofile: also write an execution trace of each in-process catch-up here")
	fs.StringVar(&o.BufferPool, "buffer-pool", bench.DefaultBufferPool, "innodb_buffer_pool_size of every server")
	fs.Var(compareFlag{&o.CompareVplayer}, "compare-vplayer", "catchup and insert modes: also time this vplayer binary, on a fifth server with the same settings, and report vplayer's throughput over its")
	fs.BoolVar(&o.CompareFirst, "compare-first", false, "with --compare-vplayer: time the comparison binary before this one")
	fs.BoolVar(&o.TargetBinlog, "target-binlog", false, "copy mode: run every target with its binary log on and synced at every commit, as a target with replicas of its own (myloader is then timed with --enable-binlog too)")
	return fs, o, vplayerPath
}

// workersFlag is --apply-workers: a comma-separated list of worker counts.
type workersFlag struct{ ns *[]int }

func (f workersFlag) String() string {
	if f.ns == nil {
		return ""
	}
	var parts []string
	for _, n := range *f.ns {
		parts = append(parts, strconv.Itoa(n))
	}
	return strings.Join(parts, ",")
}

func (f workersFlag) Set(s string) error {
	ns, err := bench.ParseApplyWorkers(s)
	if err != nil {
		return err
	}
	*f.ns = ns
	return nil
}

func (workersFlag) Type() string { return "list" }

// compareFlag is --compare-vplayer: a path, kept as the command bench.Options.CompareVplayer
// runs.
type compareFlag struct{ cmd *[]string }

func (f compareFlag) String() string {
	if f.cmd == nil || len(*f.cmd) == 0 {
		return ""
	}
	return (*f.cmd)[0]
}

func (f compareFlag) Set(path string) error {
	if path == "" {
		return errors.New("empty path")
	}
	*f.cmd = []string{path}
	return nil
}

func (compareFlag) Type() string { return "path" }

// benchCmd runs `vplayer bench`: servers it starts itself, vplayer run as a separate process
// (this binary), timed against native replication.
func benchCmd(args []string, stdout, stderr io.Writer) error {
	fs, o, vplayerPath := newBenchFlags(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return errHelp
		}
		return usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if o.Rate == 0 {
		return usagef("--rate is 0: it must be at least 1 transaction per second (--mode lagfull runs the source unpaced)")
	}
	if o.Clients == 0 {
		return usagef("--clients is 0: it must be at least 1 session")
	}
	exe := *vplayerPath
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("find this binary, to run it as vplayer: %w", err)
		}
	}
	o.Vplayer = []string{exe}
	if err := o.Validate(); err != nil {
		return usagef("%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err := bench.Run(ctx, stdout, *o)
	return err
}
