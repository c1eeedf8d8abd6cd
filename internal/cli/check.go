package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/stream"
	"github.com/vplayer/vplayer/stream/preflight"
	"github.com/vplayer/vplayer/workflow"
)

const checkUsage = `Usage: vplayer check --workflow W --source DSN --target DSN [run's flags]

Runs the checks vplayer run makes before it writes anything, and writes nothing: the source logs
what vplayer needs (log_bin, binlog_format=ROW, a row image it applies, the user's binlog
privileges), the target is reachable and writable, each replicated table exists on the target
with matching columns (unless the workflow copies first), no replicated target table has a
trigger (unless --allow-target-triggers), the source's TLS for the binlog connection; and, for a
workflow that has a record, that --start-pos agrees with it, that --stop-pos is not given while
it copies, and that the source's binary log still has its position. It takes every flag of vplayer
run, so the command line of a run can be checked as it is. It prints one line per finding and
does not retry a server it cannot reach: that is a finding too.

Exit codes: 0 every check passed; 1 a finding; 2 bad usage.

Flags:
`

// errCheckFailed ends vplayer check with exit code 1, its findings already printed.
var errCheckFailed = errors.New("check failed")

// checkCmd runs run's preflight checks and writes nothing: vplayer check [run's flags].
func checkCmd(args []string, stdout, stderr io.Writer) error {
	fs, f := newRunFlags(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, checkUsage)
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if err := f.validate(); err != nil {
		return err
	}
	rs, err := f.setup(fs)
	if err != nil {
		return err
	}
	// Preflight's warnings (keyless tables, triggers allowed) go to stderr, as run logs them.
	logger, flushLog := newLogger(f.logFormat, "warn", stderr, f.workflow)
	defer flushLog()
	cfg, closeAll, err := f.streamConfig(rs, logger)
	defer closeAll()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), preflightTimeout)
	defer cancel()
	findings := checkFindings(ctx, cfg, rs, logger)
	for _, l := range findings {
		fmt.Fprintln(stdout, l)
	}
	if len(findings) > 0 {
		fmt.Fprintf(stdout, "workflow %s: %d finding(s): vplayer run would not start; nothing was written\n", f.workflow, len(findings))
		return errCheckFailed
	}
	fmt.Fprintf(stdout, "workflow %s: every check passed (source %s:%d/%s, target database %s); nothing was written\n",
		f.workflow, rs.src.host, rs.src.port, rs.sourceDB, rs.targetDB)
	return nil
}

// checkFindings returns one line per finding of run's checks: preflight.Check's, the binlog
// connection's TLS, and those of the workflow's record that a run meets before its first write.
func checkFindings(ctx context.Context, cfg stream.Config, rs *runSetup, logger *slog.Logger) []string {
	var out []string
	if err := preflight.Check(ctx, cfg.Preflight()); err != nil {
		if errors.Is(err, preflight.ErrFailed) {
			out = append(out, preflightLines(err)...)
		} else {
			// A server that cannot be reached: run waits for it, check reports it.
			return append(out, oneLine(err.Error()))
		}
	}
	if _, err := rs.src.binlogTLS(ctx, cfg.Source.Pool, logger); err != nil {
		out = append(out, "source: binlog connection TLS: "+oneLine(err.Error()))
	}
	return append(out, recordFindings(ctx, cfg)...)
}

// preflightLines splits preflight.Check's error into its lines, one per finding.
func preflightLines(err error) []string {
	var out []string
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, preflight.ErrFailed.Error()) {
			continue
		}
		out = append(out, l)
	}
	return out
}

// recordFindings checks what a run checks against the workflow's record before its first write:
// a --start-pos that differs from the recorded position, a --stop-pos while the workflow copies,
// and a recorded position the source's binary log no longer has. Nothing is written: a sidecar
// that does not exist yet is a new workflow.
func recordFindings(ctx context.Context, cfg stream.Config) []string {
	store := workflow.New(cfg.Target, cfg.Sidecar)
	rec, err := store.Get(ctx, cfg.Workflow)
	startPos := strings.TrimSpace(cfg.StartPos)
	switch {
	case errors.Is(err, workflow.ErrNotFound) || workflow.IsNoSidecar(err):
		if cfg.StopPos != "" && startPos == "" {
			return []string{"workflow: --stop-pos cannot be used while the new workflow copies its tables (no --start-pos): run it without --stop-pos until the copy is done, or give --start-pos to skip the copy"}
		}
		return nil
	case err != nil:
		return []string{"target: cannot read the workflow's record: " + oneLine(err.Error())}
	}
	var out []string
	flavor, ferr := stream.SourceFlavor(ctx, cfg.Source.Pool)
	if ferr != nil {
		return []string{"source: " + oneLine(ferr.Error())}
	}
	pos, perr := binlog.ParsePosition(rec.Pos, flavor)
	if perr != nil {
		return []string{fmt.Sprintf("workflow: its recorded position %q cannot be read: %v", rec.Pos, perr)}
	}
	if startPos != "" && startPos != "current" {
		if want, err := binlog.ParsePosition(startPos, flavor); err == nil && !pos.Equal(want) {
			out = append(out, fmt.Sprintf("workflow: --start-pos %s differs from its recorded position %s: drop --start-pos to resume, or delete the workflow (vplayer delete) to start over", want, rec.Pos))
		}
	}
	if cfg.StopPos != "" {
		if copying, err := store.CopyUnfinished(ctx, rec.ID); err == nil && (copying || rec.State == workflow.StateCopying) {
			out = append(out, "workflow: --stop-pos cannot be used while the workflow copies its tables: run it without --stop-pos until the copy is done (state Running)")
		}
	}
	if err := sourceHasPosition(ctx, cfg.Source.Pool, flavor, pos); err != nil {
		out = append(out, "source: "+oneLine(err.Error()))
	}
	return out
}

// sourceHasPosition checks that the source's binary log history still contains pos, as each
// attempt of a run does before its binlog connection.
func sourceHasPosition(ctx context.Context, pool *sql.DB, flavor string, pos binlog.Position) error {
	var history string
	var err error
	switch {
	case pos.Flavor == binlog.FlavorFilePos:
		var logs []binlogFile
		if logs, err = binaryLogSizes(ctx, pool); err == nil {
			names := make([]string, len(logs))
			for i, l := range logs {
				names[i] = l.Name
			}
			history = strings.Join(names, ",")
		}
	case flavor == "mariadb":
		err = pool.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_binlog_state").Scan(&history)
	default:
		err = pool.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_executed").Scan(&history)
	}
	if err != nil {
		return fmt.Errorf("cannot read its binary log history: %w", err)
	}
	if err := binlog.CheckHistory(pos, history); err != nil {
		return fmt.Errorf("cannot continue from the workflow's recorded position %s: %w", pos, err)
	}
	return nil
}
