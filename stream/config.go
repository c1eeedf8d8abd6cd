package stream

import (
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/vplayer/vplayer/applier"
	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/copier"
	"github.com/vplayer/vplayer/stall"
	"github.com/vplayer/vplayer/stream/preflight"
	"github.com/vplayer/vplayer/throttle"
)

// Source says how to reach the source and what to replicate.
type Source struct {
	Host     string
	Port     uint16
	User     string
	Password string
	TLS      *tls.Config
	// DB is the source database; Tables the --tables entries (names or /regex/), empty for all.
	DB     string
	Tables []string
	// Pool is a SQL connection pool to the source, for preflight, the current position and the
	// kind of each replicated table (a system-versioned one needs a system-versioned target).
	Pool *sql.DB
}

// Config configures a stream: start from DefaultConfig; New checks it with Validate.
type Config struct {
	Workflow string
	Source   Source
	// Target is the target pool; its DSN must allow multi statements.
	Target   *sql.DB
	TargetDB string
	Sidecar  string
	// StartPos is "", "current" or a position; StopPos is "" or a position.
	StartPos string
	StopPos  string

	ProgressDeadline      time.Duration
	HeartbeatInterval     time.Duration
	SourceHeartbeatPeriod time.Duration
	RelayLogMaxBytes      int
	RelayLogMaxItems      int
	RetryDelay            time.Duration
	MaxTimeToRetryOnError time.Duration
	OnDDL                 string
	// OnlineDDLPatterns is --online-ddl-patterns: the names of the shadow and trash tables of
	// online schema-change tools (binlog.ParseOnlineDDLPatterns; empty is
	// binlog.DefaultOnlineDDLPatterns, gh-ost's and pt-online-schema-change's, "none" is none).
	// Their rows are never applied; the ALTER run on a shadow table is run on its table at the
	// cut-over under --on-ddl exec (SPEC 7b).
	OnlineDDLPatterns string
	// ExecMode is --exec-mode, applier.ExecModeStrict (the default when empty) or
	// applier.ExecModeIdempotent: what the applier does with a row change whose row is absent,
	// or present, on the target.
	ExecMode string
	// AllowTargetTriggers lets replicated target tables keep triggers, which then fire a
	// second time for each replicated row; without it a trigger is a preflight failure and,
	// found at an attempt's start, a terminal error.
	AllowTargetTriggers bool
	// ApplyWorkers is --apply-workers: target sessions that apply batches with disjoint
	// writesets at once, committing in source order (applier.Config.Workers).
	ApplyWorkers int
	ServerID     uint32
	// Holding back on purpose (SPEC 4.5). MaxLoad is --max-load: status variables of the target
	// and their maximum values. ThrottleReplicas are --throttle-replicas, replicas of the target
	// whose lag over MaxReplicaLag (--max-replica-lag) holds the stream; an unreachable one holds
	// it too. ApplyDelay is --apply-delay: each source transaction is applied no earlier than
	// its commit time plus the delay. A manual throttle (vplayer throttle) is always honoured.
	MaxLoad          []throttle.Threshold
	ThrottleReplicas []throttle.Replica
	MaxReplicaLag    time.Duration
	ApplyDelay       time.Duration
	// CopyChunkRows and CopyChunkBytes bound one chunk of the copy phase (rows, and bytes of its
	// INSERTs); 0 takes copier's defaults.
	CopyChunkRows, CopyChunkBytes int
	// CopyWriters is how many target sessions write chunks of different tables at once; 0 takes
	// copier's default.
	CopyWriters int
	// Options is the JSON of the settings in force, stored in the record.
	Options string
	// LeaseTTL is how long the workflow lease lasts past each renewal (default DefaultLeaseTTL);
	// Owner identifies this process in the lease (default DefaultOwner()).
	LeaseTTL time.Duration
	Owner    string
	// WaitWhileStopped is --wait-while-stopped: a workflow stopped on purpose (vplayer stop, the
	// stop position, a DDL under --on-ddl stop) keeps this process up, holding the lease, until
	// vplayer start makes it runnable again, instead of ending Run (see Stream.Run).
	WaitWhileStopped bool

	Logger *slog.Logger
	// BeforeCommit and AfterDDL are the applier's fault-injection hooks, for tests.
	BeforeCommit func() error
	AfterDDL     func() error
	// OnStart, when set, is called with the live pipeline at the start of each attempt, for
	// metrics and tests.
	OnStart func(*Attempt)
	// OnError, when set, is called once per reported stream error (stalls included: errors.As a
	// *stall.Error), with whether it is terminal, for metrics and health.
	OnError func(err error, terminal bool)
	// OnState, when set, is called whenever the stream changes state: Running at each attempt's
	// start, Stopped or Error at the end, and "Retrying" while it waits to retry after an error.
	OnState func(state string)
}

// DefaultConfig returns a Config with every setting at its default (SPEC section 6): the one
// place the command line, `vplayer diff`, the demo and the benchmark take them from. Workflow,
// Source and Target are left for the caller.
func DefaultConfig() Config {
	return Config{
		Sidecar:               "_vt",
		ProgressDeadline:      stall.DefaultProgressDeadline,
		HeartbeatInterval:     stall.DefaultHeartbeatInterval,
		SourceHeartbeatPeriod: time.Second,
		RelayLogMaxBytes:      250000,
		RelayLogMaxItems:      5000,
		RetryDelay:            5 * time.Second,
		OnDDL:                 applier.OnDDLIgnore,
		OnlineDDLPatterns:     binlog.DefaultOnlineDDLPatterns,
		ExecMode:              applier.ExecModeStrict,
		ApplyWorkers:          applier.DefaultWorkers,
		LeaseTTL:              DefaultLeaseTTL,
		CopyChunkRows:         copier.DefaultChunkRows,
		CopyChunkBytes:        copier.DefaultChunkBytes,
		CopyWriters:           copier.DefaultWriters,
	}
}

// MaxSourceHeartbeatPeriod is the longest --source-heartbeat-period.
const MaxSourceHeartbeatPeriod = time.Minute

// Validate reports every invalid setting in one error, each naming its flag and what it must
// be. It needs no connection; New calls it, so that a zero bound never reaches the relay log.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch {
	case c.Workflow == "":
		bad("--workflow is required: name the workflow, e.g. --workflow orders")
	case len(c.Workflow) > 255:
		bad("--workflow is %d bytes long: at most 255", len(c.Workflow))
	}
	if err := (stall.Config{ProgressDeadline: c.ProgressDeadline, HeartbeatInterval: c.HeartbeatInterval}).Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.SourceHeartbeatPeriod <= 0 || c.SourceHeartbeatPeriod > MaxSourceHeartbeatPeriod {
		bad("--source-heartbeat-period is %v: it must be above 0 and at most %v", c.SourceHeartbeatPeriod, MaxSourceHeartbeatPeriod)
	}
	if c.RelayLogMaxBytes < 1 {
		bad("--relay-log-max-size is %d: it must be at least 1 byte", c.RelayLogMaxBytes)
	}
	if c.RelayLogMaxItems < 1 {
		bad("--relay-log-max-items is %d: it must be at least 1", c.RelayLogMaxItems)
	}
	if c.RetryDelay < 0 {
		bad("--retry-delay is %v: it must not be negative", c.RetryDelay)
	}
	if c.MaxTimeToRetryOnError < 0 {
		bad("--max-time-to-retry-on-error is %v: it must not be negative", c.MaxTimeToRetryOnError)
	}
	for _, f := range []struct {
		flag string
		v    int
	}{{"--copy-chunk-rows", c.CopyChunkRows}, {"--copy-chunk-bytes", c.CopyChunkBytes}, {"--copy-writers", c.CopyWriters}} {
		if f.v < 0 {
			bad("%s is %d: it must not be negative (0: the default)", f.flag, f.v)
		}
	}
	if len(c.ThrottleReplicas) > 0 && c.MaxReplicaLag <= 0 {
		bad("--max-replica-lag is %v: it must be positive with --throttle-replicas", c.MaxReplicaLag)
	}
	if c.ApplyDelay < 0 {
		bad("--apply-delay is %v: it must not be negative (0: off)", c.ApplyDelay)
	}
	if c.LeaseTTL != 0 && c.LeaseTTL < time.Second {
		bad("--lease-ttl is %v: it must be at least 1s", c.LeaseTTL)
	}
	switch c.OnDDL {
	case "", applier.OnDDLIgnore, applier.OnDDLStop, applier.OnDDLExec, applier.OnDDLExecIgnore:
	default:
		bad("--on-ddl is %q: want ignore, stop, exec or exec_ignore", c.OnDDL)
	}
	if c.ApplyWorkers < 0 || c.ApplyWorkers > applier.MaxWorkers {
		bad("--apply-workers is %d: want 1 to %d", c.ApplyWorkers, applier.MaxWorkers)
	}
	switch c.ExecMode {
	case "", applier.ExecModeStrict, applier.ExecModeIdempotent:
	default:
		bad("--exec-mode is %q: want strict or idempotent", c.ExecMode)
	}
	if c.Sidecar == "" {
		bad("--sidecar-db is empty: name the target database for the workflow record, e.g. _vt")
	}
	if sp := strings.TrimSpace(c.StartPos); sp != "" && sp != "current" {
		if _, err := binlog.ParsePosition(sp, ""); err != nil {
			bad("--start-pos: %v", err)
		}
	}
	if c.StopPos != "" {
		if _, err := binlog.ParsePosition(c.StopPos, ""); err != nil {
			bad("--stop-pos: %v", err)
		}
	}
	if _, err := binlog.NewFilter("db", c.Source.Tables); err != nil {
		errs = append(errs, err)
	}
	if _, err := binlog.ParseOnlineDDLPatterns(c.OnlineDDLPatterns); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// filter returns the filter of the replicated tables: --source-db's tables that --tables
// selects, less the tables of online schema-change tools (--online-ddl-patterns).
func (c Config) filter() (*binlog.Filter, error) {
	return c.Preflight().Filter()
}

// Preflight returns what preflight.Check looks at for a run of c: call it before New, so that a
// configuration no retry can fix fails before anything is written.
func (c Config) Preflight() preflight.Config {
	return preflight.Config{
		Workflow: c.Workflow, Sidecar: c.Sidecar, StartPos: c.StartPos,
		Source: c.Source.Pool, SourceDB: c.Source.DB, Tables: c.Source.Tables, OnlineDDLPatterns: c.OnlineDDLPatterns,
		Target: c.Target, TargetDB: c.TargetDB,
		AllowTargetTriggers: c.AllowTargetTriggers, Logger: c.Logger,
	}
}
