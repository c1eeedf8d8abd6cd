// Package stream runs one workflow: it creates or resumes the record, runs the reader, the relay
// log, the applier and the stall watchdog under one errgroup, and retries from the committed
// position after a retryable error.
package stream

import (
	"crypto/tls"
	"database/sql"
	"log/slog"
	"time"
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
	// Pool is a SQL connection pool to the source, for preflight and the current position.
	Pool *sql.DB
}

// Config configures a stream. Durations are validated by the caller (the command line).
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
	// ExecMode is --exec-mode, applier.ExecModeStrict (the default when empty) or
	// applier.ExecModeIdempotent: what the applier does with a row change whose row is absent,
	// or present, on the target.
	ExecMode string
	// AllowTargetTriggers lets replicated target tables keep triggers, which then fire a
	// second time for each replicated row; without it a trigger is a preflight failure and,
	// found at an attempt's start, a terminal error.
	AllowTargetTriggers bool
	ServerID            uint32
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
