package relaylog_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vplayer/vplayer/event"
	"github.com/vplayer/vplayer/relaylog"
)

// A reader puts events while an applier fetches them in batches. The applier waits only a short
// idle time on an empty log by giving Fetch a context with a deadline.
func ExampleLog() {
	ctx := context.Background()
	log := relaylog.New(250000, 2) // at most 250000 bytes and 2 events

	done := make(chan error, 1)
	go func() { // the reader
		defer log.Close()
		for _, pos := range []string{"pos-1", "pos-2", "pos-3", "pos-4", "pos-5"} {
			if err := log.Put(ctx, &event.Event{Type: event.Commit, Pos: pos, Size: 100}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()

	for { // the applier
		idle, cancel := context.WithTimeout(ctx, time.Second)
		batch, err := log.Fetch(idle)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			continue // nothing arrived within the idle time: a place to record a heartbeat
		}
		if errors.Is(err, relaylog.ErrClosed) {
			break
		}
		if len(batch) > 2 {
			fmt.Println("batch over the item bound")
		}
		for _, e := range batch {
			fmt.Println(e.Type, e.Pos)
		}
	}
	fmt.Println("reader:", <-done)
	// Output:
	// COMMIT pos-1
	// COMMIT pos-2
	// COMMIT pos-3
	// COMMIT pos-4
	// COMMIT pos-5
	// reader: <nil>
}
