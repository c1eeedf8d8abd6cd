package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/stream"
	"github.com/vplayer/vplayer/stream/preflight"
	"github.com/vplayer/vplayer/workflow"
)

// errHelp means --help was asked for and printed.
var errHelp = errors.New("help shown")

// runFlags are vplayer run's settings.
type runFlags struct {
	workflow, source, target, sourceDB, targetDB string
	tables                                       []string
	startPos, stopPos                            string
	progressDeadline, heartbeatInterval          time.Duration
	sourceHeartbeat, retryDelay, maxRetryTime    time.Duration
	relayMaxSize, relayMaxItems                  int
	onDDL, metricsAddr, logFormat, sidecar       string
	pprofAddr, logLevel                          string
	execMode                                     string
	onlineDDLPatterns                            string
	applyWorkers                                 int
	allowTriggers                                bool
	sourceTLS, targetTLS                         tlsFlags
	serverID                                     uint32
	leaseTTL                                     time.Duration
	waitWhileStopped                             bool
	copyChunkRows, copyChunkBytes, copyWriters   int
	hold                                         holdFlags
}

func newRunFlags(stderr io.Writer) (*pflag.FlagSet, *runFlags) {
	f := &runFlags{}
	d := stream.DefaultConfig()
	fs := pflag.NewFlagSet("vplayer run", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.StringVar(&f.workflow, "workflow", "", "workflow name (required); one record per name on the target")
	fs.StringVar(&f.source, "source", "", "source DSN, user:pass@tcp(host:port)/db (required); VPLAYER_SOURCE_PASSWORD overrides the password")
	fs.StringVar(&f.target, "target", "", "target DSN, user:pass@tcp(host:port)/db (required); VPLAYER_TARGET_PASSWORD overrides the password")
	fs.StringVar(&f.sourceDB, "source-db", "", "source database to replicate (default: the --source DSN's database)")
	fs.StringVar(&f.targetDB, "target-db", "", "target database (default: the --target DSN's database, else the source database)")
	fs.StringSliceVar(&f.tables, "tables", nil, "tables to replicate: names and /regex/ entries, comma-separated (default: all)")
	fs.StringVar(&f.startPos, "start-pos", "", "where a new workflow starts: current, a GTID set (optionally Flavor/-prefixed) or file:pos; without it a new workflow copies the tables first (created on the target when missing), then replicates")
	fs.StringVar(&f.stopPos, "stop-pos", "", "apply up to and including this position, then stop with state Stopped and exit 0")
	fs.DurationVar(&f.progressDeadline, "vplayer-progress-deadline", d.ProgressDeadline, "fail the stream when no progress is made for this long (0 turns the relay log and applier detectors off)")
	fs.DurationVar(&f.heartbeatInterval, "heartbeat-update-interval", d.HeartbeatInterval, "how often an idle stream records time_heartbeat, and that write's deadline (at most 60s)")
	fs.DurationVar(&f.sourceHeartbeat, "source-heartbeat-period", d.SourceHeartbeatPeriod, "heartbeat period asked of the source; the binlog read timeout is 3 periods + 1s")
	fs.IntVar(&f.relayMaxSize, "relay-log-max-size", d.RelayLogMaxBytes, "relay log bound in bytes of binlog events")
	fs.IntVar(&f.relayMaxItems, "relay-log-max-items", d.RelayLogMaxItems, "relay log bound in events")
	fs.DurationVar(&f.retryDelay, "retry-delay", d.RetryDelay, "wait before retrying after a stream error")
	fs.DurationVar(&f.maxRetryTime, "max-time-to-retry-on-error", 0, "give up (state Error, exit 1) when the same error persists this long (0: retry forever)")
	fs.StringVar(&f.onDDL, "on-ddl", d.OnDDL, "what to do with DDL: ignore, stop, exec or exec_ignore")
	fs.StringVar(&f.onlineDDLPatterns, "online-ddl-patterns", d.OnlineDDLPatterns, "names of the shadow and trash tables of online schema-change tools, comma-separated kind={table}-patterns (shadow: altered, then renamed in the table's place; trash: the rest); their rows are never applied, and under --on-ddl exec the ALTER run on a shadow table runs on the table at the cut-over; none: off")
	fs.StringVar(&f.execMode, "exec-mode", d.ExecMode, "a row change whose row is absent on the target, or an insert of a key it has: strict (a terminal error naming the table, key, position and GTID) or idempotent (write the after image, skip the delete, count and log each)")
	fs.IntVar(&f.applyWorkers, "apply-workers", d.ApplyWorkers, "target sessions applying batches with disjoint writesets (table and key values) at once; batches commit in source order, each with its position")
	fs.BoolVar(&f.allowTriggers, "allow-target-triggers", false, "let replicated target tables keep their triggers, which then fire again for each replicated row (the binlog already carries their effects); without it a trigger fails preflight")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve /metrics and /healthz on HOST:PORT, e.g. :9100; port 0 picks one (default: off)")
	fs.StringVar(&f.pprofAddr, "pprof-addr", "", "serve Go's profiles under /debug/pprof/ on HOST:PORT, apart from the metrics: give it a loopback address, e.g. 127.0.0.1:6060 (default: off; the command line is never served)")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&f.logLevel, "log-level", "info", "lowest level logged: debug, info, warn or error")
	fs.Uint32Var(&f.serverID, "server-id", 0, "replica server id to register with the source (default: derived from the workflow name)")
	fs.StringVar(&f.sidecar, "sidecar-db", d.Sidecar, "target database holding the vreplication record tables")
	f.sourceTLS.register(fs, "source")
	f.targetTLS.register(fs, "target")
	fs.IntVar(&f.copyChunkRows, "copy-chunk-rows", d.CopyChunkRows, "copy phase: rows of one chunk, one target transaction")
	fs.IntVar(&f.copyChunkBytes, "copy-chunk-bytes", d.CopyChunkBytes, "copy phase: bytes of one chunk's INSERTs")
	fs.IntVar(&f.copyWriters, "copy-writers", d.CopyWriters, "copy phase: target sessions writing chunks of different tables at once")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", d.LeaseTTL, "workflow ownership lease: a standby takes over this long after the owner stops renewing it")
	fs.BoolVar(&f.waitWhileStopped, "wait-while-stopped", false, "when the workflow is Stopped on purpose (vplayer stop, --stop-pos, --on-ddl stop), keep running and holding its lease until vplayer start, then resume it, instead of exiting 0: for supervisors that restart every exit")
	f.hold.register(fs)
	return fs, f
}

// validate checks everything that needs no connection: the stream's settings through
// stream.Config.Validate, and what only the command line has.
func (f *runFlags) validate() error {
	if err := f.settings().Validate(); err != nil {
		return usagef("%v", err)
	}
	if err := validateLog(f.logFormat, f.logLevel); err != nil {
		return err
	}
	if err := f.hold.validate(); err != nil {
		return err
	}
	return f.validateOperations()
}

// logLevels are the values of --log-level.
var logLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

// validateLog checks --log-format and --log-level.
func validateLog(format, level string) error {
	switch format {
	case "text", "json":
	default:
		return usagef("--log-format is %q: want text or json", format)
	}
	if _, ok := logLevels[level]; !ok {
		return usagef("--log-level is %q: want debug, info, warn or error", level)
	}
	return nil
}

// settings returns the stream settings the flags give, without the connections.
func (f *runFlags) settings() stream.Config {
	return stream.Config{
		Workflow:              f.workflow,
		Source:                stream.Source{Tables: f.tables},
		TargetDB:              f.targetDB,
		Sidecar:               f.sidecar,
		StartPos:              f.startPos,
		StopPos:               f.stopPos,
		ProgressDeadline:      f.progressDeadline,
		HeartbeatInterval:     f.heartbeatInterval,
		SourceHeartbeatPeriod: f.sourceHeartbeat,
		RelayLogMaxBytes:      f.relayMaxSize,
		RelayLogMaxItems:      f.relayMaxItems,
		RetryDelay:            f.retryDelay,
		MaxTimeToRetryOnError: f.maxRetryTime,
		OnDDL:                 f.onDDL,
		OnlineDDLPatterns:     f.onlineDDLPatterns,
		ExecMode:              f.execMode,
		AllowTargetTriggers:   f.allowTriggers,
		ApplyWorkers:          f.applyWorkers,
		ServerID:              f.serverID,
		LeaseTTL:              f.leaseTTL,
		WaitWhileStopped:      f.waitWhileStopped,
		CopyChunkRows:         f.copyChunkRows,
		CopyChunkBytes:        f.copyChunkBytes,
		CopyWriters:           f.copyWriters,
	}
}

// newLogger returns the logger of a run, in format (text or json), logging level (a key of
// logLevels) and above, every line carrying the workflow, repeated warnings and errors
// rate-limited; flush logs the counts of repeats still suppressed, at exit.
func newLogger(format, level string, w io.Writer, workflow string) (log *slog.Logger, flush func()) {
	opts := &slog.HandlerOptions{Level: logLevels[level]}
	var h slog.Handler
	if format == "json" {
		h = slog.NewJSONHandler(w, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	rh := newRepeatHandler(h, repeatWindow, time.Now)
	return slog.New(rh).With("workflow", workflow), func() { rh.Flush(context.Background()) }
}

func runCmd(args []string, stdout, stderr io.Writer) error {
	fs, f := newRunFlags(stderr)
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if err := f.validate(); err != nil {
		return err
	}
	tuneGC(os.Getenv)
	rs, err := f.setup(fs)
	if err != nil {
		return err
	}

	logger, flushLog := newLogger(f.logFormat, f.logLevel, stderr, f.workflow)
	defer flushLog()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ops, err := f.startOperations(ctx, logger)
	if err != nil {
		return err
	}
	defer ops.stop()

	cfg, closeAll, err := f.streamConfig(rs, logger)
	defer closeAll()
	if err != nil {
		return err
	}
	ops.hook(&cfg)
	if err := runPreflight(ctx, cfg); err != nil || ctx.Err() != nil {
		return err // nil: a signal during the preflight
	}
	if cfg.Source.TLS, err = rs.src.binlogTLS(ctx, cfg.Source.Pool, logger); err != nil {
		return err
	}
	s, err := stream.New(cfg)
	if err != nil {
		return usagef("%v", err)
	}
	ops.ready()
	logger.Info("starting", "source", fmt.Sprintf("%s:%d/%s", rs.src.host, rs.src.port, rs.sourceDB), "target_db", rs.targetDB, "server_id", rs.serverID)
	return s.Run(ctx)
}

// optionsJSON is the record's options: the settings in force, never a DSN or password.
func (f *runFlags) optionsJSON(targetDB string, serverID uint32) string {
	return workflow.Options{
		TargetDB:              targetDB,
		Tables:                f.tables,
		StartPos:              f.startPos,
		StopPos:               f.stopPos,
		ProgressDeadline:      f.progressDeadline.String(),
		HeartbeatInterval:     f.heartbeatInterval.String(),
		SourceHeartbeatPeriod: f.sourceHeartbeat.String(),
		RelayLogMaxSize:       f.relayMaxSize,
		RelayLogMaxItems:      f.relayMaxItems,
		RetryDelay:            f.retryDelay.String(),
		MaxTimeToRetryOnError: f.maxRetryTime.String(),
		OnDDL:                 f.onDDL,
		ExecMode:              f.execMode,
		OnlineDDLPatterns:     onlineDDLOption(f.onlineDDLPatterns),
		ApplyWorkers:          f.applyWorkers,
		AllowTargetTriggers:   f.allowTriggers,
		ServerID:              serverID,
		SidecarDB:             f.sidecar,
		SourceTLSMode:         string(f.sourceTLS.resolved),
		TargetTLSMode:         string(f.targetTLS.resolved),
		MaxLoad:               f.hold.maxLoad,
		ThrottleReplicas:      f.hold.replicaNames(),
		MaxReplicaLag:         durationIf(len(f.hold.replicas) > 0, f.hold.maxLag),
		ApplyDelay:            durationIf(f.hold.applyDelay > 0, f.hold.applyDelay),
	}.JSON()
}

// preflightTimeout bounds one preflight.
const preflightTimeout = 30 * time.Second

// runPreflight runs preflight.Check until it passes or fails on a configuration that a retry
// cannot fix. A server that cannot be reached is retried after --retry-delay: logged as a stream
// error, counted and shown by /healthz (503, waiting to retry), never an exit, since exit code 1
// tells a supervisor not to restart blindly. It returns nil when ctx ends while waiting.
func runPreflight(ctx context.Context, cfg stream.Config) error {
	for retried := false; ; retried = true {
		pctx, cancel := context.WithTimeout(ctx, preflightTimeout)
		err := preflight.Check(pctx, cfg.Preflight())
		cancel()
		if err == nil && retried && cfg.OnState != nil {
			cfg.OnState(workflow.StateInit) // starting again, no longer waiting
		}
		if ctx.Err() != nil {
			return nil // a signal: a requested stop, whatever the preflight found meanwhile
		}
		if !errors.Is(err, preflight.ErrUnreachable) {
			return err
		}
		err = fmt.Errorf("preflight: %w", err)
		if cfg.OnError != nil {
			cfg.OnError(err, false)
		}
		if cfg.OnState != nil {
			cfg.OnState(stream.StateRetrying)
		}
		logRetry(cfg.Logger, cfg.Workflow, cfg.RetryDelay, err)
		t := time.NewTimer(cfg.RetryDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// logRetry logs a stream error that is retried after delay: SPEC 4.4's line, with the error and
// the delay as the attributes error and retry_after as well, for log pipelines that read fields.
func logRetry(log *slog.Logger, workflow string, delay time.Duration, err error) {
	log.Error(fmt.Sprintf("error in stream %s, will retry after %v: %v", workflow, delay, err),
		slog.String("error", err.Error()), slog.String("retry_after", delay.String()))
}

// durationIf is d's text when cond holds, else "" (left out of the options).
func durationIf(cond bool, d time.Duration) string {
	if !cond {
		return ""
	}
	return d.String()
}

// onlineDDLOption is --online-ddl-patterns as the record's options keep it: empty for the default.
func onlineDDLOption(patterns string) string {
	if patterns == binlog.DefaultOnlineDDLPatterns {
		return ""
	}
	return patterns
}
