package binlog

import (
	"sync/atomic"

	"github.com/go-mysql-org/go-mysql/replication"
)

// Stats are the reader's counters, read by metrics at scrape time. They are cumulative over one
// Run.
type Stats struct {
	// SkippedExecuted counts transactions the source sent although their GTID was already in the
	// start position: never applied twice, whatever the server sends.
	SkippedExecuted atomic.Int64
	// SkippedStatements counts data changes logged as statements (binlog_format STATEMENT or
	// MIXED) that name no replicated table, and so were passed over.
	SkippedStatements atomic.Int64
	// SkippedOnlineDDLRows counts the rows events of online schema-change tools' shadow and
	// trash tables passed over; SkippedOnlineDDLStatements their statements (CREATE, ALTER, DROP,
	// RENAME) passed over, cut-overs that change nothing on the target included.
	SkippedOnlineDDLRows       atomic.Int64
	SkippedOnlineDDLStatements atomic.Int64
}

// Stats returns the reader's live counters.
func (r *Reader) Stats() *Stats { return &r.stats }

// executedSkip drops the transactions a source sends again. A transaction whose GTID the start
// position already contains was applied before (the start position is the one committed with the
// data): its events, from its GTID event up to the next GTID event, are dropped, and it is counted.
// Heartbeats and rotations inside that span still pass.
type executedSkip struct {
	start Position
	stats *Stats
	// active is set from an executed transaction's GTID event until the next GTID event.
	active bool
}

// drop reports whether ev is to be dropped: the GTID event of an executed transaction or an event
// after it, up to the next GTID event.
func (s *executedSkip) drop(ev replication.Event) bool {
	switch ev.(type) {
	case *replication.GTIDEvent, *replication.MariadbGTIDEvent:
		return s.gtid(ev)
	case *replication.HeartbeatEvent, *replication.RotateEvent:
		return false
	}
	return s.active
}

// gtid checks the GTID event ev against the start position; it reports whether the transaction
// it opens is to be dropped.
func (s *executedSkip) gtid(ev replication.Event) bool {
	s.active = false
	if s.start.GTID == nil {
		return false
	}
	switch e := ev.(type) {
	case *replication.GTIDEvent:
		if s.start.Flavor != FlavorMySQL || anonymous(e.SID) {
			return false
		}
		next, err := e.GTIDNext()
		if err != nil {
			return false // the translator reports the bad event
		}
		s.active = s.start.GTID.Contain(next)
	case *replication.MariadbGTIDEvent:
		if s.start.Flavor != FlavorMariaDB {
			return false
		}
		s.active = mariaContainsGTID(s.start.GTID, e.GTID)
	default:
		return false
	}
	if s.active && s.stats != nil {
		s.stats.SkippedExecuted.Add(1)
	}
	return s.active
}
