package gate

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vplayer/vplayer/event"
	"github.com/vplayer/vplayer/throttle"
)

// TestGate_throttleBeganDuringFetch: a throttle that begins while the applier's fetch waits in
// the relay log (the applier idle at a boundary) holds the transactions that end the wait: none
// is applied while held; they go once the throttle ends.
func TestGate_throttleBeganDuringFetch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var manual atomic.Bool
		th := throttle.New(throttle.Config{Manual: func() throttle.Manual {
			if manual.Load() {
				return throttle.Manual{Until: throttle.Forever()}
			}
			return throttle.Manual{}
		}})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			th.Run(ctx)
			close(done)
		}()
		synctest.Wait()
		// checked is how long the throttler takes to see a change: past its next check (1s).
		const checked = 1500 * time.Millisecond
		n := 0
		relay := fakeFetcher{fetch: func(ctx context.Context) ([]*event.Event, error) {
			if n++; n > 1 {
				return nil, context.DeadlineExceeded
			}
			manual.Store(true) // vplayer throttle, while the fetch waits for events
			time.Sleep(checked)
			return concat(txn(1), txn(2)), nil
		}}
		g := New(relay, NewRequest(), Config{Flavor: "mariadb", Start: "MariaDB/0-1-0"})
		g.throttle = th
		if got, want := fetchShow(context.Background(), g), ""; got != want {
			t.Errorf("fetch that waited while the throttle began=%q, want %q (nothing handed over)", got, want)
		}
		if got, want := fetchShow(cancelled(), g), "error: "+context.Canceled.Error(); got != want {
			t.Errorf("fetch while throttled=%q, want %q", got, want)
		}
		manual.Store(false) // vplayer unthrottle
		time.Sleep(checked)
		if got, want := fetchShow(context.Background(), g), "B R C1 B R C2"; got != want {
			t.Errorf("fetch after the throttle=%q, want %q", got, want)
		}
		cancel()
		<-done
	})
}
