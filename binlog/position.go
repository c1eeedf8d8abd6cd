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
		return fmt.Sprintf("%s/%s:%d", FlavorFilePos, p.File, p.Offset)
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
			return p.File > o.File // binlog file names sort by sequence number
		}
		return p.Offset >= o.Offset
	}
	if o.GTID == nil {
		return true
	}
	if p.GTID == nil {
		return false
	}
	return p.GTID.Contain(o.GTID)
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
	set, err := mysql.ParseGTIDSet(goFlavor, strings.TrimSpace(v))
	if err != nil {
		return Position{}, fmt.Errorf("%w %q: not a %s GTID set: %v", ErrBadPosition, v, flavor, err)
	}
	return Position{Flavor: flavor, GTID: set}, nil
}
