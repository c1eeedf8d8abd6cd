package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/stream"
	"github.com/vplayer/vplayer/vdiff"
	"github.com/vplayer/vplayer/workflow"
)

// errDiffers means vplayer diff found differences: exit code 1, the report already printed.
var errDiffers = errors.New("differences found")

// diffFlags are vplayer diff's settings.
type diffFlags struct {
	workflow, source, target, sidecar, logFormat string
	logLevel                                     string
	tables                                       []string
	chunkSize, maxKeys                           int
	waitTimeout                                  time.Duration
	sourceTLS, targetTLS                         tlsFlags
}

func newDiffFlags(stderr io.Writer) (*pflag.FlagSet, *diffFlags) {
	f := &diffFlags{}
	fs := pflag.NewFlagSet("vplayer diff", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.StringVar(&f.workflow, "workflow", "", "workflow to compare (required)")
	fs.StringVar(&f.source, "source", "", "source DSN, user:pass@tcp(host:port)/ (required); VPLAYER_SOURCE_PASSWORD overrides the password")
	fs.StringVar(&f.target, "target", "", "target DSN, user:pass@tcp(host:port)/ (required); VPLAYER_TARGET_PASSWORD overrides the password")
	fs.StringSliceVar(&f.tables, "tables", nil, "compare only these of the workflow's tables: names and /regex/ entries, comma-separated (default: all)")
	fs.StringVar(&f.sidecar, "sidecar-db", "_vt", "target database holding the vreplication record tables")
	fs.IntVar(&f.chunkSize, "chunk-size", 1000, "rows per checksummed chunk, in key order; only chunks whose checksums differ are compared row by row")
	fs.IntVar(&f.maxKeys, "max-keys", 10, "keys listed per table for each kind of difference")
	fs.DurationVar(&f.waitTimeout, "wait-timeout", 5*time.Minute, "how long to wait for the workflow to pause, or to reach the source snapshot")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format of the progress lines on stderr: text or json")
	fs.StringVar(&f.logLevel, "log-level", "info", "lowest level logged: debug, info, warn or error")
	f.sourceTLS.register(fs, "source")
	f.targetTLS.register(fs, "target")
	return fs, f
}

func (f *diffFlags) validate() error {
	if f.workflow == "" {
		return usagef("--workflow is required: name the workflow to compare, e.g. --workflow orders")
	}
	if f.chunkSize < 1 {
		return usagef("--chunk-size is %d: it must be at least 1", f.chunkSize)
	}
	if f.maxKeys < 1 {
		return usagef("--max-keys is %d: it must be at least 1", f.maxKeys)
	}
	if f.waitTimeout <= 0 {
		return usagef("--wait-timeout is %v: it must be above 0", f.waitTimeout)
	}
	if err := validateLog(f.logFormat, f.logLevel); err != nil {
		return err
	}
	if _, err := binlog.NewFilter("db", f.tables); err != nil {
		return usagef("%v", err)
	}
	return nil
}

// diffCmd compares a workflow's source and target at one consistent position: exit 0 when equal,
// 1 when not (or on an error), 2 for bad usage.
func diffCmd(args []string, stdout, stderr io.Writer) error {
	fs, f := newDiffFlags(stderr)
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if err := f.validate(); err != nil {
		return err
	}
	src, err := parseDSN("source", f.source, "VPLAYER_SOURCE_PASSWORD")
	if err != nil {
		return err
	}
	tgt, err := parseDSN("target", f.target, "VPLAYER_TARGET_PASSWORD")
	if err != nil {
		return err
	}
	if err := configureBothTLS(fs, &f.sourceTLS, &f.targetTLS, src, tgt); err != nil {
		return err
	}

	logger, flushLog := newLogger(f.logFormat, f.logLevel, stderr, f.workflow)
	defer flushLog()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srcPool, err := src.pool()
	if err != nil {
		return usagef("--source: %v", err)
	}
	defer srcPool.Close()
	tgtPool, err := tgt.pool()
	if err != nil {
		return usagef("--target: %v", err)
	}
	defer tgtPool.Close()

	rep, err := vdiff.Run(ctx, vdiff.Config{
		Workflow:    f.workflow,
		Store:       workflow.New(tgtPool, f.sidecar),
		Source:      srcPool,
		Target:      tgtPool,
		Tables:      f.tables,
		Options:     vdiff.Options{ChunkSize: f.chunkSize, MaxKeys: f.maxKeys},
		WaitTimeout: f.waitTimeout,
		CatchUp: func(ctx context.Context, rec workflow.Record, pos string) error {
			return catchUp(ctx, rec, pos, src, srcPool, tgtPool, f.sidecar, logger)
		},
		Logger: logger,
	})
	if err != nil {
		return err
	}
	printReport(stdout, rep)
	if !rep.Equal() {
		return fmt.Errorf("%w: workflow %s: %d of %d tables differ", errDiffers, rep.Workflow, rep.Differing(), len(rep.Tables))
	}
	return nil
}

// catchUp runs workflow rec in this process up to and including pos (stream.CatchUp) with the
// --source credentials.
func catchUp(ctx context.Context, rec workflow.Record, pos string, src *endpoint, srcPool, tgtPool *sql.DB, sidecar string, log *slog.Logger) error {
	binlogTLS, err := src.binlogTLS(ctx, srcPool, log)
	if err != nil {
		return err
	}
	source := stream.Source{Host: src.host, Port: src.port, User: src.cfg.User, Password: src.cfg.Passwd, TLS: binlogTLS, Pool: srcPool}
	return stream.CatchUp(ctx, rec, pos, source, tgtPool, sidecar, log)
}

// printReport writes the diff's outcome: one line per table (with, for tables whose columns
// differ by trailing ones, which columns were compared), then the first keys of each difference.
func printReport(w io.Writer, r *vdiff.Report) {
	how := "the running vplayer paused there"
	if !r.Paused {
		how = "no vplayer was running: applied up to it here"
	}
	fmt.Fprintf(w, "workflow %s: %s -> %s at source position %s (%s)\n", r.Workflow, r.SourceDB, r.TargetDB, r.Pos, how)
	for _, t := range r.Tables {
		note := t.ColumnsNote()
		if note != "" {
			note = " (" + note + ")"
		}
		switch {
		case t.Problem != "":
			fmt.Fprintf(w, "%s: DIFFERENT: %s\n", t.Table, t.Problem)
			continue
		case t.Equal():
			fmt.Fprintf(w, "%s: %d rows compared: equal%s\n", t.Table, t.Compared, note)
		default:
			fmt.Fprintf(w, "%s: %d rows compared: DIFFERENT: %d missing on the target, %d extra on the target, %d differing%s\n",
				t.Table, t.Compared, t.Missing, t.Extra, t.Differing, note)
		}
		for _, k := range []struct {
			what string
			n    int64
			keys []string
		}{{"missing on the target", t.Missing, t.MissingKeys}, {"extra on the target", t.Extra, t.ExtraKeys}, {"differing", t.Differing, t.DifferingKeys}} {
			if k.n == 0 {
				continue
			}
			more := ""
			if int64(len(k.keys)) < k.n {
				more = fmt.Sprintf(" (first %d of %d)", len(k.keys), k.n)
			}
			fmt.Fprintf(w, "  %s%s: %s\n", k.what, more, strings.Join(k.keys, "; "))
		}
		if t.KeyKind == vdiff.KeyNone && !t.Equal() {
			fmt.Fprintf(w, "  (%s has no primary or unique NOT NULL key: rows are shown by their first columns, and a changed row counts as one missing and one extra)\n", t.Table)
		}
	}
	if r.Equal() {
		fmt.Fprintf(w, "equal: %d tables\n", len(r.Tables))
	} else {
		fmt.Fprintf(w, "DIFFERENT: %d of %d tables\n", r.Differing(), len(r.Tables))
	}
}
