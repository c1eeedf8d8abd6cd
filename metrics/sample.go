package metrics

import (
	"time"

	"github.com/vplayer/vplayer/applier"
	"github.com/vplayer/vplayer/stream"
)

// sample is one reading of an attempt's pipeline. Counters are cumulative over the attempt;
// the relay log fill and pending heartbeats are gauges.
type sample struct {
	transactions, rows, commits int64
	// saves counts target commits of any kind; with heartbeatsRecorded, the progress that clears
	// an error.
	saves     int64
	perCommit [len(applier.PerCommitBuckets) + 1]int64

	heartbeatsReceived, heartbeatsRecorded int64
	heartbeatsPending                      int64
	// skippedExecuted counts transactions the source sent again and the reader dropped.
	skippedExecuted int64
	// applyRetries counts batches a worker rolled back and ran again.
	applyRetries int64

	// blocked is the reader's total time blocked on a full relay log, the current wait included.
	blocked                time.Duration
	relayItems, relayBytes int64

	lagSince time.Time
	lagKnown bool

	mismatches map[applier.MismatchKey]int64

	// copyRows counts rows the copy phase committed, copyTime its time; copyRemaining is the
	// live copy's tables not done (a gauge), copying whether the attempt copies.
	copyRows      int64
	copyTime      time.Duration
	copyRemaining int64
	copying       bool

	// held is the attempt's time held on purpose; hold the hold in force (a gauge).
	held              time.Duration
	hold              string // the hold's kind, "" when none
	skippedStatements int64
}

// addCounters adds o's counters to s; gauges and lag are left alone.
func (s *sample) addCounters(o sample) {
	s.transactions += o.transactions
	s.rows += o.rows
	s.commits += o.commits
	s.saves += o.saves
	for i := range s.perCommit {
		s.perCommit[i] += o.perCommit[i]
	}
	s.heartbeatsReceived += o.heartbeatsReceived
	s.heartbeatsRecorded += o.heartbeatsRecorded
	s.blocked += o.blocked
	s.skippedExecuted += o.skippedExecuted
	s.applyRetries += o.applyRetries
	s.copyRows += o.copyRows
	s.copyTime += o.copyTime
	s.held += o.held
	s.skippedStatements += o.skippedStatements
	if len(o.mismatches) > 0 {
		m := make(map[applier.MismatchKey]int64, len(s.mismatches)+len(o.mismatches))
		for k, v := range s.mismatches {
			m[k] = v
		}
		for k, v := range o.mismatches {
			m[k] += v
		}
		s.mismatches = m
	}
}

// pipeline is what the collector reads of one attempt. Reading must be O(1) and never block.
type pipeline interface {
	sample(now time.Time) sample
}

// attemptPipeline reads a stream attempt's relay log, applier and heartbeat recorder.
type attemptPipeline struct{ a *stream.Attempt }

var _ pipeline = attemptPipeline{}

func (p attemptPipeline) sample(now time.Time) sample {
	var s sample
	if app := p.a.Applier; app != nil {
		st := app.Stats()
		s.transactions = st.Transactions.Load()
		s.rows = st.Rows.Load()
		s.commits = st.Commits.Load()
		s.saves = st.Saves.Load()
		for i := range s.perCommit {
			s.perCommit[i] = st.PerCommit[i].Load()
		}
		s.heartbeatsReceived = st.Heartbeats.Load()
		s.lagSince, s.lagKnown = app.LagSince()
		s.mismatches = st.Mismatches()
		s.applyRetries = st.Retries.Load()
	}
	if hb := p.a.Heartbeat; hb != nil {
		s.heartbeatsRecorded = hb.Recorded()
		s.heartbeatsPending = hb.Pending()
	}
	if r := p.a.Reader; r != nil {
		s.skippedExecuted = r.Stats().SkippedExecuted.Load()
		s.skippedStatements = r.Stats().SkippedStatements.Load()
	}
	if h := p.a.Holds; h != nil {
		s.held = h.HeldTotal(now)
		if hold, ok := h.Hold(); ok {
			s.hold = hold.Kind
		}
	}
	if c := p.a.Copier; c != nil {
		s.copyRows, s.copyTime = c.RowsCopied(), c.Elapsed(now)
		s.copyRemaining, s.copying = c.TablesRemaining(), true
	}
	if r := p.a.Relay; r != nil {
		s.relayItems = int64(r.Len())
		s.relayBytes = int64(r.Size())
		s.blocked = r.BlockedTotal()
		if since, ok := r.Blocked(); ok {
			s.blocked += max(now.Sub(since), 0)
		}
	}
	return s
}
