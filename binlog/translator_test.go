package binlog

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vplayer/vplayer/event"
)

// Hand-built streams: what the captures do not contain (MySQL framing, heartbeats, failed
// statements, non-transactional commits), with table maps and rows events from the capture.

// realEvents returns the capture's go-mysql events by their end position (header LogPos).
func realEvents(t *testing.T) map[uint32]*replication.BinlogEvent {
	t.Helper()
	c := loadCapture(t, basicCapture)
	byEnd := map[uint32]*replication.BinlogEvent{}
	for _, ev := range parseCapture(t, c, 4) {
		byEnd[ev.Header.LogPos] = ev
	}
	return byEnd
}

// Ends (End_log_pos) of events of the capture used by the hand-built streams below; checked
// against events.tsv by realEvent.
const (
	endCustomersMap    = 1516 // Table_map shop.customers (3 columns)
	endCustomersInsert = 1586 // Write_rows: the 3 customers
	endLogMap          = 2353 // Table_map other.log
	endLogInsert       = 2400 // Write_rows: 2 rows of other.log
)

func realEvent(t *testing.T, byEnd map[uint32]*replication.BinlogEvent, end uint32, want any) *replication.BinlogEvent {
	t.Helper()
	ev, ok := byEnd[end]
	if !ok {
		t.Fatalf("no capture event ends at %d: regenerated capture? update the end constants", end)
	}
	if got, want := fmt.Sprintf("%T", ev.Event), fmt.Sprintf("%T", want); got != want {
		t.Fatalf("capture event ending at %d is a %s, want %s", end, got, want)
	}
	return ev
}

func hdr(ts uint32, logPos uint32, size uint32) *replication.EventHeader {
	return &replication.EventHeader{Timestamp: ts, LogPos: logPos, EventSize: size, ServerID: 1}
}

func mysqlSet(t *testing.T, s string) mysql.GTIDSet {
	t.Helper()
	set, err := mysql.ParseMysqlGTIDSet(s)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// sid returns server uuid u as the 16 bytes a MySQL GTID event carries.
func sid(t *testing.T, u string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(u, "-", ""))
	if err != nil || len(b) != 16 {
		t.Fatalf("server uuid %q: %v", u, err)
	}
	return b
}

// withLogPos returns a copy of ev whose header says the event ends at logPos. Events inside a
// MySQL transaction payload come from the transaction cache with an end of 0.
func withLogPos(ev *replication.BinlogEvent, logPos uint32) *replication.BinlogEvent {
	h := *ev.Header
	h.LogPos = logPos
	return &replication.BinlogEvent{Header: &h, Event: ev.Event, RawData: ev.RawData}
}

// TestTranslator_HandBuilt feeds streams that the capture does not contain: MySQL framing and
// GTIDs, compressed transactions, heartbeats, a failed statement, a non-transactional commit, a
// savepoint, DDL on tables in and out of the filter. Rows and table maps come from the capture.
func TestTranslator_HandBuilt(t *testing.T) {
	byEnd := realEvents(t)
	custMap := realEvent(t, byEnd, endCustomersMap, &replication.TableMapEvent{})
	custRows := realEvent(t, byEnd, endCustomersInsert, &replication.RowsEvent{})
	logMap := realEvent(t, byEnd, endLogMap, &replication.TableMapEvent{})
	logRows := realEvent(t, byEnd, endLogInsert, &replication.RowsEvent{})

	const ts = 1700000000
	mysqlStart := Position{Flavor: FlavorMySQL, GTID: mysqlSet(t, uuidA+":1-5")}
	ev := func(logPos uint32, e replication.Event) *replication.BinlogEvent {
		return &replication.BinlogEvent{Header: hdr(ts, logPos, 40), Event: e}
	}
	mariaGTID := func(seq uint64, standalone bool) *replication.BinlogEvent {
		var flags byte
		if standalone {
			flags = replication.BINLOG_MARIADB_FL_STANDALONE
		}
		return ev(0, &replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{DomainID: 0, ServerID: 1, SequenceNumber: seq}, Flags: flags})
	}
	query := func(schema, q string) *replication.BinlogEvent {
		return ev(0, &replication.QueryEvent{Schema: []byte(schema), Query: []byte(q)})
	}
	// mysqlGTID is the GTID event of transaction u:gno.
	mysqlGTID := func(u string, gno int64) *replication.BinlogEvent {
		return ev(0, &replication.GTIDEvent{SID: sid(t, u), GNO: gno})
	}
	xid := func() *replication.BinlogEvent { return ev(0, &replication.XIDEvent{XID: 1}) }
	payload := func(logPos uint32, inner ...*replication.BinlogEvent) *replication.BinlogEvent {
		return ev(logPos, &replication.TransactionPayloadEvent{Events: inner})
	}
	// mysqlDDL is a standalone MySQL statement: its GTID event, then the statement.
	mysqlDDL := func(gno int64, schema, q string) []*replication.BinlogEvent {
		return []*replication.BinlogEvent{mysqlGTID(uuidA, gno), query(schema, q)}
	}

	tests := []struct {
		name   string
		start  Position
		filter *Filter
		events []*replication.BinlogEvent
		want   []string
		bug    string // non-empty: a known bug, the case skips
	}{
		{
			name:   "mysql transaction",
			start:  mysqlStart,
			filter: mustFilter(t, "shop"),
			events: []*replication.BinlogEvent{
				mysqlGTID(uuidA, 6),
				query("shop", "BEGIN"),
				custMap, custRows,
				xid(),
			},
			want: []string{"BEGIN", "ROWS INSERT " + customers3 + " 3", "COMMIT MySQL56/" + uuidA + ":1-6"},
		},
		{
			name:   "mysql transactions from two servers",
			start:  mysqlStart,
			filter: mustFilter(t, "shop"),
			events: []*replication.BinlogEvent{
				mysqlGTID(uuidB, 1), query("shop", "BEGIN"), custMap, custRows, xid(),
				mysqlGTID(uuidA, 6), query("shop", "BEGIN"), custMap, custRows, xid(),
			},
			want: []string{
				"BEGIN", "ROWS INSERT " + customers3 + " 3", "COMMIT MySQL56/" + uuidA + ":1-5," + uuidB + ":1",
				"BEGIN", "ROWS INSERT " + customers3 + " 3", "COMMIT MySQL56/" + uuidA + ":1-6," + uuidB + ":1",
			},
		},
		{
			name:   "mysql gtid after a gap",
			start:  mysqlStart,
			filter: mustFilter(t, "shop"),
			events: []*replication.BinlogEvent{mysqlGTID(uuidA, 9), query("shop", "BEGIN"), logMap, logRows, xid()},
			want:   []string{"SKIP MySQL56/" + uuidA + ":1-5:9"},
		},
		{
			// The translator keeps its own GTID set; go-mysql's GSet is not read.
			name:   "mysql gtid set of go-mysql ignored",
			start:  mysqlStart,
			filter: mustFilter(t, "shop"),
			events: []*replication.BinlogEvent{
				mysqlGTID(uuidA, 6),
				ev(0, &replication.QueryEvent{Schema: []byte("shop"), Query: []byte("BEGIN"), GSet: mysqlSet(t, uuidB+":1-100")}),
				custMap, custRows,
				ev(0, &replication.XIDEvent{XID: 1, GSet: mysqlSet(t, uuidB+":1-100")}),
			},
			want: []string{"BEGIN", "ROWS INSERT " + customers3 + " 3", "COMMIT MySQL56/" + uuidA + ":1-6"},
		},
		{
			name:   "mysql DDL",
			start:  mysqlStart,
			filter: mustFilter(t, "shop"),
			events: mysqlDDL(6, "shop", "ALTER TABLE customers ADD x INT"),
			want:   []string{"DDL MySQL56/" + uuidA + ":1-6 shop ALTER TABLE customers ADD x INT"},
		},
		{
			name:   "mysql transaction on another database",
			start:  mysqlStart,
			filter: mustFilter(t, "shop"),
			events: []*replication.BinlogEvent{
				mysqlGTID(uuidA, 6),
				query("other", "BEGIN"),
				logMap, logRows,
				xid(),
			},
			want: []string{"SKIP MySQL56/" + uuidA + ":1-6"},
		},
		{
			name:   "mysql non-transactional commit",
			start:  mysqlStart,
			filter: mustFilter(t, "shop"),
			events: []*replication.BinlogEvent{
				mysqlGTID(uuidA, 6),
				query("shop", "BEGIN"),
				custMap, custRows,
				query("shop", "COMMIT"),
			},
			want: []string{"BEGIN", "ROWS INSERT " + customers3 + " 3", "COMMIT MySQL56/" + uuidA + ":1-6"},
		},
		{
			// binlog_transaction_compression: the GTID event stays outside the payload.
			name:   "mysql compressed transaction",
			start:  mysqlStart,
			filter: mustFilter(t, "shop"),
			events: []*replication.BinlogEvent{
				mysqlGTID(uuidA, 6),
				payload(0, query("shop", "BEGIN"), custMap, custRows, xid()),
			},
			want: []string{"BEGIN", "ROWS INSERT " + customers3 + " 3", "COMMIT MySQL56/" + uuidA + ":1-6"},
		},
		{
			name:   "mysql compressed transaction on another database",
			start:  mysqlStart,
			filter: mustFilter(t, "shop"),
			events: []*replication.BinlogEvent{
				mysqlGTID(uuidA, 6),
				payload(0, query("other", "BEGIN"), logMap, logRows, xid()),
			},
			want: []string{"SKIP MySQL56/" + uuidA + ":1-6"},
		},
		{
			name:   "mysql compressed transactions in a row, between plain ones",
			start:  mysqlStart,
			filter: mustFilter(t, "shop"),
			events: []*replication.BinlogEvent{
				mysqlGTID(uuidA, 6),
				payload(0, query("shop", "BEGIN"), custMap, custRows, xid()),
				mysqlGTID(uuidA, 7),
				payload(0, query("other", "BEGIN"), logMap, logRows, xid()),
				mysqlGTID(uuidA, 8),
				query("shop", "BEGIN"), custMap, custRows, xid(),
				mysqlGTID(uuidA, 9),
				payload(0, query("shop", "BEGIN"), logMap, logRows, custMap, custRows, xid()),
			},
			want: []string{
				"BEGIN", "ROWS INSERT " + customers3 + " 3", "COMMIT MySQL56/" + uuidA + ":1-6",
				"SKIP MySQL56/" + uuidA + ":1-7",
				"BEGIN", "ROWS INSERT " + customers3 + " 3", "COMMIT MySQL56/" + uuidA + ":1-8",
				"BEGIN", "ROWS INSERT " + customers3 + " 3", "COMMIT MySQL56/" + uuidA + ":1-9",
			},
		},
		{
			name:   "mysql empty payload",
			start:  mysqlStart,
			filter: mustFilter(t, "shop"),
			events: []*replication.BinlogEvent{payload(0)},
			want:   nil,
		},
		{
			name:   "mysql gtid event under a file position",
			start:  Position{Flavor: FlavorFilePos, File: "binlog.000001", Offset: 4},
			filter: mustFilter(t, "shop"),
			events: []*replication.BinlogEvent{
				ev(200, &replication.GTIDEvent{}), // anonymous: no server uuid
				ev(300, &replication.QueryEvent{Schema: []byte("shop"), Query: []byte("BEGIN")}),
				ev(400, &replication.XIDEvent{XID: 1}),
			},
			want: []string{"SKIP FilePos/binlog.000001:400"},
		},
		{
			name:   "mysql compressed transaction under a file position",
			start:  Position{Flavor: FlavorFilePos, File: "binlog.000001", Offset: 4},
			filter: mustFilter(t, "shop"),
			events: []*replication.BinlogEvent{
				ev(200, &replication.GTIDEvent{SID: sid(t, uuidA), GNO: 6}),
				payload(500, query("shop", "BEGIN"), withLogPos(custMap, 0), withLogPos(custRows, 0), xid()),
			},
			// The position after the transaction is the end of the payload event.
			want: []string{"BEGIN", "ROWS INSERT " + customers3 + " 3", "COMMIT FilePos/binlog.000001:500"},
		},
		{
			name:   "mariadb non-transactional commit",
			start:  emptyMariaDB(t),
			filter: mustFilter(t, "shop"),
			events: []*replication.BinlogEvent{
				mariaGTID(1, false),
				custMap, custRows,
				query("shop", "COMMIT"),
			},
			want: []string{"BEGIN", "ROWS INSERT " + customers3 + " 3", "COMMIT MariaDB/0-1-1"},
		},
		{
			name:   "savepoint inside a transaction yields nothing",
			start:  emptyMariaDB(t),
			filter: mustFilter(t, "shop"),
			events: []*replication.BinlogEvent{
				mariaGTID(1, false),
				query("shop", "SAVEPOINT s1"),
				custMap, custRows,
				query("shop", "ROLLBACK TO SAVEPOINT s1"),
				ev(0, &replication.XIDEvent{XID: 1}),
			},
			want: []string{"BEGIN", "ROWS INSERT " + customers3 + " 3", "COMMIT MariaDB/0-1-1"},
		},
		{
			name:   "a statement that failed on the source is skipped",
			start:  emptyMariaDB(t),
			filter: mustFilter(t, "shop"),
			events: []*replication.BinlogEvent{
				mariaGTID(1, true),
				ev(0, &replication.QueryEvent{Schema: []byte("shop"), Query: []byte("DROP TABLE customers"), ErrorCode: 1051}),
			},
			want: []string{"SKIP MariaDB/0-1-1"},
		},
		{
			name:   "DDL on a table outside the table list is skipped",
			start:  emptyMariaDB(t),
			filter: mustFilter(t, "shop", "customers"),
			events: []*replication.BinlogEvent{mariaGTID(1, true), query("shop", "ALTER TABLE orders ADD x INT")},
			want:   []string{"SKIP MariaDB/0-1-1"},
		},
		{
			name:   "DDL on a listed table",
			start:  emptyMariaDB(t),
			filter: mustFilter(t, "shop", "customers"),
			events: []*replication.BinlogEvent{mariaGTID(1, true), query("shop", "ALTER TABLE customers ADD x INT")},
			want:   []string{"DDL MariaDB/0-1-1 shop ALTER TABLE customers ADD x INT"},
		},
		{
			name:   "DDL naming a replicated table among others",
			start:  emptyMariaDB(t),
			filter: mustFilter(t, "shop", "customers"),
			events: []*replication.BinlogEvent{mariaGTID(1, true), query("other", "DROP TABLE log, shop.customers")},
			want:   []string{"DDL MariaDB/0-1-1 other DROP TABLE log, shop.customers"},
		},
		{
			name:   "rename into the replicated database",
			start:  emptyMariaDB(t),
			filter: mustFilter(t, "shop"),
			events: []*replication.BinlogEvent{mariaGTID(1, true), query("", "RENAME TABLE other.log TO shop.log")},
			want:   []string{"DDL MariaDB/0-1-1  RENAME TABLE other.log TO shop.log"},
		},
		{
			name:   "rename out of the replicated database",
			start:  emptyMariaDB(t),
			filter: mustFilter(t, "shop"),
			events: []*replication.BinlogEvent{mariaGTID(1, true), query("other", "RENAME TABLE shop.customers TO log")},
			want:   []string{"DDL MariaDB/0-1-1 other RENAME TABLE shop.customers TO log"},
		},
		{
			name:   "DDL in another database from the replicated one is skipped",
			start:  emptyMariaDB(t),
			filter: mustFilter(t, "shop"),
			events: []*replication.BinlogEvent{mariaGTID(1, true), query("shop", "TRUNCATE TABLE other.log")},
			want:   []string{"SKIP MariaDB/0-1-1"},
		},
		{
			name:   "statements that change no table are skipped",
			start:  emptyMariaDB(t),
			filter: mustFilter(t, "shop"),
			events: []*replication.BinlogEvent{
				mariaGTID(1, true), query("shop", "CREATE DATABASE shop"),
				mariaGTID(2, true), query("shop", "GRANT SELECT ON shop.* TO u"),
				mariaGTID(3, true), query("shop", "ANALYZE TABLE customers"),
				mariaGTID(4, true), query("shop", "CREATE VIEW v AS SELECT 1"),
				mariaGTID(5, true), query("shop", "FLUSH PRIVILEGES"),
			},
			want: []string{"SKIP MariaDB/0-1-1", "SKIP MariaDB/0-1-2", "SKIP MariaDB/0-1-3", "SKIP MariaDB/0-1-4", "SKIP MariaDB/0-1-5"},
		},
		{
			name:   "DDL query is trimmed",
			start:  emptyMariaDB(t),
			filter: mustFilter(t, "shop"),
			events: []*replication.BinlogEvent{
				mariaGTID(1, true),
				query("shop", "\n  DROP TABLE customers  \n"),
			},
			want: []string{"DDL MariaDB/0-1-1 shop DROP TABLE customers"},
		},
		{
			name:   "heartbeats between transactions",
			start:  emptyMariaDB(t),
			filter: mustFilter(t, "shop"),
			events: []*replication.BinlogEvent{
				ev(0, &replication.HeartbeatEvent{}),
				mariaGTID(1, false), custMap, custRows, ev(0, &replication.XIDEvent{XID: 1}),
				ev(0, &replication.HeartbeatEvent{}),
			},
			want: []string{"HEARTBEAT", "BEGIN", "ROWS INSERT " + customers3 + " 3", "COMMIT MariaDB/0-1-1", "HEARTBEAT"},
		},
		{
			name:   "rotate keeps a gtid position",
			start:  emptyMariaDB(t),
			filter: mustFilter(t, "shop"),
			events: []*replication.BinlogEvent{
				ev(0, &replication.RotateEvent{Position: 4, NextLogName: []byte("binlog.000009")}),
				mariaGTID(1, false), custMap, custRows, ev(0, &replication.XIDEvent{XID: 1}),
			},
			want: []string{"BEGIN", "ROWS INSERT " + customers3 + " 3", "COMMIT MariaDB/0-1-1"},
		},
		{
			name:   "rotate moves a file position",
			start:  Position{Flavor: FlavorFilePos, File: "binlog.000001", Offset: 4},
			filter: mustFilter(t, "shop"),
			events: []*replication.BinlogEvent{
				ev(0, &replication.RotateEvent{Position: 4, NextLogName: []byte("binlog.000009")}),
				mariaGTID(1, false),
				ev(300, &replication.XIDEvent{XID: 1}),
			},
			want: []string{"SKIP FilePos/binlog.000009:300"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.bug != "" {
				t.Skip("known bug: " + tt.bug)
			}
			tr := newTranslator(tt.start, tt.filter)
			var got []*event.Event
			for i, e := range tt.events {
				out, err := tr.translate(e)
				if err != nil {
					t.Fatalf("translate(event %d, %T): %v", i, e.Event, err)
				}
				got = append(got, out...)
			}
			diffLines(t, "events", summaries(got), tt.want)
		})
	}
}

func TestTranslator_HeartbeatSize(t *testing.T) {
	tr := newTranslator(emptyMariaDB(t), mustFilter(t, "shop"))
	out, err := tr.translate(&replication.BinlogEvent{Header: hdr(0, 0, 39), Event: &replication.HeartbeatEvent{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 {
		t.Fatalf("translate(heartbeat) = %q, want one event", summaries(out))
	}
	if got, want := out[0].Type, event.Heartbeat; got != want {
		t.Errorf("Type = %v, want %v", got, want)
	}
	if got, want := out[0].Size, 39; got != want {
		t.Errorf("Size = %d, want %d", got, want)
	}
	if got, want := out[0].Pos, ""; got != want {
		t.Errorf("Pos = %q, want %q", got, want)
	}
}

func TestTranslator_RowsOutsideTransaction(t *testing.T) {
	byEnd := realEvents(t)
	custMap := realEvent(t, byEnd, endCustomersMap, &replication.TableMapEvent{})
	custRows := realEvent(t, byEnd, endCustomersInsert, &replication.RowsEvent{})
	tr := newTranslator(emptyMariaDB(t), mustFilter(t, "shop"))
	if _, err := tr.translate(custMap); err != nil {
		t.Fatalf("translate(table map): %v", err)
	}
	out, err := tr.translate(custRows)
	if err == nil {
		t.Fatalf("translate(rows without a transaction) = %q, want an error", summaries(out))
	}
	for _, want := range []string{"shop.customers", "outside a transaction", "MariaDB/"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

// TestTranslator_MySQLGTIDDecodeError checks that a GTID event whose server uuid cannot be
// decoded stops the stream with an error naming the position, rather than losing the GTID.
func TestTranslator_MySQLGTIDDecodeError(t *testing.T) {
	start := Position{Flavor: FlavorMySQL, GTID: mysqlSet(t, uuidA+":1-5")}
	tr := newTranslator(start, mustFilter(t, "shop"))
	ev := &replication.BinlogEvent{Header: hdr(0, 0, 40), Event: &replication.GTIDEvent{SID: []byte{1, 2, 3}, GNO: 6}}
	out, err := tr.translate(ev)
	if err == nil {
		t.Fatalf("translate(GTID event with a 3-byte server uuid) = %q, want an error", summaries(out))
	}
	for _, want := range []string{"decode GTID event", "MySQL56/" + uuidA + ":1-5"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if got, want := tr.position().String(), "MySQL56/"+uuidA+":1-5"; got != want {
		t.Errorf("position after the error = %q, want it unchanged, %q", got, want)
	}
}

// TestTranslator_StartNotChanged checks that the translator adds GTIDs to a copy of its start
// position: the caller's position (the applied one, from which a later Run restarts) stays put.
func TestTranslator_StartNotChanged(t *testing.T) {
	byEnd := realEvents(t)
	custMap := realEvent(t, byEnd, endCustomersMap, &replication.TableMapEvent{})
	custRows := realEvent(t, byEnd, endCustomersInsert, &replication.RowsEvent{})
	ev := func(e replication.Event) *replication.BinlogEvent {
		return &replication.BinlogEvent{Header: hdr(1700000000, 0, 40), Event: e}
	}
	tests := []struct {
		name   string
		start  string
		events []*replication.BinlogEvent
		want   string // the translator's position at the end
	}{
		{
			name:  "mysql",
			start: "MySQL56/" + uuidA + ":1-5",
			events: []*replication.BinlogEvent{
				ev(&replication.GTIDEvent{SID: sid(t, uuidA), GNO: 6}),
				ev(&replication.QueryEvent{Schema: []byte("shop"), Query: []byte("BEGIN")}),
				custMap, custRows,
				ev(&replication.XIDEvent{XID: 1}),
			},
			want: "MySQL56/" + uuidA + ":1-6",
		},
		{
			name:  "mariadb",
			start: "MariaDB/0-1-5",
			events: []*replication.BinlogEvent{
				ev(&replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{DomainID: 0, ServerID: 1, SequenceNumber: 6}}),
				custMap, custRows,
				ev(&replication.XIDEvent{XID: 1}),
			},
			want: "MariaDB/0-1-6",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := mustParse(t, tt.start, "")
			tr := newTranslator(start, mustFilter(t, "shop"))
			translateAll(t, tr, tt.events)
			if got, want := tr.position().String(), tt.want; got != want {
				t.Errorf("translator position = %q, want %q", got, want)
			}
			if got, want := start.String(), tt.start; got != want {
				t.Errorf("start position after translating = %q, want it unchanged, %q", got, want)
			}
		})
	}
}

// TestTranslator_Anonymous: anonymous transactions of a source in a permissive gtid_mode add
// nothing to a MySQL GTID position.
func TestTranslator_Anonymous(t *testing.T) {
	t.Run("mysql anonymous transaction under a gtid position", func(t *testing.T) {
		start := Position{Flavor: FlavorMySQL, GTID: mysqlSet(t, uuidA+":1-5")}
		tr := newTranslator(start, mustFilter(t, "shop"))
		ev := func(e replication.Event) *replication.BinlogEvent {
			return &replication.BinlogEvent{Header: hdr(1700000000, 0, 40), Event: e}
		}
		got := translateAll(t, tr, []*replication.BinlogEvent{
			ev(&replication.GTIDEvent{SID: make([]byte, 16), GNO: 0}),
			ev(&replication.QueryEvent{Schema: []byte("other"), Query: []byte("BEGIN")}),
			ev(&replication.XIDEvent{XID: 1}),
		})
		diffLines(t, "events", summaries(got), []string{"SKIP MySQL56/" + uuidA + ":1-5"})
	})
}
