package binlog

import (
	"slices"
	"strconv"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// appendMariaGTID appends g as go-mysql's MariadbGTID.String writes it: domain-server-sequence,
// nothing for the zero GTID.
func appendMariaGTID(b []byte, g mysql.MariadbGTID) []byte {
	if g.DomainID == 0 && g.ServerID == 0 && g.SequenceNumber == 0 {
		return b
	}
	b = strconv.AppendUint(b, uint64(g.DomainID), 10)
	b = append(b, '-')
	b = strconv.AppendUint(b, uint64(g.ServerID), 10)
	b = append(b, '-')
	return strconv.AppendUint(b, g.SequenceNumber, 10)
}

// mariaGTIDString returns g as go-mysql's MariadbGTID.String does.
func mariaGTIDString(g mysql.MariadbGTID) string {
	var buf [64]byte
	return string(appendMariaGTID(buf[:0], g))
}

// appendMariaPos appends the GTID set of one GTID per domain, as go-mysql's MariadbGTIDSet.String
// writes it: the GTIDs in the order of their text, comma-separated.
func appendMariaPos(b []byte, domains map[uint32]mysql.MariadbGTID) []byte {
	if len(domains) == 1 {
		for _, g := range domains {
			return appendMariaGTID(b, g)
		}
	}
	parts := make([]string, 0, len(domains))
	for _, g := range domains {
		parts = append(parts, mariaGTIDString(g))
	}
	slices.Sort(parts)
	for i, p := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, p...)
	}
	return b
}
