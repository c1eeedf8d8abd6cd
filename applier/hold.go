package applier

import (
	"context"
	"errors"
)

// Holding a batch open (with workers): the batch a fetch ends with waits, open, for the jobs in
// flight to commit, and the dispatcher's fetch is woken when they did (see holdOpen).

// errWoken ends a fetch that waits, with a batch held, for the jobs in flight to commit.
var errWoken = errors.New("the batches in flight committed")

// holdOpen reports whether the batch planned so far stays open when its fetch ends, rather than
// being dispatched: it is small (see maybeCut), each of its source transactions committed, and
// jobs are in flight. Dispatched now, it would only wait for their commits, and its own flush
// to disk after theirs; on a live source each fetch holds a transaction or two, so the jobs
// queued up behind one another, one commit each, where one session takes everything that
// arrived during its commit in one. Held, the batch takes the next fetches' transactions too,
// and goes once the jobs in flight committed (the dispatcher's fetch is woken for it, see
// wakeWhenCommitted) or it is large enough for a free worker (maybeCut), as the serial applier's
// next batch would. A batch is held for IdleWait at most: while it is, the dispatcher does no
// idle work (the heartbeat's write among it), and a job in flight may wait that long on a lock.
func (a *Applier) holdOpen() bool {
	p := &a.par
	if !p.on() || p.hot > 0 || p.inlineTx || a.plan.stopped || a.plan.inTxn || !a.plan.txOpen || a.plan.session() != "" {
		return false
	}
	if p.held && a.cfg.Now().Sub(p.heldSince) >= a.cfg.IdleWait {
		return false
	}
	if commits, bytes := a.plan.Pending(); commits >= cutTxns || bytes >= cutBytes {
		return false
	}
	return p.busy()
}

// endFetch plans and runs the end of the last fetch: its batch committed (with workers,
// dispatched), also when it was held open past that fetch's end.
func (a *Applier) endFetch(ctx context.Context) error {
	if p := &a.par; p.held {
		p.held = false
		p.mu.Lock()
		p.wake = nil // nothing waits for the jobs in flight now
		p.mu.Unlock()
	}
	steps, err := a.plan.EndFetch()
	if rerr := a.run(ctx, steps); rerr != nil {
		return rerr
	}
	return err
}

// wakeWhenCommitted returns the context the dispatcher fetches under: ctx, and, while a batch is
// held, ended with errWoken as soon as no job is in flight (at once when none is). done must be
// called once the fetch returned.
func (p *parallel) wakeWhenCommitted(ctx context.Context) (context.Context, func()) {
	if !p.held {
		return ctx, func() {}
	}
	wctx, wake := context.WithCancelCause(ctx)
	p.mu.Lock()
	if len(p.inflight) == 0 {
		wake(errWoken)
	} else {
		p.wake = wake
	}
	p.mu.Unlock()
	return wctx, func() {
		p.mu.Lock()
		p.wake = nil
		p.mu.Unlock()
		wake(nil)
	}
}

// fetchFailed reports whether ferr, from a fetch under wctx, is an error rather than the end of
// an idle wait or a wake for a held batch (see wakeWhenCommitted). Anything else a woken fetch
// returns (an error of Settle, say) is still one.
func fetchFailed(ferr error, wctx context.Context) bool {
	switch {
	case ferr == nil, errors.Is(ferr, context.DeadlineExceeded):
		return false
	case errors.Is(ferr, context.Canceled) && errors.Is(context.Cause(wctx), errWoken):
		return false
	}
	return true
}
