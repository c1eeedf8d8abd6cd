package binlog

import (
	"net"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// go-mysql's syncer sends COM_BINLOG_DUMP_GTID with no flags and has no option for them (its
// DumpCommandFlag reaches only COM_BINLOG_DUMP). Some servers (Dolt) read the GTID set of the
// command only when BINLOG_THROUGH_GTID is set, and otherwise send the whole binlog; MySQL reads
// it either way. So the reader sets the flag in the dump command itself, as the command is
// written: throughGTID wraps the replication connection (after its TLS handshake, so the
// command is still plain text at this layer) and sets the flag bits of that one packet.

// throughGTID is the syncer's Option hook for a MySQL-flavour source: it runs on the new
// connection before COM_REGISTER_SLAVE and COM_BINLOG_DUMP_GTID are written.
func throughGTID(c *client.Conn) error {
	c.Conn.Conn = dumpFlagConn{Conn: c.Conn.Conn}
	return nil
}

// dumpFlagConn sets BINLOG_THROUGH_GTID in every COM_BINLOG_DUMP_GTID packet written through it.
// go-mysql writes a packet shorter than 16 MiB in one Write (the replication connection is not
// compressed), header and payload together.
type dumpFlagConn struct{ net.Conn }

func (c dumpFlagConn) Write(b []byte) (int, error) {
	if isDumpGTID(b) {
		p := append([]byte(nil), b...)
		p[5] |= byte(replication.BINLOG_THROUGH_GTID)
		p[6] |= byte(replication.BINLOG_THROUGH_GTID >> 8)
		return c.Conn.Write(p)
	}
	return c.Conn.Write(b)
}

// isDumpGTID reports whether b is one whole COM_BINLOG_DUMP_GTID packet: a 3-byte length that
// matches, a sequence byte, the command byte, then at least the 2 flag bytes.
func isDumpGTID(b []byte) bool {
	if len(b) < 7 || b[4] != mysql.COM_BINLOG_DUMP_GTID {
		return false
	}
	n := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
	return n == len(b)-4
}
