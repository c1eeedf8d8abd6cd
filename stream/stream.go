package stream

import (
	"errors"
	"log/slog"
	"time"

	"github.com/vplayer/vplayer/applier"
	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/copier"
	"github.com/vplayer/vplayer/heartbeat"
	"github.com/vplayer/vplayer/relaylog"
	"github.com/vplayer/vplayer/throttle"
	"github.com/vplayer/vplayer/workflow"
)

// ErrTerminal wraps an error that a retry cannot fix; the record's state is then Error.
var ErrTerminal = errors.New("terminal error")

// StateRetrying is reported through Config.OnState while the stream waits to retry after an
// error; the record's state stays Running.
const StateRetrying = "Retrying"

// setupTimeout bounds the round trips of an attempt before its pipeline runs (reading the
// record, the source's history, the target's triggers, setting the state): a few small queries.
const setupTimeout = 10 * time.Second

// copyPlanTimeout bounds the planning of a copy (the target's tables created from the source's).
const copyPlanTimeout = 2 * time.Minute

// Attempt is the live pipeline of one attempt, exposed for metrics and tests.
type Attempt struct {
	Relay     *relaylog.Log
	Applier   *applier.Applier
	Heartbeat *heartbeat.Recorder
	Reader    *binlog.Reader
	// Copier is the copy phase's copier, nil when the attempt does not copy.
	Copier *copier.Copier
	// Holds tells whether the attempt is held on purpose (a throttle, --apply-delay) and how
	// long it has been held in all.
	Holds Holds
}

// Holds is what an attempt tells of its holds on purpose. Safe from any goroutine; never blocks.
type Holds interface {
	// Hold returns the hold in force, if any.
	Hold() (throttle.Hold, bool)
	// HeldTotal is the attempt's time held so far, the hold in force included.
	HeldTotal(now time.Time) time.Duration
}

// Stream runs one workflow.
type Stream struct {
	cfg    Config
	store  *workflow.Store
	log    *slog.Logger
	flavor string // go-mysql flavor of the source
	filter *binlog.Filter
	stop   binlog.Position
	id     int64
	rep    *reporter
	retry  retrier
	own    *owner    // made by prepare; its lease, once acquired, fences the record's writes
	ctl    *controls // made by prepare

	// Owned by Run's goroutine and the attempt's applier (which runs only while Run waits).
	running    bool   // this process set the workflow Running: a Stopped record is a stop request
	refusedDDL string // position of the last DDL the target refused in this process
}

// New returns a stream for cfg; nothing is connected until Run.
func New(cfg Config) (*Stream, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Target == nil || cfg.Source.Pool == nil {
		return nil, errors.New("stream: Config.Target and Config.Source.Pool are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	f, err := cfg.filter()
	if err != nil {
		return nil, err
	}
	if cfg.TargetDB == "" {
		cfg.TargetDB = cfg.Source.DB
	}
	rep := newReporter(cfg)
	return &Stream{cfg: cfg, store: workflow.New(cfg.Target, cfg.Sidecar), log: cfg.Logger, filter: f,
		rep: rep, retry: retrier{rep: rep, delay: cfg.RetryDelay}}, nil
}
