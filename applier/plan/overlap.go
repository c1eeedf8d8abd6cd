package plan

// Which keys of a batch the batches in flight touch, and how much two batches overlap: the
// writeset comparisons the scheduler and the split (Config.Split) decide by.

// lateKeys returns which keys of a folded batch the batches in flight, of writesets sets, may
// touch (see Config.Split).
func lateKeys(sets []*Writeset) func(*Table, string) bool {
	return func(t *Table, key string) bool {
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
func touchesAny(sets []*Writeset, k wkey) bool {
	for _, ws := range sets {
		if ws == nil || ws.touches(k) {
			return true
		}
	}
	return false
}

// LightOverlap reports whether few of ws's keys (a quarter at most) overlap sets, the writesets
// of the batches in flight (nil for one that overlaps everything): a batch split at its commit
// then runs mostly beside them (see Config.Split).
func (ws *Writeset) LightOverlap(sets []*Writeset) bool {
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

// StillHot reports whether ws, a batch planned with no job in flight, overlaps last, the batch
// that ran before it on the main session (nil: none since the last job), on more than a quarter
// of its keys, as lightOverlap counts them: the rows are still hot, and cut, the batch would only
// become a job that the rest of its fetch waits for (the scheduler's hot mode).
func StillHot(last, ws *Writeset) bool {
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
