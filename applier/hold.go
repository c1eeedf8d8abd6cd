package applier

import (
	"context"
	"errors"
)

// Holding a batch open (with workers): the batch a fetch ends with waits, open, for the jobs in
// flight to commit, and the dispatcher's fetch is woken when they did (see scheduler.holdOpen).

// errWoken ends a fetch that waits, with a batch held, for the jobs in flight to commit.
var errWoken = errors.New("the batches in flight committed")

// endFetch plans and runs the end of the last fetch: its batch committed (with workers,
// dispatched), also when it was held open past that fetch's end.
func (a *Applier) endFetch(ctx context.Context) error {
	a.sched.released()
	a.plan.InFlight(a.sched.inFlightSets())
	steps, err := a.plan.EndFetch()
	if rerr := a.run(ctx, steps); rerr != nil {
		return rerr
	}
	return err
}

// wakeWhenCommitted returns the context the dispatcher fetches under: ctx, and, while a batch is
// held, ended with errWoken as soon as no job is in flight (at once when none is). done must be
// called once the fetch returned.
func (s *scheduler) wakeWhenCommitted(ctx context.Context) (context.Context, func()) {
	if !s.held {
		return ctx, func() {}
	}
	wctx, wake := context.WithCancelCause(ctx)
	s.mu.Lock()
	if len(s.inflight) == 0 {
		wake(errWoken)
	} else {
		s.wake = func() { wake(errWoken) }
	}
	s.mu.Unlock()
	return wctx, func() {
		s.mu.Lock()
		s.wake = nil
		s.mu.Unlock()
		wake(nil)
	}
}

// fetchFailed reports whether ferr, from a fetch under wctx, is an error rather than the end of
// an idle wait or a wake for a held batch (see wakeWhenCommitted). Anything else a woken fetch
// returns is still one.
func fetchFailed(ferr error, wctx context.Context) bool {
	switch {
	case ferr == nil, errors.Is(ferr, context.DeadlineExceeded):
		return false
	case errors.Is(ferr, context.Canceled) && errors.Is(context.Cause(wctx), errWoken):
		return false
	}
	return true
}
