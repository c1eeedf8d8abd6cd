package binlog

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

func TestXAStatement(t *testing.T) {
	tests := []struct {
		q         string
		verb, xid string
		ok        bool
	}{
		{"XA START X'61',X'',1", "START", "x'61',x'',1", true},
		{"xa end X'61',X'',1", "END", "x'61',x'',1", true},
		{"XA COMMIT X'6162',X'6364',7", "COMMIT", "x'6162',x'6364',7", true},
		{"XA COMMIT X'6A',X'',1 ONE PHASE", "COMMIT ONE PHASE", "x'6a',x'',1", true},
		{"XA ROLLBACK X'62',X'',1", "ROLLBACK", "x'62',x'',1", true},
		{"XA RECOVER", "", "", false},
		{"XAB", "", "", false},
		{"ALTER TABLE xa ADD c INT", "", "", false},
	}
	for _, tt := range tests {
		verb, xid, ok := xaStatement(tt.q)
		if verb != tt.verb || xid != tt.xid || ok != tt.ok {
			t.Errorf("xaStatement(%q) = %q, %q, %v; want %q, %q, %v", tt.q, verb, xid, ok, tt.verb, tt.xid, tt.ok)
		}
	}
}

// mariaGTIDRaw builds a MariaDB GTID event of an XA event group as the server writes it.
func mariaGTIDRaw(flags byte, commitID bool, format uint32, gtrid, bqual string) []byte {
	raw := make([]byte, 19)                         // header
	raw = binary.LittleEndian.AppendUint64(raw, 42) // seq_no
	raw = binary.LittleEndian.AppendUint32(raw, 0)  // domain
	raw = append(raw, flags)
	if commitID {
		raw = binary.LittleEndian.AppendUint64(raw, 7)
	}
	raw = binary.LittleEndian.AppendUint32(raw, format)
	raw = append(raw, byte(len(gtrid)), byte(len(bqual)))
	raw = append(raw, gtrid...)
	raw = append(raw, bqual...)
	return append(raw, 0, 0, 0, 0) // checksum
}

func TestMariaXID(t *testing.T) {
	tests := []struct {
		name string
		raw  []byte
		want string
	}{
		{"string xid", mariaGTIDRaw(mariaFlagPreparedXA, false, 1, "a", ""), "x'61',x'',1"},
		{"binary xid, group commit id", mariaGTIDRaw(mariaFlagPreparedXA|mariaFlagGroupCommitID, true, 7, "ab", "cd"), "x'6162',x'6364',7"},
	}
	for _, tt := range tests {
		got, err := mariaXID(tt.raw)
		if err != nil || got != tt.want {
			t.Errorf("%s: mariaXID = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
	if _, err := mariaXID(mariaGTIDRaw(mariaFlagPreparedXA, false, 1, "a", "")[:30]); err == nil {
		t.Error("mariaXID of a truncated event: no error")
	}
}

// TestTranslator_FilePosMovesToGTID: a workflow started at file:pos on a MariaDB source records
// the GTID position from the first transaction that has one, once its binlog file has said the
// GTID state it starts from (its Gtid_list event: here, domain 1 from before, none in domain 0).
func TestTranslator_FilePosMovesToGTID(t *testing.T) {
	start := Position{Flavor: FlavorFilePos, File: "bin.000001", Offset: 4}
	tr := newTranslator(start, mustFilter(t, "shop"))
	ev := func(logPos uint32, e replication.Event) *replication.BinlogEvent {
		return &replication.BinlogEvent{Header: hdr(1700000000, logPos, 40), Event: e}
	}
	var got []string
	for _, e := range []*replication.BinlogEvent{
		ev(50, &replication.MariadbGTIDListEvent{GTIDs: []mysql.MariadbGTID{{DomainID: 1, ServerID: 2, SequenceNumber: 7}}}),
		ev(100, &replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{DomainID: 0, ServerID: 1, SequenceNumber: 1}}),
		ev(200, &replication.XIDEvent{XID: 1}),
		ev(300, &replication.MariadbGTIDEvent{GTID: mysql.MariadbGTID{DomainID: 0, ServerID: 1, SequenceNumber: 2}}),
		ev(400, &replication.XIDEvent{XID: 2}),
	} {
		out, err := tr.translate(e)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out {
			got = append(got, o.Type.String()+" "+o.Pos)
		}
	}
	want := []string{"SKIP MariaDB/0-1-1,1-2-7", "SKIP MariaDB/0-1-2,1-2-7"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("events %q, want %q", got, want)
	}
}
