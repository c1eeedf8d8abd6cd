package applier

// The scheduler's view of the jobs in flight: which one a batch overlaps, and which of a batch's
// keys they touch (see parallel.go).

// lateKeys returns which keys of a folded batch the batches in flight, of writesets sets, may
// touch (see planConfig.split).
func lateKeys(sets []*writeset) func(*table, string) bool {
	return func(t *table, key string) bool {
		// A folded table's one unique key is its primary key, which the fold's keys are
		// literals of; one compared under a collation is recorded whole by every writeset.
		u := &t.uniques[0]
		if !u.exact {
			return true
		}
		return touchesAny(sets, wkey{table: t.quoted, index: u.name, value: key})
	}
}

// touchesAny reports whether one of sets (a nil one overlapping everything) touches k.
func touchesAny(sets []*writeset, k wkey) bool {
	for _, ws := range sets {
		if ws == nil || ws.touches(k) {
			return true
		}
	}
	return false
}

// lightOverlap reports whether few of ws's keys (a quarter at most) overlap jobs in flight: a
// batch split at its commit then runs mostly beside them (see planConfig.split).
func (s *scheduler) lightOverlap(ws *writeset) bool {
	sets := s.inFlightSets()
	n := 0
	for _, k := range ws.keys {
		if k.wholeTable() || k.wholeIndex() {
			return false
		}
		if touchesAny(sets, k) {
			n++
		}
	}
	return 4*n <= len(ws.keys)
}

// overlapping returns the latest job in flight whose writeset overlaps ws, or nil.
func (s *scheduler) overlapping(ws *writeset) *job {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.inflight) - 1; i >= 0; i-- {
		if j := s.inflight[i]; j.ws == nil || ws == nil || j.ws.overlapsIndexed(ws) {
			return j
		}
	}
	return nil
}

// stillHot reports whether ws, a batch planned with no job in flight, overlaps last, the batch
// that ran before it on the main session (nil: none since the last job), on more than a quarter
// of its keys, as lightOverlap counts them: the rows are still hot, and cut, the batch would only
// become a job that the rest of its fetch waits for (see scheduler.hot).
func stillHot(last, ws *writeset) bool {
	if last == nil || last.barrier || ws.barrier {
		return false // a transaction too large to hold, DDL or XA says nothing about hot rows
	}
	n := 0
	for _, k := range ws.keys {
		if k.wholeTable() || k.wholeIndex() || last.touches(k) {
			n++
		}
	}
	return 4*n > len(ws.keys)
}
