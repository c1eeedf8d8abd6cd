package applier

import (
	"context"
	"errors"

	"github.com/vplayer/vplayer/event"
)

// Fetcher is the relay log's consumer side. A Fetcher in front of the relay log (a gate that holds
// the stream at a position) may return ErrSettle: the applier then commits every event it
// fetched so far before it calls Fetch again.
type Fetcher interface {
	Fetch(ctx context.Context) ([]*event.Event, error)
}

// ErrSettle, returned by a Fetcher, asks the applier to commit everything fetched so far (with
// workers, a batch held open and the jobs in flight) before its next Fetch, which therefore
// finds the target at the last position handed over.
var ErrSettle = errors.New("settle what was fetched before fetching again")

// settle commits every batch planned from the events fetched so far (see ErrSettle): a batch
// held open (see scheduler.holdOpen), and the jobs in flight.
func (a *Applier) settle(ctx context.Context) error {
	if a.sched.held {
		if err := a.endFetch(ctx); err != nil {
			return err
		}
	}
	return a.drain(ctx)
}
