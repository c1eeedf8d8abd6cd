package binlog

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vplayer/vplayer/event"
)

// TestTranslator_SkipsExecuted: a source that sends again transactions the start position
// contains (a server that ignores the dump's GTID set) gets none of them applied twice; they are
// counted, and the first new transaction and heartbeats in between pass as usual.
func TestTranslator_SkipsExecuted(t *testing.T) {
	byEnd := realEvents(t)
	custMap := realEvent(t, byEnd, endCustomersMap, &replication.TableMapEvent{})
	custRows := realEvent(t, byEnd, endCustomersInsert, &replication.RowsEvent{})
	ev := func(e replication.Event) *replication.BinlogEvent {
		return &replication.BinlogEvent{Header: hdr(1700000000, 0, 40), Event: e}
	}
	mysqlGTID := func(u string, gno int64) *replication.BinlogEvent {
		return ev(&replication.GTIDEvent{SID: sid(t, u), GNO: gno})
	}
	mariaGTID := func(server uint32, seq uint64, standalone bool) *replication.BinlogEvent {
		var flags byte
		if standalone {
			flags = replication.BINLOG_MARIADB_FL_STANDALONE
		}
		return ev(&replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{DomainID: 0, ServerID: server, SequenceNumber: seq}, Flags: flags})
	}
	query := func(q string) *replication.BinlogEvent {
		return ev(&replication.QueryEvent{Schema: []byte("shop"), Query: []byte(q)})
	}
	xid := func() *replication.BinlogEvent { return ev(&replication.XIDEvent{XID: 1}) }
	heartbeat := ev(&replication.HeartbeatEvent{})
	rotate := ev(&replication.RotateEvent{NextLogName: []byte("binlog.000002"), Position: 4})

	tests := []struct {
		name        string
		start       string
		events      []*replication.BinlogEvent
		want        []string
		wantSkipped int64
	}{
		{
			name:  "mysql history sent again",
			start: "MySQL56/" + uuidA + ":1-5," + uuidB + ":1-2",
			events: []*replication.BinlogEvent{
				mysqlGTID(uuidA, 4), query("BEGIN"), custMap, custRows, xid(),
				heartbeat,
				mysqlGTID(uuidB, 2), query("BEGIN"), custMap, custRows, query("COMMIT"),
				rotate,
				mysqlGTID(uuidA, 5), query("ALTER TABLE customers ADD COLUMN x INT"),
				mysqlGTID(uuidA, 6), query("BEGIN"), custMap, custRows, xid(),
			},
			want:        []string{"HEARTBEAT", "BEGIN", "ROWS INSERT " + customers3 + " 3", "COMMIT MySQL56/" + uuidA + ":1-6," + uuidB + ":1-2"},
			wantSkipped: 3,
		},
		{
			name:  "mysql compressed transaction sent again",
			start: "MySQL56/" + uuidA + ":1-5",
			events: []*replication.BinlogEvent{
				mysqlGTID(uuidA, 5),
				ev(&replication.TransactionPayloadEvent{Events: []*replication.BinlogEvent{query("BEGIN"), custMap, custRows, xid()}}),
				mysqlGTID(uuidB, 1), query("BEGIN"), custMap, custRows, xid(),
			},
			want:        []string{"BEGIN", "ROWS INSERT " + customers3 + " 3", "COMMIT MySQL56/" + uuidA + ":1-5," + uuidB + ":1"},
			wantSkipped: 1,
		},
		{
			name:  "mysql anonymous transactions are never skipped",
			start: "MySQL56/" + uuidA + ":1-5",
			events: []*replication.BinlogEvent{
				ev(&replication.GTIDEvent{SID: make([]byte, 16), GNO: 0}), query("BEGIN"), custMap, custRows, xid(),
			},
			want:        []string{"BEGIN", "ROWS INSERT " + customers3 + " 3", "COMMIT MySQL56/" + uuidA + ":1-5"},
			wantSkipped: 0,
		},
		{
			name:  "mariadb history sent again, older server ids included",
			start: "MariaDB/0-2-5",
			events: []*replication.BinlogEvent{
				mariaGTID(1, 3, false), custMap, custRows, xid(),
				mariaGTID(2, 4, true), query("ALTER TABLE customers ADD COLUMN x INT"),
				heartbeat,
				mariaGTID(2, 5, false), custMap, custRows, xid(),
				mariaGTID(2, 6, false), custMap, custRows, xid(),
			},
			want:        []string{"HEARTBEAT", "BEGIN", "ROWS INSERT " + customers3 + " 3", "COMMIT MariaDB/0-2-6"},
			wantSkipped: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stats Stats
			tr := newTranslator(mustParse(t, tt.start, ""), mustFilter(t, "shop"))
			tr.skip.stats = &stats
			got := translateAll(t, tr, tt.events)
			diffLines(t, "events", summaries(got), tt.want)
			if got, want := stats.SkippedExecuted.Load(), tt.wantSkipped; got != want {
				t.Errorf("SkippedExecuted = %d, want %d", got, want)
			}
		})
	}
}

// TestTranslator_SkipsExecutedCapture replays a real MariaDB binlog from its first event with the
// position at its end: every group is dropped and counted, no row change passes.
func TestTranslator_SkipsExecutedCapture(t *testing.T) {
	c := loadCapture(t, basicCapture)
	var stats Stats
	tr := newTranslator(mustParse(t, "MariaDB/"+c.gtidPos, ""), mustFilter(t, "shop"))
	tr.skip.stats = &stats
	for _, e := range translateAll(t, tr, parseCapture(t, c, 4)) {
		if e.Type != event.Heartbeat {
			t.Errorf("event %s passed; want every executed group dropped", summary(e))
		}
	}
	if got, want := stats.SkippedExecuted.Load(), int64(len(c.groups)); got != want {
		t.Errorf("SkippedExecuted = %d, want one per group of the capture, %d", got, want)
	}
	if got, want := tr.position().String(), "MariaDB/"+c.gtidPos; got != want {
		t.Errorf("position = %q, want it unchanged at %q", got, want)
	}
}
