package cli

import (
	"context"
	"encoding/json"
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

	"github.com/vplayer/vplayer/applier"
	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/copier"
	"github.com/vplayer/vplayer/stall"
	"github.com/vplayer/vplayer/stream"
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
	execMode                                     string
	allowTriggers                                bool
	sourceTLS, targetTLS                         tlsFlags
	serverID                                     uint32
	leaseTTL                                     time.Duration
	copyChunkRows, copyChunkBytes, copyWriters   int
}

func newRunFlags(stderr io.Writer) (*pflag.FlagSet, *runFlags) {
	f := &runFlags{}
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
	fs.DurationVar(&f.progressDeadline, "vplayer-progress-deadline", stall.DefaultProgressDeadline, "fail the stream when no progress is made for this long (0 turns the relay log and applier detectors off)")
	fs.DurationVar(&f.heartbeatInterval, "heartbeat-update-interval", stall.DefaultHeartbeatInterval, "how often an idle stream records time_heartbeat, and that write's deadline (at most 60s)")
	fs.DurationVar(&f.sourceHeartbeat, "source-heartbeat-period", time.Second, "heartbeat period asked of the source; the binlog read timeout is 3 periods + 1s")
	fs.IntVar(&f.relayMaxSize, "relay-log-max-size", 250000, "relay log bound in bytes of binlog events")
	fs.IntVar(&f.relayMaxItems, "relay-log-max-items", 5000, "relay log bound in events")
	fs.DurationVar(&f.retryDelay, "retry-delay", 5*time.Second, "wait before retrying after a stream error")
	fs.DurationVar(&f.maxRetryTime, "max-time-to-retry-on-error", 0, "give up (state Error, exit 1) when the same error persists this long (0: retry forever)")
	fs.StringVar(&f.onDDL, "on-ddl", applier.OnDDLIgnore, "what to do with DDL: ignore, stop, exec or exec_ignore")
	fs.StringVar(&f.execMode, "exec-mode", applier.ExecModeStrict, "a row change whose row is absent on the target, or an insert of a key it has: strict (a terminal error naming the table, key, position and GTID) or idempotent (write the after image, skip the delete, count and log each)")
	fs.BoolVar(&f.allowTriggers, "allow-target-triggers", false, "let replicated target tables keep their triggers, which then fire again for each replicated row (the binlog already carries their effects); without it a trigger fails preflight")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve /metrics, /healthz and /debug/pprof/ on HOST:PORT, e.g. :9100; port 0 picks one (default: off)")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fs.Uint32Var(&f.serverID, "server-id", 0, "replica server id to register with the source (default: derived from the workflow name)")
	fs.StringVar(&f.sidecar, "sidecar-db", "_vt", "target database holding the vreplication record tables")
	f.sourceTLS.register(fs, "source")
	f.targetTLS.register(fs, "target")
	fs.IntVar(&f.copyChunkRows, "copy-chunk-rows", copier.DefaultChunkRows, "copy phase: rows of one chunk, one target transaction")
	fs.IntVar(&f.copyChunkBytes, "copy-chunk-bytes", copier.DefaultChunkBytes, "copy phase: bytes of one chunk's INSERTs")
	fs.IntVar(&f.copyWriters, "copy-writers", copier.DefaultWriters, "copy phase: target sessions writing chunks of different tables at once")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", stream.DefaultLeaseTTL, "workflow ownership lease: a standby takes over this long after the owner stops renewing it")
	return fs, f
}

// validate checks everything that needs no connection.
func (f *runFlags) validate() error {
	if f.workflow == "" {
		return usagef("--workflow is required: name the workflow, e.g. --workflow orders")
	}
	if len(f.workflow) > 255 {
		return usagef("--workflow is %d bytes long: at most 255", len(f.workflow))
	}
	if err := (stall.Config{ProgressDeadline: f.progressDeadline, HeartbeatInterval: f.heartbeatInterval}).Validate(); err != nil {
		return usagef("%v", err)
	}
	if f.sourceHeartbeat <= 0 || f.sourceHeartbeat > 60*time.Second {
		return usagef("--source-heartbeat-period is %v: it must be above 0 and at most 60s", f.sourceHeartbeat)
	}
	if f.relayMaxSize < 1 {
		return usagef("--relay-log-max-size is %d: it must be at least 1 byte", f.relayMaxSize)
	}
	if f.relayMaxItems < 1 {
		return usagef("--relay-log-max-items is %d: it must be at least 1", f.relayMaxItems)
	}
	if f.retryDelay < 0 {
		return usagef("--retry-delay is %v: it must not be negative", f.retryDelay)
	}
	if f.leaseTTL < time.Second {
		return usagef("--lease-ttl is %v: it must be at least 1s", f.leaseTTL)
	}
	if f.copyChunkRows < 1 {
		return usagef("--copy-chunk-rows is %d: it must be at least 1", f.copyChunkRows)
	}
	if f.copyWriters < 1 {
		return usagef("--copy-writers is %d: it must be at least 1", f.copyWriters)
	}
	if f.copyChunkBytes < 1 {
		return usagef("--copy-chunk-bytes is %d: it must be at least 1", f.copyChunkBytes)
	}
	if f.maxRetryTime < 0 {
		return usagef("--max-time-to-retry-on-error is %v: it must not be negative", f.maxRetryTime)
	}
	switch f.onDDL {
	case applier.OnDDLIgnore, applier.OnDDLStop, applier.OnDDLExec, applier.OnDDLExecIgnore:
	default:
		return usagef("--on-ddl is %q: want ignore, stop, exec or exec_ignore", f.onDDL)
	}
	switch f.execMode {
	case applier.ExecModeStrict, applier.ExecModeIdempotent:
	default:
		return usagef("--exec-mode is %q: want strict or idempotent", f.execMode)
	}
	switch f.logFormat {
	case "text", "json":
	default:
		return usagef("--log-format is %q: want text or json", f.logFormat)
	}
	if sp := strings.TrimSpace(f.startPos); sp != "" && sp != "current" {
		if _, err := binlog.ParsePosition(sp, ""); err != nil {
			return usagef("--start-pos: %v", err)
		}
	}
	if f.stopPos != "" {
		if _, err := binlog.ParsePosition(f.stopPos, ""); err != nil {
			return usagef("--stop-pos: %v", err)
		}
	}
	if _, err := binlog.NewFilter("db", f.tables); err != nil {
		return usagef("%v", err)
	}
	return f.validateOperations()
}

// newLogger returns the logger of a run, every line carrying the workflow, repeated warnings and
// errors rate-limited; flush logs the counts of repeats still suppressed, at exit.
func newLogger(format string, w io.Writer, workflow string) (log *slog.Logger, flush func()) {
	var h slog.Handler
	if format == "json" {
		h = slog.NewJSONHandler(w, nil)
	} else {
		h = slog.NewTextHandler(w, nil)
	}
	rh := newRepeatHandler(h, repeatWindow, time.Now)
	return slog.New(rh).With("workflow", workflow), func() { rh.Flush(context.Background()) }
}

func runCmd(args []string, stdout, stderr io.Writer) error {
	fs, f := newRunFlags(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return errHelp
		}
		return usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments: %s", strings.Join(fs.Args(), " "))
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
	sourceDB := f.sourceDB
	if sourceDB == "" {
		sourceDB = src.cfg.DBName
	}
	if sourceDB == "" {
		return usagef("no source database: set --source-db or name it in the --source DSN (.../db)")
	}
	targetDB := f.targetDB
	if targetDB == "" {
		targetDB = tgt.cfg.DBName
	}
	if targetDB == "" {
		targetDB = sourceDB
	}
	serverID := f.serverID
	if serverID == 0 {
		serverID = binlog.ServerIDFor(f.workflow)
	}

	logger, flushLog := newLogger(f.logFormat, stderr, f.workflow)
	defer flushLog()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ops, err := f.startOperations(ctx, logger)
	if err != nil {
		return err
	}
	defer ops.stop()

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

	cfg := stream.Config{
		Workflow: f.workflow,
		Source: stream.Source{
			Host: src.host, Port: src.port, User: src.cfg.User, Password: src.cfg.Passwd,
			TLS: src.cfg.TLS, DB: sourceDB, Tables: f.tables, Pool: srcPool,
		},
		Target:                tgtPool,
		TargetDB:              targetDB,
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
		ExecMode:              f.execMode,
		AllowTargetTriggers:   f.allowTriggers,
		ServerID:              serverID,
		LeaseTTL:              f.leaseTTL,
		CopyChunkRows:         f.copyChunkRows,
		CopyChunkBytes:        f.copyChunkBytes,
		CopyWriters:           f.copyWriters,
		Options:               f.optionsJSON(targetDB, serverID),
		Logger:                logger,
	}
	ops.hook(&cfg)
	if err := preflight(ctx, cfg); err != nil || ctx.Err() != nil {
		return err // nil: a signal during the preflight
	}
	if cfg.Source.TLS, err = src.binlogTLS(ctx, srcPool, logger); err != nil {
		return err
	}
	s, err := stream.New(cfg)
	if err != nil {
		return usagef("%v", err)
	}
	logger.Info("starting", "source", fmt.Sprintf("%s:%d/%s", src.host, src.port, sourceDB), "target_db", targetDB, "server_id", serverID)
	return s.Run(ctx)
}

// optionsJSON is the record's options: the settings in force, never a DSN or password.
func (f *runFlags) optionsJSON(targetDB string, serverID uint32) string {
	b, _ := json.Marshal(map[string]any{
		"target_db":                  targetDB,
		"tables":                     f.tables,
		"start_pos":                  f.startPos,
		"stop_pos":                   f.stopPos,
		"vplayer_progress_deadline":  f.progressDeadline.String(),
		"heartbeat_update_interval":  f.heartbeatInterval.String(),
		"source_heartbeat_period":    f.sourceHeartbeat.String(),
		"relay_log_max_size":         f.relayMaxSize,
		"relay_log_max_items":        f.relayMaxItems,
		"retry_delay":                f.retryDelay.String(),
		"max_time_to_retry_on_error": f.maxRetryTime.String(),
		"on_ddl":                     f.onDDL,
		"exec_mode":                  f.execMode,
		"allow_target_triggers":      f.allowTriggers,
		"server_id":                  serverID,
		"sidecar_db":                 f.sidecar,
		"source_tls_mode":            f.sourceTLS.resolved,
		"target_tls_mode":            f.targetTLS.resolved,
	})
	return string(b)
}

// preflightTimeout bounds one preflight.
const preflightTimeout = 30 * time.Second

// preflight runs stream.Preflight until it passes or fails on a configuration that a retry
// cannot fix. A server that cannot be reached is retried after --retry-delay: logged as a stream
// error, counted and shown by /healthz (503, waiting to retry), never an exit, since exit code 1
// tells a supervisor not to restart blindly. It returns nil when ctx ends while waiting.
func preflight(ctx context.Context, cfg stream.Config) error {
	for retried := false; ; retried = true {
		pctx, cancel := context.WithTimeout(ctx, preflightTimeout)
		err := stream.Preflight(pctx, cfg)
		cancel()
		if err == nil && retried && cfg.OnState != nil {
			cfg.OnState(workflow.StateInit) // starting again, no longer waiting
		}
		if ctx.Err() != nil {
			return nil // a signal: a requested stop, whatever the preflight found meanwhile
		}
		if !errors.Is(err, stream.ErrUnreachable) {
			return err
		}
		err = fmt.Errorf("preflight: %w", err)
		if cfg.OnError != nil {
			cfg.OnError(err, false)
		}
		if cfg.OnState != nil {
			cfg.OnState(stream.StateRetrying)
		}
		cfg.Logger.Error(fmt.Sprintf("error in stream %s, will retry after %v: %v", cfg.Workflow, cfg.RetryDelay, err))
		t := time.NewTimer(cfg.RetryDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}
