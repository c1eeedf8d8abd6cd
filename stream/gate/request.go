package gate

import (
	"sync"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/workflow"
)

// Request is the pause in force, as the stream last read it from the record (a vplayer diff
// pause) or as the copy set it (its snapshot's position). One goroutine sets it; the gates that
// share it read it. It may outlive a gate: a new attempt's gate starts paused if a pause is in
// force.
type Request struct {
	mu   sync.Mutex
	raw  string          // "", workflow.PauseHold, workflow.PauseHeld or a stored position
	pos  binlog.Position // raw parsed, when it is a position
	wake chan struct{}   // capacity 1: raw changed
}

// NewRequest returns a request with no pause in force.
func NewRequest() *Request {
	return &Request{wake: make(chan struct{}, 1)}
}

// Set records the pause in force: "" for none, workflow.PauseHold or workflow.PauseHeld for the
// next transaction boundary, else a position of flavor, up to and including which the gate hands
// events over. A position that does not parse holds the stream where it is (a pause must never be
// read as permission to go on). It reports whether the request changed.
func (p *Request) Set(raw, flavor string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if raw == p.raw {
		return false
	}
	p.raw, p.pos = raw, binlog.Position{}
	if raw != "" && raw != workflow.PauseHold && raw != workflow.PauseHeld {
		if pos, err := binlog.ParsePosition(raw, flavor); err == nil {
			p.pos = pos
		}
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return true
}

// get returns whether a pause is in force and, for a pause at a position, that position (zero:
// pause at the next transaction boundary).
func (p *Request) get() (active bool, at binlog.Position) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.raw != "", p.pos
}
