package applier

import (
	"strconv"
	"time"
)

// Work is what the applier is doing at one instant, for the stall watchdog. Zero times mean
// "not at all".
type Work struct {
	// ProgressSince is when the applier, holding work, last made progress: took fetched items,
	// completed a round trip or committed.
	ProgressSince time.Time
	// TxnSince is when the open target transaction began.
	TxnSince time.Time
	// Statement is the shape of the round trip in flight (kind and table, never values) that
	// has waited longest, with its worker when several run (`UPDATE `db`.`t` on worker 2`), and
	// StatementSince when it was sent.
	Statement      string
	StatementSince time.Time
}

// Work reports what the applier is doing now. O(workers): a few atomic loads per session.
func (a *Applier) Work() Work {
	w := Work{ProgressSince: unixNano(a.progressSince.Load())}
	txn, since := a.txnSince.Load(), a.inline.since.Load()
	var stmt *string
	if since != 0 {
		stmt = a.inline.statement.Load()
	}
	label := -1
	for _, wk := range a.workers() {
		if t := wk.txnSince.Load(); t != 0 && (txn == 0 || t < txn) {
			txn = t
		}
		if t := wk.s.tr.since.Load(); t != 0 && (since == 0 || t < since) {
			if p := wk.s.tr.statement.Load(); p != nil {
				since, stmt, label = t, p, wk.n
			}
		}
	}
	w.TxnSince, w.StatementSince = unixNano(txn), unixNano(since)
	if stmt != nil {
		w.Statement = *stmt
		if label >= 0 {
			w.Statement += " on worker " + strconv.Itoa(label)
		}
	}
	return w
}

// unixNano is the time of n unix nanoseconds, the zero time for 0.
func unixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// progressed moves the progress clock to now while the applier holds work.
func (a *Applier) progressed() {
	a.progressSince.Store(a.cfg.Now().UnixNano())
}
