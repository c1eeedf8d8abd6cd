// Package throttle decides whether a stream holds back on purpose: the target too loaded (a
// status variable over its threshold), a replica of the target too far behind, or an operator's
// manual throttle. It only decides; the stream's gate holds the applier and the copy while a hold
// is in force, and the stall watchdog, which never counts held time, watches the check itself: a
// check that hangs is a stall (SPEC 4.5).
package throttle

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Kinds of hold. Their values are stable and used as the value of a metrics label.
const (
	KindLoad       = "load"
	KindReplicaLag = "replica_lag"
	KindManual     = "manual"
	KindDelay      = "delay"
)

// Hold is why a stream is held on purpose, and since when.
type Hold struct {
	Kind   string    // one of the Kind constants
	Reason string    // e.g. "Threads_running 130 > 100"
	Since  time.Time // when the hold began (it may have changed its reason since)
}

// Message is the record's message for h at now: "throttled: Threads_running 130 > 100 since
// 12:00:03 (3m12s)", or for a delay "delayed: ...".
func (h Hold) Message(now time.Time) string {
	verb := "throttled"
	if h.Kind == KindDelay {
		verb = "delayed"
	}
	return fmt.Sprintf("%s: %s since %s (%s)", verb, h.Reason, h.Since.UTC().Format("15:04:05"), now.Sub(h.Since).Truncate(time.Second))
}

// Threshold is a status variable of the target and the value above which the target is too
// loaded, as gh-ost's --max-load takes them.
type Threshold struct {
	Name string
	Max  int64
}

// ParseMaxLoad parses NAME=VALUE[,NAME=VALUE...]: status variables (Threads_running by default
// in the flag) and their maximum values. An empty string is no threshold.
func ParseMaxLoad(s string) ([]Threshold, error) {
	var out []Threshold
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || strings.ContainsAny(name, " '`\"") {
			return nil, fmt.Errorf("%q: want NAME=VALUE, a status variable of the target and its maximum (Threads_running=100)", part)
		}
		max, err := strconv.ParseInt(value, 10, 64)
		if err != nil || max < 0 {
			return nil, fmt.Errorf("%q: the value must be a non-negative integer", part)
		}
		out = append(out, Threshold{Name: name, Max: max})
	}
	return out, nil
}

// Replica is a replica of the target whose lag holds the stream back.
type Replica struct {
	Name string // host:port, for messages; never a password
	DB   *sql.DB
}

// Manual is the operator's throttle, as the stream last read it from the workflow's record.
type Manual struct {
	Until  time.Time // zero: none
	Reason string
}

// Config configures a Throttler. Every source is optional.
type Config struct {
	Target        *sql.DB // the target, for MaxLoad
	MaxLoad       []Threshold
	Replicas      []Replica
	MaxReplicaLag time.Duration // > 0 with Replicas
	// Manual returns the manual throttle in force; it must not block (the stream reads the
	// record on its own schedule and keeps the answer).
	Manual func() Manual
	// Interval is how often the sources are checked; 1s when zero.
	Interval time.Duration
	Now      func() time.Time
}

// Enabled reports whether any source is configured.
func (c Config) Enabled() bool {
	return len(c.MaxLoad) > 0 || len(c.Replicas) > 0 || c.Manual != nil
}

// Throttler checks its sources once per Interval and publishes the hold in force. Its methods
// other than Run are safe from any goroutine and never block.
type Throttler struct {
	cfg      Config
	hold     atomic.Pointer[Hold]
	checking atomic.Pointer[inFlight]

	mu      sync.Mutex
	changed chan struct{} // closed at the next start or end of a hold, then replaced
}

type inFlight struct {
	name  string
	since time.Time
}

// New returns a Throttler; it checks nothing until Run.
func New(cfg Config) *Throttler {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Throttler{cfg: cfg, changed: make(chan struct{})}
}

// Run checks the sources at once and then every Interval until ctx ends, and returns ctx's error.
// A check that does not answer keeps Run waiting: the stall watchdog sees it through InFlight.
func (t *Throttler) Run(ctx context.Context) error {
	tick := time.NewTicker(t.cfg.Interval)
	defer tick.Stop()
	for {
		t.evaluate(ctx)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Held returns the hold in force, if any.
func (t *Throttler) Held() (Hold, bool) {
	if h := t.hold.Load(); h != nil {
		return *h, true
	}
	return Hold{}, false
}

// Changed returns a channel closed when the hold next begins or ends: every waiter sees it.
func (t *Throttler) Changed() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.changed
}

// signal wakes every waiter on Changed.
func (t *Throttler) signal() {
	t.mu.Lock()
	defer t.mu.Unlock()
	close(t.changed)
	t.changed = make(chan struct{})
}

// InFlight returns the check running now and when it started; zero when none runs.
func (t *Throttler) InFlight() (name string, since time.Time) {
	if c := t.checking.Load(); c != nil {
		return c.name, c.since
	}
	return "", time.Time{}
}

// evaluate runs every source's check, in order, and publishes the first that holds.
func (t *Throttler) evaluate(ctx context.Context) {
	kind, reason := t.check(ctx)
	if ctx.Err() != nil {
		return
	}
	prev := t.hold.Load()
	switch {
	case kind == "" && prev == nil:
		return
	case kind == "":
		t.hold.Store(nil)
	case prev != nil && prev.Kind == kind:
		if prev.Reason == reason {
			return
		}
		t.hold.Store(&Hold{Kind: kind, Reason: reason, Since: prev.Since})
		return // the same hold, new figures: no change to announce
	default:
		since := t.cfg.Now()
		if prev != nil {
			since = prev.Since
		}
		t.hold.Store(&Hold{Kind: kind, Reason: reason, Since: since})
		if prev != nil {
			return
		}
	}
	t.signal()
}

// check returns the kind and reason of the first source that holds the stream, or "".
func (t *Throttler) check(ctx context.Context) (kind, reason string) {
	if t.cfg.Manual != nil {
		if m := t.cfg.Manual(); !m.Until.IsZero() && t.cfg.Now().Before(m.Until) {
			return KindManual, manualReason(m)
		}
	}
	if len(t.cfg.MaxLoad) > 0 {
		if reason := t.load(ctx); reason != "" {
			return KindLoad, reason
		}
	}
	for _, r := range t.cfg.Replicas {
		if reason := t.replicaLag(ctx, r); reason != "" {
			return KindReplicaLag, reason
		}
	}
	return "", ""
}

// forever is the throttle_until of a manual throttle without --for.
var forever = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// Forever is the Until of a manual throttle that holds until `vplayer unthrottle`.
func Forever() time.Time { return forever }

func manualReason(m Manual) string {
	reason := "manual throttle"
	if m.Reason != "" {
		reason += " (" + m.Reason + ")"
	}
	if m.Until.Before(forever) {
		reason += " until " + m.Until.UTC().Format("15:04:05")
	}
	return reason
}

// begin marks the check name in flight; the returned func ends it.
func (t *Throttler) begin(name string) func() {
	t.checking.Store(&inFlight{name: name, since: t.cfg.Now()})
	return func() { t.checking.Store(nil) }
}

// load returns the reason the target is too loaded, or "". A status that cannot be read does not
// hold the stream: the applier meets an unreachable target itself.
func (t *Throttler) load(ctx context.Context) string {
	defer t.begin("the target's status (--max-load)")()
	marks := strings.Repeat(",?", len(t.cfg.MaxLoad))[1:]
	args := make([]any, len(t.cfg.MaxLoad))
	for i, th := range t.cfg.MaxLoad {
		args[i] = th.Name
	}
	rows, err := t.cfg.Target.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ("+marks+")", args...)
	if err != nil {
		return ""
	}
	defer rows.Close()
	values := map[string]int64{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return ""
		}
		if n, err := strconv.ParseInt(value, 10, 64); err == nil {
			values[strings.ToLower(name)] = n
		}
	}
	for _, th := range t.cfg.MaxLoad {
		if v, ok := values[strings.ToLower(th.Name)]; ok && v > th.Max {
			return fmt.Sprintf("%s %d > %d", th.Name, v, th.Max)
		}
	}
	return ""
}

// replicaLag returns the reason replica r holds the stream, or "": lag over the maximum,
// replication stopped (no lag to read), or the replica unreachable, which holds rather than
// crashes.
func (t *Throttler) replicaLag(ctx context.Context, r Replica) string {
	defer t.begin("the lag of replica " + r.Name + " (--throttle-replicas)")()
	lag, err := ReplicaLag(ctx, r.DB)
	switch {
	case ctx.Err() != nil:
		return ""
	case err != nil:
		return fmt.Sprintf("replica %s: %v", r.Name, err)
	case lag < 0:
		return fmt.Sprintf("replica %s is not replicating (Seconds_Behind_Master is NULL)", r.Name)
	case lag > t.cfg.MaxReplicaLag:
		return fmt.Sprintf("replica %s lag %s > %s", r.Name, lag, t.cfg.MaxReplicaLag)
	}
	return ""
}

// ReplicaLag reads a replica's lag from its replication status: MariaDB's Seconds_Behind_Master
// (SHOW SLAVE STATUS) or MySQL's Seconds_Behind_Source (SHOW REPLICA STATUS); the largest of its
// channels. -1 when a channel's is NULL (replication stopped).
func ReplicaLag(ctx context.Context, db *sql.DB) (time.Duration, error) {
	rows, err := db.QueryContext(ctx, "SHOW ALL SLAVES STATUS")
	if err != nil {
		// MySQL: no ALL SLAVES form.
		if rows, err = db.QueryContext(ctx, "SHOW REPLICA STATUS"); err != nil {
			return 0, fmt.Errorf("read its replication status: %w", err)
		}
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return 0, err
	}
	at := -1
	for i, c := range cols {
		if strings.EqualFold(c, "Seconds_Behind_Master") || strings.EqualFold(c, "Seconds_Behind_Source") {
			at = i
		}
	}
	if at < 0 {
		return 0, fmt.Errorf("its replication status has no Seconds_Behind_Master")
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	channels := 0
	var worst time.Duration
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return 0, err
		}
		channels++
		if vals[at] == nil {
			return -1, nil
		}
		n, err := strconv.ParseInt(string(vals[at]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("Seconds_Behind_Master %q", vals[at])
		}
		worst = max(worst, time.Duration(n)*time.Second)
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if channels == 0 {
		return 0, fmt.Errorf("it is not a replica (its replication status is empty)")
	}
	return worst, nil
}
