package binlog

import (
	"encoding/binary"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// TestOwnGTIDEvent: a MariaDB GTID event whose decoded GTID was overwritten after parsing (as
// go-mysql's syncer does to the GTID it keeps a pointer to) reads as its raw bytes say; other
// events pass through.
func TestOwnGTIDEvent(t *testing.T) {
	raw := make([]byte, replication.EventHeaderSize+13+8)
	raw[4] = byte(replication.MARIADB_GTID_EVENT)
	binary.LittleEndian.PutUint32(raw[5:], 22)
	post := raw[replication.EventHeaderSize:]
	binary.LittleEndian.PutUint64(post, 519)
	binary.LittleEndian.PutUint32(post[8:], 3)
	post[12] = replication.BINLOG_MARIADB_FL_STANDALONE | replication.BINLOG_MARIADB_FL_GROUP_COMMIT_ID
	binary.LittleEndian.PutUint64(post[13:], 77)
	h := &replication.EventHeader{EventType: replication.MARIADB_GTID_EVENT, ServerID: 22}
	overwritten := &replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{DomainID: 3, ServerID: 22, SequenceNumber: 525}}
	ev, err := ownGTIDEvent(&replication.BinlogEvent{RawData: raw, Header: h, Event: overwritten})
	if err != nil {
		t.Fatal(err)
	}
	g := ev.Event.(*replication.MariadbGTIDEvent)
	if got, want := g.GTID, (mysql.MariadbGTID{DomainID: 3, ServerID: 22, SequenceNumber: 519}); got != want {
		t.Errorf("GTID %v, want %v", &got, &want)
	}
	if !g.IsStandalone() || g.CommitID != 77 {
		t.Errorf("flags %#x commit id %d, want standalone with commit id 77", g.Flags, g.CommitID)
	}
	if g == overwritten || overwritten.GTID.SequenceNumber != 525 {
		t.Error("the syncer's event was used or changed, want a copy of its own")
	}

	other := &replication.BinlogEvent{Header: h, Event: &replication.XIDEvent{}}
	if got, err := ownGTIDEvent(other); err != nil || got != other {
		t.Errorf("ownGTIDEvent(XID) = %v, %v; want the event itself", got, err)
	}
	if _, err := ownGTIDEvent(&replication.BinlogEvent{RawData: raw[:20], Header: h, Event: overwritten}); err == nil {
		t.Error("a truncated GTID event decoded without an error")
	}
}
