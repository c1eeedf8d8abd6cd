package binlog

import (
	"fmt"

	"github.com/go-mysql-org/go-mysql/replication"
)

// ownGTIDEvent returns ev with a MariaDB GTID event decoded afresh from its raw bytes; other
// events are returned as they are.
//
// go-mysql's syncer keeps the GTID set it has streamed so far (for its own reconnects, which
// vplayer turns off), and when a domain gains a server id it stores a pointer to that event's
// GTID field in the set; every later GTID of that server id then overwrites it, from the
// syncer's goroutine. The synchronous handler translates each event before the syncer reads the
// next, but an event kept past its handling, or a syncer that caches events again, would see its
// GTID read as a later transaction's, and a position recorded from it would skip transactions.
// Its raw bytes are never written after parsing.
func ownGTIDEvent(ev *replication.BinlogEvent) (*replication.BinlogEvent, error) {
	if _, ok := ev.Event.(*replication.MariadbGTIDEvent); !ok {
		return ev, nil
	}
	// Post-header: seq_no (8), domain id (4), flags (1), commit id (8, with FL_GROUP_COMMIT_ID).
	if len(ev.RawData) < replication.EventHeaderSize+13 {
		return nil, fmt.Errorf("decode MariaDB GTID event: %d bytes, want at least %d", len(ev.RawData), replication.EventHeaderSize+13)
	}
	g := &replication.MariadbGTIDEvent{}
	g.GTID.ServerID = ev.Header.ServerID
	if err := g.Decode(ev.RawData[replication.EventHeaderSize:]); err != nil {
		return nil, fmt.Errorf("decode MariaDB GTID event: %w", err)
	}
	return &replication.BinlogEvent{RawData: ev.RawData, Header: ev.Header, Event: g}, nil
}
