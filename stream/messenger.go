package stream

import (
	"context"
	"errors"
	"time"

	"github.com/vplayer/vplayer/workflow"
)

// messenger writes the record's message from one goroutine for the stream's whole life. The
// record's row may be locked (a heartbeat stall is exactly that), so the error path hands the
// message over without waiting, and the row gets it as soon as it can be written.
type messenger struct {
	lease *workflow.Lease // writes are fenced: a stream that lost its workflow writes nothing
	next  chan string     // capacity 1: the newest message wins
}

func newMessenger(lease *workflow.Lease) *messenger {
	return &messenger{lease: lease, next: make(chan string, 1)}
}

// set hands msg to the writer without blocking, replacing a message not yet written.
func (m *messenger) set(msg string) {
	for {
		select {
		case m.next <- msg:
			return
		default:
		}
		select {
		case <-m.next:
		default:
		}
	}
}

// run writes each message handed to it until ctx ends. A write that fails (a lock wait timeout)
// is tried again unless a newer message replaced it.
func (m *messenger) run(ctx context.Context) {
	for {
		var msg string
		select {
		case <-ctx.Done():
			return
		case msg = <-m.next:
		}
		for ctx.Err() == nil {
			err := m.lease.SetActiveMessage(ctx, msg)
			if err == nil || errors.Is(err, workflow.ErrLostOwnership) {
				break
			}
			select {
			case <-ctx.Done():
				return
			case newer := <-m.next:
				msg = newer
			case <-time.After(time.Second):
			}
		}
	}
}
