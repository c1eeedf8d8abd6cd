// Package relaylog is the bounded buffer between the binlog reader and the applier.
//
// The reader Puts events one at a time and blocks while the log is full; the applier Fetches
// everything buffered at once and blocks while the log is empty. The log is bounded both in bytes
// (as event.Event.Bytes accounts them) and in items. Both sides honour context cancellation.
//
// The package starts no goroutines and uses no timers: a caller that wants to wait only a short
// idle time in Fetch passes a context with a deadline, and the stall watchdog observes the log from
// outside through Len, Size, Blocked and BlockedTotal, which never block.
package relaylog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vplayer/vplayer/event"
)

// ErrClosed is returned by Put after Close, and by Fetch after Close once the log is empty.
var ErrClosed = errors.New("relay log closed")

// Log is a bounded, in-order buffer of events with one or more producers calling Put and a
// consumer calling Fetch. Create it with New; the zero value is not usable. All methods are safe
// for concurrent use.
//
// Invariants: Len() <= maxItems always; Size() <= maxBytes unless the log holds exactly one item
// whose Bytes() exceeds maxBytes (an oversized item is admitted alone into an empty log so that it
// can never deadlock the pipeline).
type Log struct {
	maxBytes int
	maxItems int

	mu     sync.Mutex
	items  []*event.Event // buffered events in Put order; reused across Fetches
	bytes  int            // sum of Bytes() over items
	closed bool
	// notEmpty and notFull are created by the first waiter and closed (then set to nil) by the
	// next state change that may let it proceed, so that a waiter can select on them together with
	// ctx.Done(). They are nil while nobody waits, so the fast paths allocate nothing.
	notEmpty chan struct{}
	notFull  chan struct{}
	// putWaiters is the number of Puts currently waiting for room.
	putWaiters int

	// Mirrors for lock-free observation; written only with mu held.
	len          atomic.Int64
	size         atomic.Int64
	blockedSince atomic.Pointer[time.Time] // nil when no Put waits
	blockedTotal atomic.Int64              // nanoseconds
}

// New returns an empty Log that holds at most maxBytes bytes (as event.Event.Bytes counts them)
// and at most maxItems events, except that one event larger than maxBytes is admitted alone into
// an empty log.
//
// Both bounds must be at least 1; New panics otherwise. Callers validate their configuration into
// an error before calling New.
func New(maxBytes, maxItems int) *Log {
	if maxBytes < 1 {
		panic(fmt.Sprintf("relaylog: New: maxBytes must be >= 1, got %d", maxBytes))
	}
	if maxItems < 1 {
		panic(fmt.Sprintf("relaylog: New: maxItems must be >= 1, got %d", maxItems))
	}
	return &Log{maxBytes: maxBytes, maxItems: maxItems}
}

// Put appends e, which must not be nil, to the log. If adding e would take the log over maxBytes
// or maxItems, Put blocks until a Fetch makes room; an empty log always admits e, however large.
//
// Put returns nil once e is buffered. It returns ErrClosed if the log is or becomes closed before
// e is buffered, and ctx.Err() if ctx ends while Put is waiting for room; in both cases e is not
// buffered. When there is room, Put admits e without consulting ctx.
//
// Events from one goroutine are fetched in the order they were put. The order in which concurrent
// Puts from different goroutines are admitted is unspecified.
func (l *Log) Put(ctx context.Context, e *event.Event) error {
	if e == nil {
		panic("relaylog: Put: nil event")
	}
	n := e.Bytes()

	l.mu.Lock()
	var start time.Time // when this Put began waiting; zero while it has not waited
	defer func() {
		if !start.IsZero() {
			l.putWaiters--
			if l.putWaiters == 0 {
				l.blockedSince.Store(nil)
			}
			l.blockedTotal.Add(int64(time.Since(start)))
		}
		l.mu.Unlock()
	}()

	for {
		if l.closed {
			return ErrClosed
		}
		if len(l.items) == 0 || (l.bytes+n <= l.maxBytes && len(l.items) < l.maxItems) {
			l.items = append(l.items, e)
			l.bytes += n
			l.len.Store(int64(len(l.items)))
			l.size.Store(int64(l.bytes))
			if l.notEmpty != nil {
				close(l.notEmpty)
				l.notEmpty = nil
			}
			return nil
		}

		if start.IsZero() {
			start = time.Now()
			l.putWaiters++
			if l.putWaiters == 1 {
				since := start
				l.blockedSince.Store(&since)
			}
		}
		if l.notFull == nil {
			l.notFull = make(chan struct{})
		}
		wake := l.notFull
		l.mu.Unlock()
		select {
		case <-wake:
			l.mu.Lock()
		case <-ctx.Done():
			l.mu.Lock()
			return ctx.Err()
		}
	}
}

// Fetch removes and returns every buffered event, oldest first, in a newly allocated slice that
// the caller owns. If the log is empty, Fetch blocks until a Put arrives.
//
// If ctx ends while Fetch is waiting, Fetch returns (nil, ctx.Err()); a caller that wants to wait
// only a short idle time passes a context with that deadline. After Close, Fetch first returns the
// events still buffered, then (nil, ErrClosed).
func (l *Log) Fetch(ctx context.Context) ([]*event.Event, error) {
	l.mu.Lock()
	for len(l.items) == 0 {
		if l.closed {
			l.mu.Unlock()
			return nil, ErrClosed
		}
		if l.notEmpty == nil {
			l.notEmpty = make(chan struct{})
		}
		wake := l.notEmpty
		l.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		l.mu.Lock()
	}

	// Copy out and keep the internal buffer: one exact-size allocation per Fetch, and the buffer,
	// never longer than maxItems, is reused by later Puts.
	out := make([]*event.Event, len(l.items))
	copy(out, l.items)
	clear(l.items) // drop references so fetched events can be collected
	l.items = l.items[:0]
	l.bytes = 0
	l.len.Store(0)
	l.size.Store(0)
	if l.notFull != nil {
		close(l.notFull)
		l.notFull = nil
	}
	l.mu.Unlock()
	return out, nil
}

// Close closes the log and wakes every waiting Put and Fetch. Later Puts return ErrClosed; Fetch
// returns what is still buffered, then ErrClosed. Close is idempotent.
func (l *Log) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	if l.notEmpty != nil {
		close(l.notEmpty)
		l.notEmpty = nil
	}
	if l.notFull != nil {
		close(l.notFull)
		l.notFull = nil
	}
}

// Len returns the number of buffered events, at most maxItems. It never blocks.
func (l *Log) Len() int {
	return int(l.len.Load())
}

// Size returns the buffered bytes, as event.Event.Bytes counts them: at most maxBytes, unless the
// log holds exactly one oversized event. It never blocks. Len and Size are read separately, so a
// pair of calls may straddle a Put or Fetch.
func (l *Log) Size() int {
	return int(l.size.Load())
}

// Blocked reports whether at least one Put is waiting for room and, if so, since when: the time
// (from time.Now) at which a Put began waiting while no other Put was waiting. since stays fixed
// for as long as some Put keeps waiting. When ok is false, since is the zero Time. It never
// blocks.
func (l *Log) Blocked() (since time.Time, ok bool) {
	p := l.blockedSince.Load()
	if p == nil {
		return time.Time{}, false
	}
	return *p, true
}

// BlockedTotal returns the cumulative time Puts have spent waiting for room since New, added as
// each waiting Put returns (admitted, cancelled or closed); a Put still waiting is not yet counted.
// With concurrent Puts the waits are summed, so the total can exceed wall-clock time. It never
// blocks.
func (l *Log) BlockedTotal() time.Duration {
	return time.Duration(l.blockedTotal.Load())
}
