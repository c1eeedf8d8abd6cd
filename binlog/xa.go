package binlog

import (
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vplayer/vplayer/event"
)

// XA transactions in the binlog: MySQL logs XA START ... XA END and XA PREPARE around the
// transaction's rows, MariaDB carries the XID in the event group's GTID event; either way XA
// COMMIT and XA ROLLBACK of a prepared transaction come later, as event groups of their own.

// xa handles an XA statement of the binlog. XA START opens an XA transaction: its Begin carries
// the XID, and is emitted at once, so that the target prepares it even when it changes no
// replicated table and its XA COMMIT always finds it. XA END carries nothing. XA COMMIT and XA
// ROLLBACK of a prepared transaction are event groups of their own; XA COMMIT ... ONE PHASE
// (MySQL) commits the open XA transaction like COMMIT.
func (t *translator) xa(h *replication.EventHeader, verb, xid string) ([]*event.Event, error) {
	t.advanceFilePos(h)
	switch verb {
	case "START":
		if !t.inTxn {
			t.startTxn()
		}
		t.begin(h, xid)
	case "END":
	case "COMMIT ONE PHASE":
		t.commit(h)
	case "COMMIT", "ROLLBACK":
		if t.inTxn && t.begun {
			return nil, fmt.Errorf("XA %s %s inside an open transaction at %s", verb, xid, t.position())
		}
		t.syncMariaPos()
		typ := event.XACommit
		if verb == "ROLLBACK" {
			typ = event.XARollback
		}
		t.emit(&event.Event{Type: typ, Pos: t.posString(), Timestamp: int64(h.Timestamp), XID: xid, Size: int(h.EventSize)})
		t.inTxn, t.begun, t.standalone = false, false, false
	}
	return t.out, nil
}

// MariaDB GTID event flags of XA event groups.
const (
	mariaFlagGroupCommitID = 2
	mariaFlagPreparedXA    = 64
)

// mariaXID decodes the XID of a MariaDB GTID event (the whole event, header included) of an XA
// event group, as SQL: x'<gtrid>',x'<bqual>',<formatID>, in the lower case of xaStatement. After the 19-byte header: seq_no (8),
// domain id (4), flags (1), the commit id (8) when flagged, then formatID (4), the lengths of
// gtrid and bqual (1 each) and their bytes.
func mariaXID(raw []byte) (string, error) {
	const header = 19
	if len(raw) < header+13 {
		return "", fmt.Errorf("event of %d bytes", len(raw))
	}
	b := raw[header:]
	flags := b[12]
	b = b[13:]
	if flags&mariaFlagGroupCommitID != 0 {
		if len(b) < 8 {
			return "", fmt.Errorf("event too short for its commit id")
		}
		b = b[8:]
	}
	if len(b) < 6 {
		return "", fmt.Errorf("event too short for an XID")
	}
	format := int32(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24)
	gl, bl := int(b[4]), int(b[5])
	b = b[6:]
	if gl > 64 || bl > 64 || len(b) < gl+bl {
		return "", fmt.Errorf("XID of %d+%d bytes in %d", gl, bl, len(b))
	}
	return fmt.Sprintf("x'%x',x'%x',%d", b[:gl], b[gl:gl+bl], format), nil
}

// xaPrepare closes the open XA transaction as prepared.
func (t *translator) xaPrepare(h *replication.EventHeader) {
	t.advanceFilePos(h)
	t.syncMariaPos()
	if t.begun {
		t.emit(&event.Event{Type: event.XAPrepare, Pos: t.posString(), Timestamp: int64(h.Timestamp), Size: 1})
	} else {
		t.emit(&event.Event{Type: event.Skip, Pos: t.posString(), Timestamp: int64(h.Timestamp), Size: 1})
	}
	t.inTxn, t.begun = false, false
}

// xaStatement recognises XA START|END|COMMIT|ROLLBACK <xid> [ONE PHASE], as the source logs it
// (XA START X'61',X”,1), and returns the verb and the xid as SQL that names it again.
func xaStatement(q string) (verb, xid string, ok bool) {
	if len(q) < 3 || !strings.EqualFold(q[:3], "XA ") {
		return "", "", false
	}
	rest := strings.TrimSpace(q[3:])
	sp := strings.IndexByte(rest, ' ')
	if sp < 0 {
		return "", "", false
	}
	verb, xid = strings.ToUpper(rest[:sp]), strings.TrimSpace(rest[sp+1:])
	switch verb {
	case "START", "BEGIN":
		verb = "START"
	case "END", "ROLLBACK":
	case "COMMIT":
		if u := strings.ToUpper(xid); strings.HasSuffix(u, " ONE PHASE") {
			verb, xid = "COMMIT ONE PHASE", strings.TrimSpace(xid[:len(xid)-len(" ONE PHASE")])
		}
	default:
		return "", "", false
	}
	xid = strings.TrimSuffix(strings.TrimSpace(strings.TrimSuffix(xid, "/*!*/")), ";")
	// Sources write it as hex literals and a number (X'61',X'',1): one case, so that the XID of
	// a transaction's XA START (MariaDB: from its GTID event) and of its XA COMMIT compare equal.
	return verb, strings.ToLower(xid), xid != ""
}
