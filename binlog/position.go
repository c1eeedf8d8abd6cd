package binlog

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// Position flavors, as they prefix a stored position.
const (
	FlavorMySQL   = "MySQL56"
	FlavorMariaDB = "MariaDB"
	FlavorFilePos = "FilePos"
)

// ErrBadPosition is wrapped by every position parse error.
var ErrBadPosition = errors.New("invalid position")

// Position is a place in the source's binary log: a GTID set (MySQL or MariaDB) or a file and
// offset. The zero value is no position.
type Position struct {
	// Flavor is FlavorMySQL, FlavorMariaDB or FlavorFilePos.
	Flavor string
	// GTID is the executed GTID set, for the GTID flavors.
	GTID mysql.GTIDSet
	// File and Offset locate the next event to read, for FlavorFilePos.
	File   string
	Offset uint32
}

// IsZero reports whether p is no position.
func (p Position) IsZero() bool { return p.Flavor == "" }

// String returns the stored form "<flavor>/<value>".
func (p Position) String() string {
	switch p.Flavor {
	case "":
		return ""
	case FlavorFilePos:
		return FlavorFilePos + "/" + p.File + ":" + strconv.FormatUint(uint64(p.Offset), 10)
	default:
		if p.GTID == nil {
			return p.Flavor + "/"
		}
		return p.Flavor + "/" + p.GTID.String()
	}
}

// Contains reports whether everything up to and including o has been passed at p. Positions of
// different flavors are never contained in one another.
func (p Position) Contains(o Position) bool {
	if p.Flavor != o.Flavor {
		return false
	}
	if p.Flavor == FlavorFilePos {
		if p.File != o.File {
			return fileAfter(p.File, o.File)
		}
		return p.Offset >= o.Offset
	}
	if o.GTID == nil {
		return true
	}
	if p.GTID == nil {
		return false
	}
	if p.Flavor == FlavorMariaDB {
		return mariaContains(p.GTID, o.GTID)
	}
	return p.GTID.Contain(o.GTID)
}

// fileAfter reports whether binlog file a comes after b: by the numeric extension when both have
// one (binlog.999999 is followed by binlog.1000000), else by name.
func fileAfter(a, b string) bool {
	ab, an, aok := splitFile(a)
	bb, bn, bok := splitFile(b)
	if aok && bok && ab == bb {
		return an > bn
	}
	return a > b
}

func splitFile(f string) (base string, n uint64, ok bool) {
	i := strings.LastIndexByte(f, '.')
	if i < 0 {
		return f, 0, false
	}
	n, err := strconv.ParseUint(f[i+1:], 10, 64)
	return f[:i], n, err == nil
}

// mariaContains compares MariaDB GTID positions the way MariaDB does: per replication domain, by
// sequence number, whichever server wrote it (a failover changes the server id, not the order).
func mariaContains(p, o mysql.GTIDSet) bool {
	ps, ok1 := p.(*mysql.MariadbGTIDSet)
	os, ok2 := o.(*mysql.MariadbGTIDSet)
	if !ok1 || !ok2 {
		return p.Contain(o)
	}
	for domain, servers := range os.Sets {
		var want uint64
		for _, g := range servers {
			want = max(want, g.SequenceNumber)
		}
		var have uint64
		for _, g := range ps.Sets[domain] {
			have = max(have, g.SequenceNumber)
		}
		if have < want {
			return false
		}
	}
	return true
}

// mariaContainsGTID reports whether the MariaDB position p contains the GTID g, as mariaContains
// does for the set of g alone.
func mariaContainsGTID(p mysql.GTIDSet, g mysql.MariadbGTID) bool {
	ps, ok := p.(*mysql.MariadbGTIDSet)
	if !ok {
		one := &mysql.MariadbGTIDSet{Sets: map[uint32]map[uint32]*mysql.MariadbGTID{g.DomainID: {g.ServerID: &g}}}
		return p.Contain(one)
	}
	var have uint64
	for _, h := range ps.Sets[g.DomainID] {
		have = max(have, h.SequenceNumber)
	}
	return have >= g.SequenceNumber
}

// Equal reports whether p and o name the same position.
func (p Position) Equal(o Position) bool {
	return p.Contains(o) && o.Contains(p)
}

// ParsePosition parses a stored or user-given position. s is "<flavor>/<value>", or a bare value:
// "file:pos" (a file and offset) or a GTID set, whose flavor is then taken from serverFlavor
// ("mariadb" or "mysql"); an empty serverFlavor guesses it from the set's shape.
func ParsePosition(s, serverFlavor string) (Position, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Position{}, fmt.Errorf("%w: empty", ErrBadPosition)
	}
	flavor, value, found := strings.Cut(s, "/")
	if !found {
		flavor, value = "", s
	}
	switch flavor {
	case FlavorFilePos:
		return parseFilePos(value)
	case FlavorMySQL, FlavorMariaDB:
		return parseGTID(flavor, value)
	case "":
		if strings.Contains(value, ":") && !looksLikeMySQLGTID(value) {
			return parseFilePos(value)
		}
		switch {
		case serverFlavor == mysql.MariaDBFlavor:
			flavor = FlavorMariaDB
		case serverFlavor == mysql.MySQLFlavor:
			flavor = FlavorMySQL
		case looksLikeMySQLGTID(value):
			flavor = FlavorMySQL
		default:
			flavor = FlavorMariaDB
		}
		return parseGTID(flavor, value)
	default:
		return Position{}, fmt.Errorf("%w %q: unknown flavor %q, want %s, %s or %s", ErrBadPosition, s, flavor, FlavorMySQL, FlavorMariaDB, FlavorFilePos)
	}
}

// looksLikeMySQLGTID reports whether v has a server UUID, as MySQL GTIDs do.
func looksLikeMySQLGTID(v string) bool {
	first, _, _ := strings.Cut(v, ":")
	return strings.Count(first, "-") == 4 && len(strings.TrimSpace(first)) == 36
}

func parseFilePos(v string) (Position, error) {
	file, off, ok := strings.Cut(v, ":")
	if !ok || file == "" {
		return Position{}, fmt.Errorf("%w %q: want file:offset, e.g. binlog.000003:1234", ErrBadPosition, v)
	}
	n, err := strconv.ParseUint(off, 10, 32)
	if err != nil || n < 4 {
		return Position{}, fmt.Errorf("%w %q: offset must be a number of at least 4", ErrBadPosition, v)
	}
	return Position{Flavor: FlavorFilePos, File: file, Offset: uint32(n)}, nil
}

func parseGTID(flavor, v string) (Position, error) {
	goFlavor := mysql.MySQLFlavor
	if flavor == FlavorMariaDB {
		goFlavor = mysql.MariaDBFlavor
	}
	v = strings.TrimSpace(v)
	if flavor == FlavorMariaDB {
		parts := strings.Split(v, ",")
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		v = strings.Join(parts, ",")
	}
	set, err := mysql.ParseGTIDSet(goFlavor, v)
	if err != nil {
		return Position{}, fmt.Errorf("%w %q: not a %s GTID set: %v", ErrBadPosition, v, flavor, err)
	}
	return Position{Flavor: flavor, GTID: set}, nil
}
