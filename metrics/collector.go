// Package metrics exposes one stream to Prometheus and to health checks. Its Collector is fed by
// the stream's hooks (OnStart, OnError, OnState) and reads the live attempt's relay log, applier
// and heartbeat recorder at scrape time, with O(1) atomic loads: nothing runs per transaction.
//
// Counters stay monotonic across attempts (each attempt has a new pipeline): the counters of
// finished attempts are summed and the live attempt's are added. Lag is carried across attempts
// too: until a new attempt has received anything, lag is measured from where the previous one
// left off, so it keeps growing through an error and its retry instead of reading zero.
package metrics

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/vplayer/vplayer/applier"
	"github.com/vplayer/vplayer/stall"
	"github.com/vplayer/vplayer/stream"
	"github.com/vplayer/vplayer/workflow"
)

// States reported by the vplayer_state metric: the record's states, and the stream's Retrying
// while it waits to retry after an error. Init holds until the first attempt starts.
var States = []string{workflow.StateInit, workflow.StateCopying, workflow.StateRunning, stream.StateRetrying, workflow.StateStopped, workflow.StateError}

// Error kinds of vplayer_errors_total, besides "mysql_<error number>" for a MySQL error of the
// target or the source's SQL connection.
const (
	KindStall    = "stall"    // a *stall.Error: see vplayer_stalls_total for the detector
	KindTerminal = "terminal" // an error that ended the stream, not a MySQL error
	KindOther    = "other"
)

// Detectors are the stall detectors, the values of vplayer_stalls_total's detector label.
var Detectors = []stall.Detector{stall.RelayLog, stall.Applier, stall.Heartbeat, stall.Copy, stall.Throttle}

// Options configures a Collector.
type Options struct {
	// Workflow labels every metric.
	Workflow string
	// RelayLogMaxBytes and RelayLogMaxItems are the relay log's bounds, reported as gauges.
	RelayLogMaxBytes, RelayLogMaxItems int
	// ApplyDelay is --apply-delay, reported as a gauge so that lag alerts can subtract it.
	ApplyDelay time.Duration
	// Build labels vplayer_build_info.
	Build Build
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Collector is a prometheus.Collector of one stream, and its health. Wire its On* methods into
// stream.Config. All methods are safe for concurrent use and never block on I/O.
type Collector struct {
	opts  Options
	now   func() time.Time
	descs descs

	mu       sync.Mutex
	live     pipeline // nil before the first attempt
	done     sample   // counters of the finished attempts
	attempts int64
	// lagBase is what lag is measured from while the live attempt has received nothing: where
	// the previous attempt left off, or the Collector's creation.
	lagBase    time.Time
	blockedMax time.Duration // the highest blocked time reported: keeps the counter monotonic
	state      string
	stalls     map[stall.Detector]int64
	errs       map[string]int64
	// lastErr is the last error's text; errPending says no progress has been made since, and
	// errMark is the progress count when it happened.
	lastErr    string
	errPending bool
	errMark    int64
}

// New returns a Collector in state Init.
func New(opts Options) *Collector {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	c := &Collector{
		opts:    opts,
		now:     now,
		descs:   newDescs(opts.Workflow),
		lagBase: now(),
		state:   workflow.StateInit,
		stalls:  map[stall.Detector]int64{},
		errs:    map[string]int64{KindStall: 0, KindTerminal: 0, KindOther: 0},
	}
	for _, d := range Detectors {
		c.stalls[d] = 0
	}
	return c
}

// OnStart is stream.Config.OnStart: an attempt begins with a new pipeline.
func (c *Collector) OnStart(a *stream.Attempt) { c.start(attemptPipeline{a}) }

func (c *Collector) start(p pipeline) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live != nil {
		// The previous attempt has ended: its counters are final.
		last := c.live.sample(now)
		c.done.addCounters(last)
		if last.lagKnown {
			c.lagBase = last.lagSince
		}
	}
	c.live = p
	c.attempts++
}

// OnError is stream.Config.OnError: it counts err by kind (and stalls by detector) and makes the
// stream unhealthy until it makes progress again.
func (c *Collector) OnError(err error, terminal bool) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	var se *stall.Error
	if errors.As(err, &se) {
		c.stalls[se.Detector]++
	}
	c.errs[ErrorKind(err, terminal)]++
	c.lastErr = err.Error()
	c.errPending = true
	c.errMark = c.progressLocked(now)
}

// OnState is stream.Config.OnState.
func (c *Collector) OnState(state string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state = state
}

// ErrorKind classifies a stream error for vplayer_errors_total: "stall" for a stall,
// "mysql_<number>" for a MySQL error (terminal or not), "terminal" for another terminal error,
// else "other".
func ErrorKind(err error, terminal bool) string {
	var se *stall.Error
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &se):
		return KindStall
	case errors.As(err, &me):
		return fmt.Sprintf("mysql_%d", me.Number)
	case terminal:
		return KindTerminal
	}
	return KindOther
}

// Snapshot is one reading of the stream, as /metrics and the progress log line show it.
type Snapshot struct {
	State    string
	Attempts int64
	// Transactions, Rows, Commits: source transactions, row changes and target commits applied,
	// over all attempts.
	Transactions, Rows, Commits int64
	// PerCommit counts commits by source transactions carried, in applier.PerCommitBuckets.
	PerCommit [len(applier.PerCommitBuckets) + 1]int64
	// HeartbeatsReceived and HeartbeatsRecorded are over all attempts; HeartbeatsPending is the
	// live attempt's.
	HeartbeatsReceived, HeartbeatsRecorded, HeartbeatsPending int64
	// SkippedExecuted counts, over all attempts, transactions the source sent although the
	// position the attempt started from contained them: dropped, never applied twice.
	SkippedExecuted int64
	// ApplyRetries counts, over all attempts, batches a worker rolled back and ran again after
	// the batches before it (--apply-workers above 1).
	ApplyRetries int64
	// RelayBlocked is the total time the reader waited on a full relay log.
	RelayBlocked time.Duration
	// RelayItems and RelayBytes are the relay log's fill; the Max fields its bounds.
	RelayItems, RelayBytes       int64
	RelayMaxItems, RelayMaxBytes int64
	// Lag is how far the target is behind the source (SPEC 9; see applier.Applier.LagSince).
	Lag time.Duration
	// Stalls counts stalls by detector, Errors stream errors by kind (see ErrorKind).
	Stalls map[stall.Detector]int64
	Errors map[string]int64
	// Mismatches counts the row changes --exec-mode idempotent wrote through, by table and kind,
	// over all attempts.
	Mismatches map[applier.MismatchKey]int64
	// CopyRows counts the rows the copy phase committed and CopyTime its time, over all
	// attempts; CopyTablesRemaining is the live copy's tables not done (0 when not copying).
	CopyRows            int64
	CopyTime            time.Duration
	CopyTablesRemaining int64
	// Held is the time the stream was held on purpose (a throttle, --apply-delay), over all
	// attempts; Hold is the kind of the hold in force (see throttle's Kind constants), "" when
	// none.
	Held time.Duration
	Hold string
	// SkippedStatements counts, over all attempts, data changes logged as statements that named
	// no replicated table and were passed over.
	SkippedStatements int64
	// Healthy and Reason are what /healthz answers.
	Healthy bool
	Reason  string
}

// Snapshot reads the stream now.
func (c *Collector) Snapshot() Snapshot {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Snapshot{
		State:         c.state,
		Attempts:      c.attempts,
		RelayMaxItems: int64(c.opts.RelayLogMaxItems),
		RelayMaxBytes: int64(c.opts.RelayLogMaxBytes),
		Stalls:        maps.Clone(c.stalls),
		Errors:        maps.Clone(c.errs),
	}
	total := c.done
	lagSince := c.lagBase
	if c.live != nil {
		live := c.live.sample(now)
		total.addCounters(live)
		s.HeartbeatsPending = live.heartbeatsPending
		s.RelayItems, s.RelayBytes = live.relayItems, live.relayBytes
		s.CopyTablesRemaining = live.copyRemaining
		s.Hold = live.hold
		if live.lagKnown {
			lagSince = live.lagSince
		}
	}
	c.blockedMax = max(c.blockedMax, total.blocked)
	s.Transactions, s.Rows, s.Commits = total.transactions, total.rows, total.commits
	s.Mismatches = total.mismatches
	s.PerCommit = total.perCommit
	s.HeartbeatsReceived, s.HeartbeatsRecorded = total.heartbeatsReceived, total.heartbeatsRecorded
	s.RelayBlocked = c.blockedMax
	s.SkippedExecuted = total.skippedExecuted
	s.ApplyRetries = total.applyRetries
	s.CopyRows, s.CopyTime = total.copyRows, total.copyTime
	s.Held, s.SkippedStatements = total.held, total.skippedStatements
	s.Lag = applier.LagAt(now, lagSince)
	s.Healthy, s.Reason = c.healthLocked(total.saves + total.heartbeatsRecorded)
	return s
}

// Health returns what /healthz answers: true and "ok" while the stream runs and has made
// progress since its last error; otherwise false and why.
func (c *Collector) Health() (healthy bool, reason string) {
	s := c.Snapshot()
	return s.Healthy, s.Reason
}

// progressLocked returns the count of progress (target commits and heartbeats recorded) over all
// attempts.
func (c *Collector) progressLocked(now time.Time) int64 {
	total := c.done
	if c.live != nil {
		total.addCounters(c.live.sample(now))
	}
	return total.saves + total.heartbeatsRecorded
}

// healthLocked applies the health rule, given the progress count now.
func (c *Collector) healthLocked(progress int64) (bool, string) {
	if c.errPending && progress > c.errMark {
		c.errPending = false // progress clears the error, as it clears the record's message
	}
	switch c.state {
	case workflow.StateInit:
		return false, "starting: no attempt has started yet"
	case stream.StateRetrying:
		return false, "waiting to retry after an error: " + c.lastErr
	case workflow.StateError:
		return false, "stopped on a terminal error: " + c.lastErr
	case workflow.StateStopped:
		return false, "stopped"
	case workflow.StateRunning, workflow.StateCopying:
		if c.errPending {
			return false, "no progress since the last error: " + c.lastErr
		}
		return true, "ok"
	}
	return false, "state " + c.state
}

// sortedKeys returns m's keys in order, for stable output.
func sortedKeys[K ~string, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}
