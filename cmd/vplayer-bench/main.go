// Command vplayer-bench times vplayer against MariaDB's native replication on servers it starts
// on this machine (`make bench`); the benchmark itself is internal/bench. It is a binary of its
// own so that vplayer does not carry a server launcher: it times the real vplayer binary, run as
// a separate process, the one --vplayer names or one it builds from this tree.
//
//	go run ./cmd/vplayer-bench --apply-workers 1,2
package main

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

	"github.com/vplayer/vplayer/internal/bench"
)

// Exit codes, as vplayer's.
const (
	exitOK    = 0
	exitError = 1 // a failed run, a target unequal to its source included
	exitUsage = 2 // bad flags, reported before any server starts
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usageHead = `vplayer-bench times vplayer against MariaDB's native replication on local servers and writes
the results as JSON, one file per mode.

Usage:
  vplayer-bench [--mode M] [--apply-workers N,...] [--quick] [flags]

Modes (--mode):
`

// usage writes the help text: every mode, then every flag.
func usage(w io.Writer, fs *pflag.FlagSet) {
	fmt.Fprint(w, usageHead)
	for _, m := range bench.Modes() {
		fmt.Fprintf(w, "  %-8s %s\n", m.Name, m.About)
	}
	fmt.Fprintf(w, "\nFlags:\n%s", fs.FlagUsages())
}

// newFlags returns vplayer-bench's flags; --help writes the usage to stdout, errors go to stderr.
func newFlags(stdout, stderr io.Writer) (*pflag.FlagSet, *bench.Options) {
	o := &bench.Options{}
	fs := pflag.NewFlagSet("vplayer-bench", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.Usage = func() { usage(stdout, fs) }
	fs.StringVar(&o.Mode, "mode", bench.ModeAll, "what to measure: one of the modes above")
	fs.Var(workersFlag{&o.ApplyWorkers}, "apply-workers", "time one vplayer per entry, each on a target server of its own and run with --apply-workers N, e.g. 1,4 (default: one vplayer with its own default, no flag passed)")
	fs.IntVar(&o.Transactions, "transactions", 0, fmt.Sprintf("transactions in each backlog (default %d; %d with --quick)", bench.DefaultTransactions, bench.DefaultQuickTransactions))
	fs.IntVar(&o.RowsPerTable, "rows-per-table", 0, fmt.Sprintf("rows in each of the 4 tables before the backlog (default %d; %d with --quick; copy mode: %d, %d with --quick)", bench.DefaultRowsPerTable, bench.DefaultQuickRowsPerTable, bench.DefaultCopyRowsPerTable, bench.DefaultQuickCopyRowsPerTable))
	fs.IntVar(&o.Rate, "rate", bench.DefaultRate, "lag mode: source transactions per second")
	fs.DurationVar(&o.Duration, "duration", 0, fmt.Sprintf("lag and lagfull modes: how long the source writes while each applier is measured (default %v, lagfull %v; %v with --quick)", bench.DefaultDuration, bench.DefaultFullRateDuration, bench.DefaultQuickDuration))
	fs.IntVar(&o.Clients, "clients", bench.DefaultClients, "lagfull mode: sessions writing the source as fast as they can")
	fs.BoolVar(&o.Quick, "quick", false, "small backlogs and a short lag run: the whole benchmark in about a minute")
	fs.Var(commandFlag{&o.Vplayer}, "vplayer", "the vplayer binary to time (default: built from ./cmd/vplayer of the working directory's module, with $GO or go)")
	fs.StringVar(&o.ResultsDir, "results-dir", "bench/results", "directory for the JSON results, one file per mode (empty: none)")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "run vplayer's timed catch-ups in process under the CPU profiler and write the profiles here (the mode is added to the name); peak RSS is then not measured")
	fs.StringVar(&o.MemProfile, "memprofile", "", "with --cpuprofile: also write the allocation profile of each in-process catch-up here (and a .base to subtract)")
	fs.StringVar(&o.Trace, "trace", "", "with --cpuprofile: also write an execution trace of each in-process catch-up here")
	fs.StringVar(&o.BufferPool, "buffer-pool", bench.DefaultBufferPool, "innodb_buffer_pool_size of every server")
	fs.Var(commandFlag{&o.CompareVplayer}, "compare-vplayer", "catchup and insert modes: also time this vplayer binary, on a fifth server with the same settings, and report vplayer's throughput over its")
	fs.BoolVar(&o.CompareFirst, "compare-first", false, "with --compare-vplayer: time the comparison binary before this one")
	fs.BoolVar(&o.TargetBinlog, "target-binlog", false, "copy mode: run every target with its binary log on and synced at every commit, as a target with replicas of its own (myloader is then timed with --enable-binlog too)")
	return fs, o
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

// commandFlag is --vplayer and --compare-vplayer: a binary's path, kept as the command
// bench.Options runs.
type commandFlag struct{ cmd *[]string }

func (f commandFlag) String() string {
	if f.cmd == nil || len(*f.cmd) == 0 {
		return ""
	}
	return (*f.cmd)[0]
}

func (f commandFlag) Set(path string) error {
	if path == "" {
		return errors.New("empty path")
	}
	*f.cmd = []string{path}
	return nil
}

func (commandFlag) Type() string { return "path" }

// run runs vplayer-bench with args and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	fs, o := newFlags(stdout, stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		return usageFailed(stderr, err.Error())
	}
	if fs.NArg() > 0 {
		return usageFailed(stderr, "unexpected arguments: "+strings.Join(fs.Args(), " "))
	}
	if o.Rate == 0 {
		return usageFailed(stderr, "--rate is 0: it must be at least 1 transaction per second (--mode lagfull runs the source unpaced)")
	}
	if o.Clients == 0 {
		return usageFailed(stderr, "--clients is 0: it must be at least 1 session")
	}
	if err := o.Validate(); err != nil {
		return usageFailed(stderr, err.Error())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := bench.Run(ctx, stdout, *o); err != nil {
		fmt.Fprintf(stderr, "vplayer-bench: %v\n", err)
		return exitError
	}
	return exitOK
}

func usageFailed(stderr io.Writer, msg string) int {
	fmt.Fprintf(stderr, "vplayer-bench: %s\nRun 'vplayer-bench --help' for the modes and flags.\n", msg)
	return exitUsage
}
