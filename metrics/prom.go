package metrics

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vplayer/vplayer/applier"
	"github.com/vplayer/vplayer/throttle"
)

// Metric names. Every metric carries the constant label workflow.
const (
	NameLag                   = "vplayer_lag_seconds"
	NameTransactions          = "vplayer_transactions_applied_total"
	NameRows                  = "vplayer_rows_applied_total"
	NameCommits               = "vplayer_commits_total"
	NameTransactionsPerCommit = "vplayer_transactions_per_commit"
	NameRelayBytes            = "vplayer_relaylog_bytes"
	NameRelayItems            = "vplayer_relaylog_items"
	NameRelayMaxBytes         = "vplayer_relaylog_max_bytes"
	NameRelayMaxItems         = "vplayer_relaylog_max_items"
	NameRelayBlocked          = "vplayer_relaylog_blocked_seconds_total"
	NameStalls                = "vplayer_stalls_total"
	NameHeartbeatsReceived    = "vplayer_heartbeats_received_total"
	NameHeartbeatsRecorded    = "vplayer_heartbeats_recorded_total"
	NameHeartbeatsPending     = "vplayer_heartbeats_pending"
	NameSkippedExecuted       = "vplayer_skipped_executed_total"
	NameApplyRetries          = "vplayer_apply_retries_total"
	NameErrors                = "vplayer_errors_total"
	NameState                 = "vplayer_state"
	NameAttempts              = "vplayer_attempts_total"
	NameHealthy               = "vplayer_healthy"
	NameRowMismatches         = "vplayer_row_mismatches_total"
	NameCopyRows              = "vplayer_copy_rows_total"
	NameCopyTablesRemaining   = "vplayer_copy_tables_remaining"
	NameCopySeconds           = "vplayer_copy_phase_seconds_total"
	NameBuildInfo             = "vplayer_build_info"
	NameThrottled             = "vplayer_throttled"
	NameThrottledSeconds      = "vplayer_throttled_seconds_total"
	NameSkippedStatements     = "vplayer_skipped_statements_total"
	NameApplyDelay            = "vplayer_apply_delay_seconds"
)

// HoldKinds are the values of vplayer_throttled's reason label.
var HoldKinds = []string{throttle.KindLoad, throttle.KindReplicaLag, throttle.KindManual, throttle.KindDelay}

// Build identifies the running binary: the labels of vplayer_build_info.
type Build struct {
	// Version is the main module's version: a release tag, a pseudo-version, or "(devel)".
	Version string
	// Revision is the VCS revision the binary was built from, or "unknown".
	Revision string
	// GoVersion is the Go toolchain that built it, e.g. "go1.26.8".
	GoVersion string
}

// descs are the Collector's metric descriptions.
type descs struct {
	lag, transactions, rows, commits, perCommit               *prometheus.Desc
	relayBytes, relayItems, relayMaxBytes, relayMaxItems      *prometheus.Desc
	relayBlocked, stalls                                      *prometheus.Desc
	heartbeatsReceived, heartbeatsRecorded, heartbeatsPending *prometheus.Desc
	errs, state, attempts, healthy                            *prometheus.Desc
	skippedExecuted, applyRetries                             *prometheus.Desc
	mismatches                                                *prometheus.Desc
	copyRows, copyRemaining, copyTime                         *prometheus.Desc
	buildInfo                                                 *prometheus.Desc
	throttled, throttledSeconds, skippedStatements            *prometheus.Desc
	applyDelay                                                *prometheus.Desc
}

func newDescs(workflow string) descs {
	labels := prometheus.Labels{"workflow": workflow}
	d := func(name, help string, variable ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, variable, labels)
	}
	return descs{
		lag: d(NameLag, "How far the target is behind the source, in seconds: now minus the source commit time of the oldest transaction "+
			"vplayer received and has not yet committed on the target; 0 when everything received is applied and the "+
			"source's last event or heartbeat arrived within its heartbeat period, else the time since it arrived. "+
			"Source commit times are whole seconds."),
		transactions:       d(NameTransactions, "Source transactions committed on the target."),
		rows:               d(NameRows, "Row changes applied to the target."),
		commits:            d(NameCommits, "Target commits that carried source transactions."),
		perCommit:          d(NameTransactionsPerCommit, "Source transactions per target commit."),
		relayBytes:         d(NameRelayBytes, "Bytes of binlog events buffered in the relay log."),
		relayItems:         d(NameRelayItems, "Events buffered in the relay log."),
		relayMaxBytes:      d(NameRelayMaxBytes, "The relay log's bound in bytes (--relay-log-max-size)."),
		relayMaxItems:      d(NameRelayMaxItems, "The relay log's bound in events (--relay-log-max-items)."),
		relayBlocked:       d(NameRelayBlocked, "Seconds the binlog reader spent blocked on a full relay log."),
		stalls:             d(NameStalls, "Stalls detected, by detector: relay_log, applier, heartbeat, copy or throttle (a throttle check that hung).", "detector"),
		heartbeatsReceived: d(NameHeartbeatsReceived, "Heartbeat events received from the source."),
		heartbeatsRecorded: d(NameHeartbeatsRecorded, "Heartbeats recorded in the workflow record (time_heartbeat writes committed)."),
		heartbeatsPending:  d(NameHeartbeatsPending, "Heartbeats received and not yet covered by a recorded heartbeat."),
		errs:               d(NameErrors, "Stream errors, by kind: stall, mysql_<error number>, terminal or other.", "kind"),
		state:              d(NameState, "1 for the stream's current state (Init, Copying, Running, Retrying, Stopped, Error), 0 for the others.", "state"),
		attempts:           d(NameAttempts, "Stream attempts started: the first, and one per retry after an error."),
		skippedExecuted: d(NameSkippedExecuted, "Transactions the source sent whose GTID the stream's start position already contained: "+
			"dropped by the reader, never applied twice."),
		applyRetries: d(NameApplyRetries, "Batches a worker rolled back and ran again after the batches before it (--apply-workers above 1): "+
			"held up by a lock of a later batch that the writesets could not see, or a deadlock's victim."),
		healthy: d(NameHealthy, "1 while /healthz answers 200: running and progressing since the last error; else 0."),
		mismatches: d(NameRowMismatches, "Row changes that did not match the target, written through by --exec-mode idempotent, by target table "+
			"and kind: update_missing, delete_missing, insert_exists.", "table", "kind"),
		copyRows:      d(NameCopyRows, "Rows the copy phase committed to the target."),
		copyRemaining: d(NameCopyTablesRemaining, "Tables whose copy is not done; 0 when the stream does not copy."),
		copyTime:      d(NameCopySeconds, "Seconds this process spent in the copy phase."),
		throttled: d(NameThrottled, "1 for the kind of the hold in force (load, replica_lag, manual, delay), 0 for the others: the stream holds back on purpose, "+
			"which is never a stall.", "reason"),
		throttledSeconds:  d(NameThrottledSeconds, "Seconds the stream was held on purpose: throttled or delayed."),
		applyDelay:        d(NameApplyDelay, "--apply-delay in seconds (0: off): the lag the stream keeps on purpose."),
		skippedStatements: d(NameSkippedStatements, "Data changes the source logged as statements (binlog_format STATEMENT or MIXED) that named no replicated table, passed over."),
		buildInfo: d(NameBuildInfo, "Always 1, in every state: the binary's module version, VCS revision and Go version as labels.",
			"version", "revision", "goversion"),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	d := &c.descs
	for _, x := range []*prometheus.Desc{
		d.lag, d.transactions, d.rows, d.commits, d.perCommit,
		d.relayBytes, d.relayItems, d.relayMaxBytes, d.relayMaxItems,
		d.relayBlocked, d.stalls,
		d.heartbeatsReceived, d.heartbeatsRecorded, d.heartbeatsPending,
		d.errs, d.state, d.attempts, d.healthy, d.mismatches, d.skippedExecuted, d.applyRetries,
		d.copyRows, d.copyRemaining, d.copyTime, d.buildInfo,
		d.throttled, d.throttledSeconds, d.skippedStatements, d.applyDelay,
	} {
		ch <- x
	}
}

// Collect implements prometheus.Collector: one Snapshot, O(1).
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.Snapshot()
	d := &c.descs
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	counter := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, v, labels...)
	}
	gauge(d.lag, s.Lag.Seconds())
	counter(d.transactions, float64(s.Transactions))
	counter(d.rows, float64(s.Rows))
	counter(d.commits, float64(s.Commits))

	buckets := make(map[float64]uint64, len(applier.PerCommitBuckets))
	var cumulative uint64
	for i, upper := range applier.PerCommitBuckets {
		cumulative += uint64(s.PerCommit[i])
		buckets[float64(upper)] = cumulative
	}
	count := cumulative + uint64(s.PerCommit[len(applier.PerCommitBuckets)])
	ch <- prometheus.MustNewConstHistogram(d.perCommit, count, float64(s.Transactions), buckets)

	gauge(d.relayBytes, float64(s.RelayBytes))
	gauge(d.relayItems, float64(s.RelayItems))
	gauge(d.relayMaxBytes, float64(s.RelayMaxBytes))
	gauge(d.relayMaxItems, float64(s.RelayMaxItems))
	counter(d.relayBlocked, s.RelayBlocked.Seconds())
	for _, det := range sortedKeys(s.Stalls) {
		counter(d.stalls, float64(s.Stalls[det]), string(det))
	}
	counter(d.heartbeatsReceived, float64(s.HeartbeatsReceived))
	counter(d.heartbeatsRecorded, float64(s.HeartbeatsRecorded))
	gauge(d.heartbeatsPending, float64(s.HeartbeatsPending))
	counter(d.skippedExecuted, float64(s.SkippedExecuted))
	counter(d.applyRetries, float64(s.ApplyRetries))
	counter(d.copyRows, float64(s.CopyRows))
	gauge(d.copyRemaining, float64(s.CopyTablesRemaining))
	counter(d.copyTime, s.CopyTime.Seconds())
	for _, k := range HoldKinds {
		gauge(d.throttled, boolFloat(k == s.Hold), k)
	}
	counter(d.throttledSeconds, s.Held.Seconds())
	counter(d.skippedStatements, float64(s.SkippedStatements))
	gauge(d.applyDelay, c.opts.ApplyDelay.Seconds())
	for _, kind := range sortedKeys(s.Errors) {
		counter(d.errs, float64(s.Errors[kind]), kind)
	}
	for k, n := range s.Mismatches {
		counter(d.mismatches, float64(n), k.Table, string(k.Kind))
	}
	states := States
	if !slices.Contains(states, s.State) {
		states = append(states[:len(states):len(states)], s.State)
	}
	for _, st := range states {
		gauge(d.state, boolFloat(st == s.State), st)
	}
	counter(d.attempts, float64(s.Attempts))
	gauge(d.healthy, boolFloat(s.Healthy))
	b := c.opts.Build
	gauge(d.buildInfo, 1, b.Version, b.Revision, b.GoVersion)
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
