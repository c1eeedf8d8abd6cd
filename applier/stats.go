package applier

import "sync/atomic"

// Stats are cumulative counters, safe to read concurrently.
type Stats struct {
	Transactions atomic.Int64 // source transactions committed on the target
	Rows         atomic.Int64 // row changes applied
	Commits      atomic.Int64 // target commits that carried transactions
	// LastCommitted is the source commit time (unix seconds) of the last transaction committed.
	LastCommitted atomic.Int64
	// Heartbeats counts the source heartbeat events received.
	Heartbeats atomic.Int64
	// Saves counts target commits that saved a position, whatever they carried (transactions,
	// the position of skipped transactions or of a DDL): progress, as the record sees it.
	Saves atomic.Int64
	// Retries counts the batches a worker rolled back and ran again: held up by a lock of a
	// later batch that the writesets could not see, or chosen as a deadlock's victim.
	Retries atomic.Int64
	// PerCommit[i] counts the commits that carried transactions, by how many: at most
	// PerCommitBuckets[i] and more than PerCommitBuckets[i-1]; the last element counts the rest.
	PerCommit [len(PerCommitBuckets) + 1]atomic.Int64

	mismatches mismatchCounts
}

// PerCommitBuckets are the upper bounds of Stats.PerCommit's buckets, in source transactions per
// target commit.
var PerCommitBuckets = [...]int64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}

// observePerCommit counts one commit that carried n source transactions.
func (s *Stats) observePerCommit(n int) {
	i := 0
	for i < len(PerCommitBuckets) && int64(n) > PerCommitBuckets[i] {
		i++
	}
	s.PerCommit[i].Add(1)
}

// Stats returns the applier's counters.
func (a *Applier) Stats() *Stats { return &a.stats }
