package binlog

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// ErrNotInHistory is wrapped by CheckHistory's error: the source's binary log history does not
// contain the recorded position, so it cannot serve what follows it.
var ErrNotInHistory = errors.New("the source's binary log history does not contain the recorded position")

// IsTerminal reports whether err is the source refusing to serve the binlog from the requested
// position in a way that no retry can fix: ERROR 1236 (ER_MASTER_FATAL_ERROR_READING_BINLOG),
// sent when the position was purged from the source's binary log or was never in it. One 1236 is
// transient and excluded: another replica registering with the same server id, which happens
// when a new attempt's connection replaces the previous one's.
func IsTerminal(err error) bool {
	var me *mysql.MyError
	if !errors.As(err, &me) || me.Code != mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG {
		return false
	}
	// The server sends the same code for a replaced replica; only its text tells them apart.
	msg := strings.ToLower(me.Message)
	return !strings.Contains(msg, "same server_uuid") && !strings.Contains(msg, "same server_id") && !strings.Contains(msg, "same server id")
}

// erSlaveSameID is MariaDB's ER_SLAVE_SAME_ID: another replica registered with this
// connection's server id, and the source ended this one.
const erSlaveSameID = 4052

// IsReplaced reports whether err ended a binlog connection because another connection
// registered as a replica with the same server id: the source keeps the newest one and ends the
// others, with ERROR 4052 (MariaDB) or a 1236 that says so (MySQL).
func IsReplaced(err error) bool {
	var me *mysql.MyError
	if !errors.As(err, &me) {
		return false
	}
	if me.Code == erSlaveSameID {
		return true
	}
	return me.Code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG && !IsTerminal(err)
}

// IsConnectionLost reports whether err is the binlog connection breaking under the reader: the
// source killed it or went away, or the network failed.
func IsConnectionLost(err error) bool {
	return errors.Is(err, mysql.ErrBadConn)
}

// CheckHistory checks that a source whose binary log history is history contains the recorded
// position pos; it returns an error wrapping ErrNotInHistory, naming what is missing, when it
// does not. history is the source's GTID history for the GTID flavors (MariaDB:
// @@gtid_binlog_state, every domain and server id it has logged; MySQL: @@gtid_executed) and
// the newline- or comma-separated names of its binary log files (SHOW BINARY LOGS) for
// FlavorFilePos. An empty GTID position (a workflow recorded before its source logged any GTID)
// is in every history.
func CheckHistory(pos Position, history string) error {
	history = strings.ReplaceAll(strings.TrimSpace(history), "\n", "")
	switch pos.Flavor {
	case FlavorFilePos:
		for _, f := range strings.Split(history, ",") {
			if strings.TrimSpace(f) == pos.File {
				return nil
			}
		}
		return fmt.Errorf("%w: binary log file %s is not on the source (purged, or another server's)", ErrNotInHistory, pos.File)
	case FlavorMariaDB:
		return checkMariaDB(pos, history)
	case FlavorMySQL:
		if pos.GTID == nil || pos.GTID.IsEmpty() {
			return nil
		}
		have, err := mysql.ParseMysqlGTIDSet(history)
		if err != nil {
			return fmt.Errorf("read the source's gtid_executed %q: %w", history, err)
		}
		if !have.Contain(pos.GTID) {
			return fmt.Errorf("%w: %s is not a subset of the source's gtid_executed %s", ErrNotInHistory, pos.GTID, have)
		}
		return nil
	}
	return fmt.Errorf("check source history: no position")
}

// checkMariaDB checks each domain of pos against the source's gtid_binlog_state: the domain and
// the server id of the recorded GTID must be in it, with a sequence number at least the
// recorded one.
func checkMariaDB(pos Position, state string) error {
	want, ok := pos.GTID.(*mysql.MariadbGTIDSet)
	if !ok || want.IsEmpty() {
		return nil
	}
	set, err := mysql.ParseMariadbGTIDSet(state)
	if err != nil {
		return fmt.Errorf("read the source's gtid_binlog_state %q: %w", state, err)
	}
	have := set.(*mysql.MariadbGTIDSet)
	var missing []string
	for _, g := range sortedGTIDs(want) {
		servers, ok := have.Sets[g.DomainID]
		switch {
		case !ok:
			missing = append(missing, fmt.Sprintf("domain %d (recorded %s) is not in it", g.DomainID, g))
		case servers[g.ServerID] == nil:
			missing = append(missing, fmt.Sprintf("server %d never logged in domain %d (recorded %s)", g.ServerID, g.DomainID, g))
		case servers[g.ServerID].SequenceNumber < g.SequenceNumber:
			missing = append(missing, fmt.Sprintf("it ends at %s, before the recorded %s", servers[g.ServerID], g))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: the source's gtid_binlog_state is %q: %s", ErrNotInHistory, state, strings.Join(missing, "; "))
	}
	return nil
}

// sortedGTIDs returns the GTIDs of s by domain and server id, for stable messages.
func sortedGTIDs(s *mysql.MariadbGTIDSet) []*mysql.MariadbGTID {
	var out []*mysql.MariadbGTID
	for _, servers := range s.Sets {
		for _, g := range servers {
			out = append(out, g)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].DomainID != out[j].DomainID {
			return out[i].DomainID < out[j].DomainID
		}
		return out[i].ServerID < out[j].ServerID
	})
	return out
}
