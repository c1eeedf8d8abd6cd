package binlog

import (
	"encoding/json"
	"fmt"
)

// onlineState is what the reader knows of the online schema changes of the source: for each
// shadow table it met, the DDL run on it, until its cut-over or its DROP. It is saved (JSON, the
// workflow record's online_ddl) before any event after a change of it reaches the relay log, so
// that a workflow that restarts between a shadow table's ALTER and its cut-over still knows the
// ALTER; since the saved state may run ahead of the position the restart reads from, every
// change is named by the event that made it (its id: see translator.eventID) and the same event
// read again changes nothing.
type onlineState struct {
	Shadows []shadowRecord `json:"shadows"`
}

// shadowRecord is one shadow table's life, from its CREATE to its cut-over or DROP.
type shadowRecord struct {
	// Table is the shadow table's name, in the source database; Base is the table it stands
	// for, as its CREATE ... LIKE or its name says.
	Table string `json:"table"`
	Base  string `json:"base,omitempty"`
	// Created is the id of the shadow table's CREATE; empty when the reader did not meet it (the
	// workflow started after it), and so cannot know every DDL run on the table.
	Created string `json:"created,omitempty"`
	// Alters are the ALTER TABLE statements run on the shadow table, in order.
	Alters []recordedAlter `json:"alters,omitempty"`
	// Unsupported is the first other statement that changed the shadow table's definition, one
	// the reader cannot carry over to Base (CREATE INDEX ... ON the shadow table, say).
	Unsupported string `json:"unsupported,omitempty"`
	// CutOver is the id of the RENAME that put the shadow table in Base's place; Dropped the id
	// of the DROP that ended it without one. Either ends the record.
	CutOver string `json:"cut_over,omitempty"`
	Dropped string `json:"dropped,omitempty"`
}

// recordedAlter is an ALTER TABLE run on a shadow table: what follows the table's name.
type recordedAlter struct {
	ID   string `json:"id"`
	Spec string `json:"spec"`
}

// maxShadowRecords bounds the records kept: the oldest ended ones go first.
const maxShadowRecords = 64

// parseOnlineState reads a saved state; empty is none.
func parseOnlineState(s string) (onlineState, error) {
	var st onlineState
	if s == "" {
		return st, nil
	}
	if err := json.Unmarshal([]byte(s), &st); err != nil {
		return st, fmt.Errorf("read the online schema change state %q: %w", s, err)
	}
	return st, nil
}

// String returns the state as it is saved.
func (s *onlineState) String() string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // strings and slices only
	}
	return string(b)
}

func (r *shadowRecord) ended() bool { return r.CutOver != "" || r.Dropped != "" }

// complete reports whether the record knows every DDL run on its shadow table.
func (r *shadowRecord) complete() bool { return r.Created != "" && r.Unsupported == "" }

// open returns the record of shadow table table that has not ended, or nil.
func (s *onlineState) open(table string) *shadowRecord {
	for i := len(s.Shadows) - 1; i >= 0; i-- {
		if r := &s.Shadows[i]; r.Table == table && !r.ended() {
			return r
		}
	}
	return nil
}

// find returns the record of shadow table table that has is true, or nil.
func (s *onlineState) find(table string, has func(*shadowRecord) bool) *shadowRecord {
	for i := len(s.Shadows) - 1; i >= 0; i-- {
		if r := &s.Shadows[i]; r.Table == table && has(r) {
			return r
		}
	}
	return nil
}

// created records the CREATE id of shadow table table for base; it reports whether the state
// changed. An open record of the same table (its DROP unseen) ends there.
func (s *onlineState) created(table, base, id string) bool {
	if s.find(table, func(r *shadowRecord) bool { return r.Created == id }) != nil {
		return false
	}
	if r := s.open(table); r != nil {
		r.Dropped = id
	}
	s.Shadows = append(s.Shadows, shadowRecord{Table: table, Base: base, Created: id})
	s.trim()
	return true
}

// altered records the ALTER id of shadow table table; it reports whether the state changed.
func (s *onlineState) altered(table, base, spec, id string) bool {
	if s.find(table, func(r *shadowRecord) bool { return r.hasAlter(id) }) != nil {
		return false
	}
	r := s.openOrNew(table, base)
	r.Alters = append(r.Alters, recordedAlter{ID: id, Spec: spec})
	return true
}

func (r *shadowRecord) hasAlter(id string) bool {
	for _, a := range r.Alters {
		if a.ID == id {
			return true
		}
	}
	return false
}

// unsupported records a statement that changed shadow table table in a way the reader cannot
// carry over; it reports whether the state changed.
func (s *onlineState) unsupported(table, base, query string) bool {
	r := s.openOrNew(table, base)
	if r.Unsupported != "" {
		return false
	}
	r.Unsupported = query
	return true
}

// dropped records the DROP id of shadow table table; it reports whether the state changed.
func (s *onlineState) dropped(table, id string) bool {
	if s.find(table, func(r *shadowRecord) bool { return r.Dropped == id }) != nil {
		return false
	}
	r := s.open(table)
	if r == nil {
		return false
	}
	r.Dropped = id
	return true
}

// cutOver records the cut-over id of shadow table table and returns its record, nil when the
// reader knows nothing of the table; changed says whether the state changed.
func (s *onlineState) cutOver(table, id string) (r *shadowRecord, changed bool) {
	if r := s.find(table, func(r *shadowRecord) bool { return r.CutOver == id }); r != nil {
		return r, false
	}
	if r = s.open(table); r == nil {
		return nil, false
	}
	r.CutOver = id
	return r, true
}

// pendingFor reports whether a shadow table of base is open: a RENAME of base to one of its
// trash tables is then the first step of a cut-over in two statements.
func (s *onlineState) pendingFor(base string) bool {
	for i := range s.Shadows {
		if r := &s.Shadows[i]; r.Base == base && !r.ended() {
			return true
		}
	}
	return false
}

func (s *onlineState) openOrNew(table, base string) *shadowRecord {
	if r := s.open(table); r != nil {
		return r
	}
	s.Shadows = append(s.Shadows, shadowRecord{Table: table, Base: base})
	s.trim()
	return &s.Shadows[len(s.Shadows)-1]
}

// trim drops the oldest ended records beyond maxShadowRecords.
func (s *onlineState) trim() {
	for len(s.Shadows) > maxShadowRecords {
		i := 0
		for i < len(s.Shadows) && !s.Shadows[i].ended() {
			i++
		}
		if i == len(s.Shadows) {
			return // every one open: none can go
		}
		s.Shadows = append(s.Shadows[:i], s.Shadows[i+1:]...)
	}
}

// prune drops the records whose end the position start contains: a stream that starts there
// never reads their cut-over or DROP again. It reports whether the state changed.
func (s *onlineState) prune(start Position) bool {
	kept := s.Shadows[:0]
	for _, r := range s.Shadows {
		end := r.CutOver
		if end == "" {
			end = r.Dropped
		}
		if end != "" {
			if p, err := ParsePosition(end, ""); err == nil && start.Contains(p) {
				continue
			}
		}
		kept = append(kept, r)
	}
	changed := len(kept) != len(s.Shadows)
	clear(s.Shadows[len(kept):])
	s.Shadows = kept
	return changed
}
