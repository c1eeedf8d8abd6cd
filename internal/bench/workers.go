package bench

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ParseApplyWorkers reads --apply-workers' list, "1,4": worker counts of at least 1, each once,
// kept in the order given (the order they are timed in).
func ParseApplyWorkers(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty list: want worker counts such as 1,4")
	}
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q is not a worker count", strings.TrimSpace(f))
		}
		out = append(out, n)
	}
	if err := checkWorkers(out); err != nil {
		return nil, err
	}
	return out, nil
}

// checkWorkers reports a worker count below 1 or given twice.
func checkWorkers(ns []int) error {
	for i, n := range ns {
		if n < 1 {
			return fmt.Errorf("--apply-workers has %d: every entry must be at least 1", n)
		}
		if slices.Contains(ns[:i], n) {
			return fmt.Errorf("--apply-workers has %d twice: each worker count gets one target", n)
		}
	}
	return nil
}

// workerCounts are the vplayer targets' worker counts: ApplyWorkers, or one 0 (the binary's
// default, no flag passed) when it is empty.
func (o Options) workerCounts() []int {
	if len(o.ApplyWorkers) == 0 {
		return []int{0}
	}
	return o.ApplyWorkers
}

// vplayerName is the applier name of the build under test with n workers: "vplayer" for the
// binary's default (0), else "vplayer (n workers)".
func vplayerName(n int) string {
	switch n {
	case 0:
		return nameVplayer
	case 1:
		return nameVplayer + " (1 worker)"
	}
	return fmt.Sprintf("%s (%d workers)", nameVplayer, n)
}

// vplayerServerID is the server id of the i-th build-under-test target: vplayerID for the first,
// then above every other server's.
func vplayerServerID(i int) uint32 {
	if i == 0 {
		return vplayerID
	}
	return compareID + uint32(i)
}

// vplayerServerName is the i-th build-under-test target's server name (its datadir's label).
func vplayerServerName(n int) string {
	if n == 0 {
		return "bench-vplayer"
	}
	return "bench-vplayer-w" + strconv.Itoa(n)
}

// hotrowMaxSlowdown is the hotrow mode's target: N workers at most 5% slower than one.
const hotrowMaxSlowdown = 0.05

// workersLines compare each vplayer row with N > 1 workers against the row with one worker, one
// line each; none without a one-worker row. In the hotrow mode each line says whether N stayed
// within hotrowMaxSlowdown of one worker.
func (r *Result) workersLines() []string {
	i := slices.IndexFunc(r.Appliers, func(a Applier) bool { return a.ApplyWorkers == 1 })
	if i < 0 || r.Appliers[i].TransactionsPerSec <= 0 {
		return nil
	}
	one := r.Appliers[i]
	var out []string
	for _, a := range r.Appliers {
		if a.ApplyWorkers <= 1 {
			continue
		}
		ratio := a.TransactionsPerSec / one.TransactionsPerSec
		line := fmt.Sprintf("%s / %s: %.2fx txn/s (%+.1f%%), peak RSS %s vs %s", a.Name, one.Name, ratio, (ratio-1)*100, mib(a.PeakRSSBytes), mib(one.PeakRSSBytes))
		if r.Mode == ModeHotrow {
			verdict := "met"
			if ratio < 1-hotrowMaxSlowdown {
				verdict = "MISSED"
			}
			line += fmt.Sprintf("; target at most %.0f%% slower: %s", hotrowMaxSlowdown*100, verdict)
		}
		out = append(out, line)
	}
	return out
}
