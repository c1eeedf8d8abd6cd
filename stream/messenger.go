package stream

import (
	"context"
	"time"

	"github.com/vplayer/vplayer/workflow"
)

// messenger writes the record's message from one goroutine for the stream's whole life. The
// record's row may be locked (a heartbeat stall is exactly that), so the error path hands the
// message over without waiting, and the row gets it as soon as it can be written.
type messenger struct {
	store *workflow.Store
	id    int64
	next  chan string // capacity 1: the newest message wins
}

func newMessenger(store *workflow.Store, id int64) *messenger {
	return &messenger{store: store, id: id, next: make(chan string, 1)}
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
			if err := m.store.SetMessage(ctx, m.id, msg); err == nil {
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
