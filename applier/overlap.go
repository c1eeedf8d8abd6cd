package applier

import (
	"github.com/vplayer/vplayer/applier/plan"
)

// The scheduler's view of the jobs in flight: which one a batch overlaps, and which of a batch's
// keys they touch (see parallel.go).

// lightOverlap reports whether few of ws's keys (a quarter at most) overlap jobs in flight: a
// batch split at its commit then runs mostly beside them (see plan.Config.Split).
func (s *scheduler) lightOverlap(ws *plan.Writeset) bool { return ws.LightOverlap(s.inFlightSets()) }

// overlapping returns the latest job in flight whose writeset overlaps ws, or nil.
func (s *scheduler) overlapping(ws *plan.Writeset) *job {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.inflight) - 1; i >= 0; i-- {
		if j := s.inflight[i]; j.ws == nil || ws == nil || j.ws.OverlapsIndexed(ws) {
			return j
		}
	}
	return nil
}
