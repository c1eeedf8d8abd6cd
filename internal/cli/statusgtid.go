package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/vplayer/vplayer/binlog"
)

// How many source transactions a GTID position lacks, for vplayer status: the transactions in
// the source's GTID set that the workflow's recorded set does not contain. The sets are read from
// their text, as the servers print them.

// gtidBehind returns how many transactions of the source's GTID position src the recorded
// position rec does not contain. Both must be of one GTID flavor.
func gtidBehind(src, rec binlog.Position) (int64, error) {
	if src.Flavor != rec.Flavor {
		return 0, fmt.Errorf("the source's position is %s, the workflow's %s", src.Flavor, rec.Flavor)
	}
	var s, r string
	if src.GTID != nil {
		s = src.GTID.String()
	}
	if rec.GTID != nil {
		r = rec.GTID.String()
	}
	switch src.Flavor {
	case binlog.FlavorMariaDB:
		return mariaBehind(s, r)
	case binlog.FlavorMySQL:
		return mysqlBehind(s, r)
	}
	return 0, fmt.Errorf("%s is not a GTID position", src.Flavor)
}

// mariaBehind counts, per replication domain, the sequence numbers of the source's position src
// past the recorded position rec's (MariaDB GTID lists, "domain-server-seq,..."). Sequence
// numbers of a domain follow one another whichever server wrote them, as MariaDB compares them.
func mariaBehind(src, rec string) (int64, error) {
	s, err := mariaSeqs(src)
	if err != nil {
		return 0, err
	}
	r, err := mariaSeqs(rec)
	if err != nil {
		return 0, err
	}
	var n int64
	for domain, seq := range s {
		if seq > r[domain] {
			n += int64(seq - r[domain])
		}
	}
	return n, nil
}

// mariaSeqs returns the highest sequence number of each domain of a MariaDB GTID list.
func mariaSeqs(list string) (map[uint64]uint64, error) {
	out := map[uint64]uint64{}
	for _, g := range strings.Split(list, ",") {
		g = strings.TrimSpace(g)
		if g == "" {
			continue
		}
		parts := strings.Split(g, "-")
		if len(parts) != 3 {
			return nil, fmt.Errorf("MariaDB GTID %q: want domain-server-sequence", g)
		}
		domain, err1 := strconv.ParseUint(parts[0], 10, 32)
		seq, err2 := strconv.ParseUint(parts[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("MariaDB GTID %q: want domain-server-sequence", g)
		}
		out[domain] = max(out[domain], seq)
	}
	return out, nil
}

// interval is a closed range of GTID numbers.
type interval struct{ lo, hi uint64 }

// mysqlBehind counts the GTIDs of the MySQL GTID set src that rec does not contain.
func mysqlBehind(src, rec string) (int64, error) {
	s, err := mysqlSet(src)
	if err != nil {
		return 0, err
	}
	r, err := mysqlSet(rec)
	if err != nil {
		return 0, err
	}
	var n int64
	for key, ivs := range s {
		n += int64(missing(ivs, r[key]))
	}
	return n, nil
}

// mysqlSet parses a MySQL GTID set ("uuid:1-5:7,uuid2:tag:1-3") into merged intervals by source
// (the uuid, and the tag of MySQL 8.4's tagged GTIDs).
func mysqlSet(set string) (map[string][]interval, error) {
	out := map[string][]interval{}
	for _, elem := range strings.Split(set, ",") {
		elem = strings.TrimSpace(elem)
		if elem == "" {
			continue
		}
		parts := strings.Split(elem, ":")
		uuid := strings.ToLower(strings.TrimSpace(parts[0]))
		if len(parts) < 2 || uuid == "" {
			return nil, fmt.Errorf("MySQL GTID set element %q: want uuid:interval[:interval...]", elem)
		}
		key := uuid
		for _, p := range parts[1:] {
			p = strings.TrimSpace(p)
			iv, ok := parseInterval(p)
			if !ok {
				key = uuid + ":" + strings.ToLower(p) // a tag: the intervals after it are its own
				continue
			}
			out[key] = append(out[key], iv)
		}
	}
	for k, ivs := range out {
		out[k] = merge(ivs)
	}
	return out, nil
}

// parseInterval parses "n" or "lo-hi".
func parseInterval(s string) (interval, bool) {
	lo, hi, isRange := strings.Cut(s, "-")
	a, err := strconv.ParseUint(lo, 10, 64)
	if err != nil {
		return interval{}, false
	}
	if !isRange {
		return interval{a, a}, true
	}
	b, err := strconv.ParseUint(hi, 10, 64)
	if err != nil || b < a {
		return interval{}, false
	}
	return interval{a, b}, true
}

// merge sorts intervals and joins those that overlap or touch.
func merge(ivs []interval) []interval {
	slices.SortFunc(ivs, func(a, b interval) int {
		switch {
		case a.lo < b.lo:
			return -1
		case a.lo > b.lo:
			return 1
		}
		return 0
	})
	var out []interval
	for _, iv := range ivs {
		if n := len(out); n > 0 && iv.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, iv.hi)
			continue
		}
		out = append(out, iv)
	}
	return out
}

// missing counts the numbers in the intervals have that are not in the intervals of; each list
// is merged (sorted, disjoint).
func missing(have, of []interval) uint64 {
	var n uint64
	for _, h := range have {
		n += h.hi - h.lo + 1
		for _, o := range of {
			lo, hi := max(h.lo, o.lo), min(h.hi, o.hi)
			if lo <= hi {
				n -= hi - lo + 1
			}
		}
	}
	return n
}
