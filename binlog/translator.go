package binlog

import (
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/vplayer/vplayer/event"
)

// translator turns go-mysql events into vplayer events and tracks the position. It is pure: no I/O.
type translator struct {
	filter *Filter
	pos    Position
	// mariaDomains holds the last GTID of each MariaDB replication domain.
	mariaDomains map[uint32]mysql.MariadbGTID
	tables       map[uint64]*event.Table // nil value: a table that is not replicated
	inTxn        bool
	begun        bool   // a Begin event was emitted for the open transaction
	gtid         string // the open transaction's GTID, empty when it has none
	standalone   bool   // the next query is a standalone MariaDB event group (DDL)
	skip         executedSkip
	// movedToGTID says that a file:pos start position has become a MariaDB GTID position, at the
	// source's first GTID, since the caller last looked.
	movedToGTID bool
	// atFileStart says the stream is at the start of a binlog file, before its first event group;
	// keepFilePos keeps a file:pos position file:pos (a file:pos stop position compares with it).
	atFileStart, keepFilePos bool
	// fileGTIDs is, for a file:pos stream, the GTID state of the source since the start of the
	// current binlog file (its Gtid_list event and the GTIDs since); nil until a Gtid_list.
	fileGTIDs map[uint32]mysql.MariadbGTID
	// mariaPos is, for a MariaDB position, its stored form as syncMariaPos last rendered it, and
	// gtidStale says that pos.GTID has not been brought up to it yet (see position): a commit
	// renders the string its event carries, not a GTID set it would only format again.
	mariaPos  string
	gtidStale bool
	out       []*event.Event
	scratch   []byte
	// metaFlavor is set (to the go-mysql flavor) when the events come from a parser that skips
	// the optional metadata of table maps (see tableMeta); format is then the raw format
	// description event in force, and inPayload says the events being translated come from a
	// transaction payload, whose own parser decodes their metadata.
	metaFlavor string
	format     []byte
	inPayload  bool

	// toolTables are the table ids of online schema-change tools' tables (see cutover.go), whose
	// rows are passed over and counted.
	toolTables map[uint64]bool
	// online is what the reader knows of the online schema changes in progress; onlineDirty says
	// it changed since the reader last saved it (see onlineState).
	online      onlineState
	onlineDirty bool
}

func newTranslator(start Position, f *Filter) *translator {
	t := &translator{filter: f, pos: start, tables: map[uint64]*event.Table{}, toolTables: map[uint64]bool{}, skip: executedSkip{start: start},
		atFileStart: start.Flavor == FlavorFilePos && start.Offset <= 4}
	if start.GTID != nil {
		t.pos.GTID = start.GTID.Clone() // updated in place as transactions pass
		t.skip.start.GTID = start.GTID.Clone()
	}
	if start.Flavor == FlavorMariaDB {
		t.mariaDomains = map[uint32]mysql.MariadbGTID{}
		if set, ok := start.GTID.(*mysql.MariadbGTIDSet); ok {
			for domain, servers := range set.Sets {
				for _, g := range servers {
					if cur, ok := t.mariaDomains[domain]; !ok || g.SequenceNumber > cur.SequenceNumber {
						t.mariaDomains[domain] = *g
					}
				}
			}
		}
	}
	return t
}

// translate returns the events ev yields, in order. The returned slice is reused by the next call.
func (t *translator) translate(ev *replication.BinlogEvent) ([]*event.Event, error) {
	t.out = t.out[:0]
	if _, ok := ev.Event.(*replication.FormatDescriptionEvent); ok && t.metaFlavor != "" {
		t.format = ev.RawData // before any drop: the format of every later event
	}
	if t.skip.drop(ev.Event) {
		return nil, nil
	}
	h := ev.Header
	switch e := ev.Event.(type) {
	case *replication.RotateEvent:
		t.rotate(e)
		return nil, nil
	case *replication.MariadbGTIDListEvent:
		t.gtidList(e)
		return nil, nil
	case *replication.HeartbeatEvent:
		t.emit(&event.Event{Type: event.Heartbeat, Size: int(h.EventSize)})
	case *replication.MariadbGTIDEvent:
		if err := t.mariaGTID(ev, e); err != nil {
			return nil, err
		}
	case *replication.GTIDEvent:
		if err := t.mysqlGTID(e); err != nil {
			return nil, err
		}
	case *replication.QueryEvent:
		return t.query(ev, e)
	case *replication.TransactionPayloadEvent:
		return t.decodedPayload(h, e)
	case *replication.XIDEvent:
		t.commit(h)
	case *replication.GenericEvent:
		if h.EventType == replication.XA_PREPARE_LOG_EVENT && t.inTxn {
			t.xaPrepare(h)
			return t.out, nil
		}
	case *replication.TableMapEvent:
		if replicated, err := t.mapTable(ev, e); err != nil || !replicated {
			return nil, err
		}
	case *replication.RowsEvent:
		if replicated, err := t.rows(h, e); err != nil || !replicated {
			return nil, err
		}
	}
	t.advanceFilePos(h)
	return t.out, nil
}

// rotate follows a file:pos stream into the binlog file the rotation names.
func (t *translator) rotate(e *replication.RotateEvent) {
	if t.pos.Flavor == FlavorFilePos {
		t.pos.File = string(e.NextLogName)
		t.pos.Offset = uint32(e.Position)
		t.atFileStart = e.Position <= 4
	}
}

// gtidList records the source's GTID state where this binlog file starts: with the GTIDs that
// follow, the GTID position of a file:pos stream, when the stream reads the file from its start
// (a stream that starts inside a file has not seen the GTIDs before its offset).
func (t *translator) gtidList(e *replication.MariadbGTIDListEvent) {
	if t.pos.Flavor != FlavorFilePos || !t.atFileStart || t.keepFilePos {
		return
	}
	t.fileGTIDs = map[uint32]mysql.MariadbGTID{}
	for _, g := range e.GTIDs {
		if cur, ok := t.fileGTIDs[g.DomainID]; !ok || g.SequenceNumber > cur.SequenceNumber {
			t.fileGTIDs[g.DomainID] = g
		}
	}
}

// mariaGTID starts a MariaDB event group: a transaction, or a standalone statement (DDL). The
// GTID event of a prepared XA transaction's group begins it at once, with its XID.
func (t *translator) mariaGTID(ev *replication.BinlogEvent, e *replication.MariadbGTIDEvent) error {
	if t.pos.Flavor == FlavorFilePos && t.fileGTIDs != nil {
		// A file:pos workflow (created while the source had no GTID yet, say) whose binlog
		// file said its GTID state: from the first GTID on, the position is the GTID one, so
		// that it survives a failover by GTID.
		t.pos, t.mariaPos, t.gtidStale = Position{Flavor: FlavorMariaDB}, "", false
		t.mariaDomains = t.fileGTIDs
		t.movedToGTID = true
	}
	if t.mariaDomains != nil {
		t.mariaDomains[e.GTID.DomainID] = e.GTID
	}
	t.gtid = mariaGTIDString(e.GTID)
	if e.IsStandalone() {
		t.standalone = true
	} else {
		t.startTxn()
	}
	if e.Flags&mariaFlagPreparedXA != 0 {
		// MariaDB logs no XA START: the event group's GTID event carries the XID.
		xid, err := mariaXID(ev.RawData)
		if err != nil {
			return fmt.Errorf("decode the XID of XA transaction %s: %w", t.gtid, err)
		}
		t.begin(ev.Header, xid)
	}
	return nil
}

// mysqlGTID adds a MySQL transaction's GTID to the position. A BEGIN query event follows for
// transactions, nothing for DDL. The GTID is tracked here rather than taken from go-mysql's
// GSet, which events inside a compressed transaction payload do not carry.
func (t *translator) mysqlGTID(e *replication.GTIDEvent) error {
	if t.pos.Flavor != FlavorMySQL || anonymous(e.SID) {
		return nil
	}
	next, err := e.GTIDNext()
	if err != nil {
		return fmt.Errorf("decode GTID event at %s: %w", t.position(), err)
	}
	if err := t.pos.GTID.Update(next.String()); err != nil {
		return fmt.Errorf("add GTID %s to %s: %w", next, t.position(), err)
	}
	t.gtid = next.String()
	return nil
}

func (t *translator) query(ev *replication.BinlogEvent, e *replication.QueryEvent) ([]*event.Event, error) {
	h := ev.Header
	q := strings.TrimSpace(string(e.Query))
	switch {
	case strings.EqualFold(q, "BEGIN"):
		t.startTxn()
		t.advanceFilePos(h)
		return t.out, nil
	case strings.EqualFold(q, "COMMIT"):
		t.advanceFilePos(h)
		t.commit(h)
		return t.out, nil
	}
	if verb, xid, ok := xaStatement(q); ok {
		return t.xa(h, verb, xid)
	}
	if e.ErrorCode == 0 {
		if verb, tables, ok := dmlTables(q, string(e.Schema)); ok {
			return t.statement(h, e, q, verb, tables)
		}
	}
	switch {
	case t.inTxn && !t.standalone:
		// SAVEPOINT and the like inside a row-based transaction carry no data.
		t.advanceFilePos(h)
		return t.out, nil
	}
	// A statement of its own: DDL or a standalone event group.
	t.standalone = false
	t.advanceFilePos(h)
	t.syncMariaPos()
	schema := string(e.Schema)
	if e.ErrorCode == 0 && t.onlineDDL(h, q, schema) {
		return t.out, nil
	}
	if e.ErrorCode == 0 && t.changesReplicated(q, schema) {
		t.emit(&event.Event{Type: event.DDL, Pos: t.posString(), Timestamp: int64(h.Timestamp), Schema: schema, Query: q,
			DBRefs: dbRefs(q, t.filter.DB()), Size: int(h.EventSize)})
		// Table ids may be reused with new definitions after DDL; forget them.
		clear(t.tables)
	} else {
		t.emit(&event.Event{Type: event.Skip, Pos: t.posString(), Timestamp: int64(h.Timestamp), Size: 1})
	}
	return t.out, nil
}

// statement handles a data change the source logged as a statement: one that may write a
// replicated table becomes a Statement event, which ends the stream where it stands (a row-based
// applier cannot apply it exactly); any other is passed over and counted.
func (t *translator) statement(h *replication.EventHeader, e *replication.QueryEvent, q, verb string, tables []tableRef) ([]*event.Event, error) {
	t.advanceFilePos(h)
	replicated := false
	for _, tr := range tables {
		if t.filter.Match(tr.schema, tr.name) {
			replicated = true
			break
		}
	}
	if !replicated {
		if t.skip.stats != nil {
			t.skip.stats.SkippedStatements.Add(1)
		}
		if !t.inTxn || t.standalone {
			// A statement of its own, outside a transaction: only its position matters.
			t.standalone = false
			t.syncMariaPos()
			t.emit(&event.Event{Type: event.Skip, Pos: t.posString(), Timestamp: int64(h.Timestamp), Size: 1})
		}
		return t.out, nil
	}
	t.emit(&event.Event{Type: event.Statement, Pos: t.posString(), Timestamp: int64(h.Timestamp), GTID: t.gtid,
		Schema: string(e.Schema), Query: statementShape(q), Size: int(h.EventSize)})
	return t.out, nil
}

// changesReplicated reports whether the statement q, run with default schema schema, changes the
// definition of a replicated table.
func (t *translator) changesReplicated(q, schema string) bool {
	tables, ok := ddlTables(q, schema)
	if !ok {
		return false
	}
	for _, tr := range tables {
		if t.filter.Match(tr.schema, tr.name) {
			return true
		}
	}
	return false
}

func (t *translator) startTxn() {
	t.inTxn, t.begun = true, false
	t.atFileStart = false
}

// begin emits the open transaction's Begin, with xid for an XA transaction (else empty).
func (t *translator) begin(h *replication.EventHeader, xid string) {
	t.emit(&event.Event{Type: event.Begin, Timestamp: int64(h.Timestamp), GTID: t.gtid, XID: xid, Size: 1})
	t.begun = true
}

func (t *translator) commit(h *replication.EventHeader) {
	t.advanceFilePos(h)
	t.syncMariaPos()
	typ := event.Skip
	if t.begun {
		typ = event.Commit
	}
	t.emit(&event.Event{Type: typ, Pos: t.posString(), Timestamp: int64(h.Timestamp), Size: 1})
	t.inTxn, t.begun = false, false
}

func (t *translator) advanceFilePos(h *replication.EventHeader) {
	if t.pos.Flavor == FlavorFilePos && h.LogPos > 0 {
		t.pos.Offset = h.LogPos
	}
}

// syncMariaPos makes the per-domain GTIDs the position, one GTID per domain, as MariaDB's
// gtid_binlog_pos shows it.
func (t *translator) syncMariaPos() {
	if t.pos.Flavor != FlavorMariaDB {
		return
	}
	t.scratch = appendMariaPos(append(t.scratch[:0], FlavorMariaDB+"/"...), t.mariaDomains)
	t.mariaPos, t.gtidStale = string(t.scratch), true
}

// posString returns the stored form of the position passed so far: position().String().
func (t *translator) posString() string {
	if t.pos.Flavor == FlavorMariaDB && t.mariaPos != "" {
		return t.mariaPos
	}
	return t.pos.String()
}

// position returns the position passed so far.
func (t *translator) position() Position {
	if t.gtidStale {
		if set, err := mysql.ParseMariadbGTIDSet(strings.TrimPrefix(t.mariaPos, FlavorMariaDB+"/")); err == nil {
			t.pos.GTID = set
		}
		t.gtidStale = false
	}
	return t.pos
}

func (t *translator) emit(e *event.Event) { t.out = append(t.out, e) }
