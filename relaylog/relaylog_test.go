package relaylog

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/vplayer/vplayer/event"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// ev returns an event of the given accounted size, tagged with seq in Timestamp.
func ev(seq int64, size int) *event.Event {
	return &event.Event{Type: event.Rows, Timestamp: seq, Size: size}
}

// goPut runs l.Put in a new goroutine and returns a channel that receives its result.
func goPut(ctx context.Context, l *Log, e *event.Event) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- l.Put(ctx, e) }()
	return ch
}

type fetchResult struct {
	items []*event.Event
	err   error
}

// goFetch runs l.Fetch in a new goroutine and returns a channel that receives its result.
func goFetch(ctx context.Context, l *Log) <-chan fetchResult {
	ch := make(chan fetchResult, 1)
	go func() {
		items, err := l.Fetch(ctx)
		ch <- fetchResult{items, err}
	}()
	return ch
}

// ready reports whether ch has a value after every goroutine in the bubble has settled, and
// returns it.
func ready[T any](ch <-chan T) (T, bool) {
	synctest.Wait()
	select {
	case v := <-ch:
		return v, true
	default:
		var zero T
		return zero, false
	}
}

func seqs(items []*event.Event) []int64 {
	out := make([]int64, len(items))
	for i, e := range items {
		out[i] = e.Timestamp
	}
	return out
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func mustPut(t *testing.T, l *Log, e *event.Event) {
	t.Helper()
	if err := l.Put(t.Context(), e); err != nil {
		t.Fatalf("Put(size %d) = %v, want nil", e.Size, err)
	}
}

func TestNew_Panics(t *testing.T) {
	tests := []struct {
		name               string
		maxBytes, maxItems int
	}{
		{"zero bytes", 0, 1},
		{"negative bytes", -1, 1},
		{"zero items", 1, 0},
		{"negative items", 1, -5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%d, %d) did not panic", tt.maxBytes, tt.maxItems)
				}
			}()
			New(tt.maxBytes, tt.maxItems)
		})
	}
}

func TestLog_Put(t *testing.T) {
	tests := []struct {
		name               string
		maxBytes, maxItems int
		buffered           []int // sizes already in the log
		size               int   // size of the next Put
		wantBlock          bool
	}{
		{"empty log admits", 10, 3, nil, 5, false},
		{"fills bytes exactly", 10, 3, []int{4}, 6, false},
		{"byte bound blocks", 10, 3, []int{4}, 7, true},
		{"fills items exactly", 100, 3, []int{1, 1}, 1, false},
		{"item bound blocks", 100, 3, []int{1, 1, 1}, 1, true},
		{"oversized admitted alone into empty log", 10, 3, nil, 11, false},
		{"oversized blocks on non-empty log", 10, 3, []int{1}, 11, true},
		{"single item bound", 100, 1, []int{1}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := New(tt.maxBytes, tt.maxItems)
				for i, s := range tt.buffered {
					mustPut(t, l, ev(int64(i), s))
				}
				last := int64(len(tt.buffered))
				done := goPut(t.Context(), l, ev(last, tt.size))

				err, finished := ready(done)
				if got, want := !finished, tt.wantBlock; got != want {
					t.Fatalf("Put blocked = %v, want %v", got, want)
				}
				if finished {
					if err != nil {
						t.Fatalf("Put = %v, want nil", err)
					}
					if got, want := l.Len(), len(tt.buffered)+1; got != want {
						t.Errorf("Len() = %d, want %d", got, want)
					}
					return
				}

				// A Fetch makes room and wakes the blocked Put.
				items, err := l.Fetch(t.Context())
				if err != nil {
					t.Fatalf("Fetch = %v, want nil", err)
				}
				if got, want := len(items), len(tt.buffered); got != want {
					t.Errorf("Fetch returned %d items, want %d", got, want)
				}
				err, finished = ready(done)
				if !finished {
					t.Fatal("Put still blocked after Fetch")
				}
				if err != nil {
					t.Fatalf("Put = %v, want nil", err)
				}
				if got, want := l.Len(), 1; got != want {
					t.Errorf("Len() = %d, want %d", got, want)
				}
				if got, want := l.Size(), tt.size; got != want {
					t.Errorf("Size() = %d, want %d", got, want)
				}
			})
		})
	}
}

func TestLog_PutRechecksAfterWake(t *testing.T) {
	// Two Puts wait; one Fetch makes room for only one of them. The other keeps waiting.
	synctest.Test(t, func(t *testing.T) {
		l := New(10, 10)
		mustPut(t, l, ev(0, 10))
		a := goPut(t.Context(), l, ev(1, 8))
		b := goPut(t.Context(), l, ev(2, 8))
		synctest.Wait()
		if _, ok := l.Blocked(); !ok {
			t.Fatal("Blocked() ok = false, want true")
		}
		if _, err := l.Fetch(t.Context()); err != nil {
			t.Fatalf("Fetch = %v, want nil", err)
		}
		synctest.Wait()
		if got, want := l.Len(), 1; got != want {
			t.Fatalf("Len() = %d, want %d", got, want)
		}
		if _, ok := l.Blocked(); !ok {
			t.Error("Blocked() ok = false with one Put still waiting, want true")
		}
		if _, err := l.Fetch(t.Context()); err != nil {
			t.Fatalf("Fetch = %v, want nil", err)
		}
		for _, ch := range []<-chan error{a, b} {
			if err, ok := ready(ch); !ok || err != nil {
				t.Errorf("Put = (%v, finished %v), want (nil, true)", err, ok)
			}
		}
		if _, ok := l.Blocked(); ok {
			t.Error("Blocked() ok = true after all Puts returned, want false")
		}
	})
}

func TestLog_Fetch(t *testing.T) {
	t.Run("returns everything in order", func(t *testing.T) {
		l := New(1000, 100)
		var want []int64
		for i := range int64(50) {
			mustPut(t, l, ev(i, 7))
			want = append(want, i)
		}
		items, err := l.Fetch(t.Context())
		if err != nil {
			t.Fatalf("Fetch = %v, want nil", err)
		}
		if got := seqs(items); !equal(got, want) {
			t.Errorf("Fetch = %v, want %v", got, want)
		}
		if got, want := l.Len(), 0; got != want {
			t.Errorf("Len() after Fetch = %d, want %d", got, want)
		}
		if got, want := l.Size(), 0; got != want {
			t.Errorf("Size() after Fetch = %d, want %d", got, want)
		}
	})

	t.Run("returned slice is not reused", func(t *testing.T) {
		l := New(1000, 100)
		mustPut(t, l, ev(1, 1))
		mustPut(t, l, ev(2, 1))
		first, err := l.Fetch(t.Context())
		if err != nil {
			t.Fatalf("Fetch = %v, want nil", err)
		}
		mustPut(t, l, ev(3, 1))
		mustPut(t, l, ev(4, 1))
		if _, err := l.Fetch(t.Context()); err != nil {
			t.Fatalf("Fetch = %v, want nil", err)
		}
		if got, want := seqs(first), []int64{1, 2}; !equal(got, want) {
			t.Errorf("first Fetch result changed to %v, want %v", got, want)
		}
	})

	t.Run("blocks when empty until a Put", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := New(100, 10)
			done := goFetch(t.Context(), l)
			if _, finished := ready(done); finished {
				t.Fatal("Fetch on empty log returned, want it to block")
			}
			mustPut(t, l, ev(42, 1))
			r, finished := ready(done)
			if !finished {
				t.Fatal("Fetch still blocked after Put")
			}
			if r.err != nil {
				t.Fatalf("Fetch = %v, want nil", r.err)
			}
			if got, want := seqs(r.items), []int64{42}; !equal(got, want) {
				t.Errorf("Fetch = %v, want %v", got, want)
			}
		})
	})

	t.Run("deadline on empty log", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := New(100, 10)
			const idle = 50 * time.Millisecond
			ctx, cancel := context.WithTimeout(t.Context(), idle)
			defer cancel()
			start := time.Now()
			items, err := l.Fetch(ctx)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Fetch error = %v, want %v", err, context.DeadlineExceeded)
			}
			if items != nil {
				t.Errorf("Fetch items = %v, want nil", items)
			}
			if got, want := time.Since(start), idle; got != want {
				t.Errorf("Fetch waited %v, want %v", got, want)
			}
		})
	})

	t.Run("deadline not reached when a Put arrives", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := New(100, 10)
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			done := goFetch(ctx, l)
			time.Sleep(999 * time.Millisecond) // fake clock: just before the deadline
			if _, finished := ready(done); finished {
				t.Fatal("Fetch returned before the deadline on an empty log")
			}
			mustPut(t, l, ev(1, 1))
			r, finished := ready(done)
			if !finished || r.err != nil || len(r.items) != 1 {
				t.Fatalf("Fetch = (%d items, %v, finished %v), want (1, nil, true)", len(r.items), r.err, finished)
			}
		})
	})
}

func TestLog_Cancel(t *testing.T) {
	t.Run("Put", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := New(10, 10)
			mustPut(t, l, ev(0, 10))
			ctx, cancel := context.WithCancel(t.Context())
			done := goPut(ctx, l, ev(1, 1))
			if _, finished := ready(done); finished {
				t.Fatal("Put on full log returned, want it to block")
			}
			cancel()
			err, finished := ready(done)
			if !finished {
				t.Fatal("Put still blocked after cancel")
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Put = %v, want %v", err, context.Canceled)
			}
			if got, want := l.Len(), 1; got != want {
				t.Errorf("Len() = %d, want %d (cancelled item must not be buffered)", got, want)
			}
			if _, ok := l.Blocked(); ok {
				t.Error("Blocked() ok = true after cancelled Put returned, want false")
			}
		})
	})

	t.Run("Fetch", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := New(10, 10)
			ctx, cancel := context.WithCancel(t.Context())
			done := goFetch(ctx, l)
			if _, finished := ready(done); finished {
				t.Fatal("Fetch on empty log returned, want it to block")
			}
			cancel()
			r, finished := ready(done)
			if !finished {
				t.Fatal("Fetch still blocked after cancel")
			}
			if !errors.Is(r.err, context.Canceled) || r.items != nil {
				t.Errorf("Fetch = (%v, %v), want (nil, %v)", r.items, r.err, context.Canceled)
			}
		})
	})

	t.Run("Put with room ignores a done context", func(t *testing.T) {
		l := New(10, 10)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := l.Put(ctx, ev(0, 1)); err != nil {
			t.Errorf("Put = %v, want nil", err)
		}
	})
}

func TestLog_Close(t *testing.T) {
	t.Run("wakes a blocked Put", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := New(10, 10)
			mustPut(t, l, ev(0, 10))
			done := goPut(t.Context(), l, ev(1, 1))
			if _, finished := ready(done); finished {
				t.Fatal("Put on full log returned, want it to block")
			}
			l.Close()
			err, finished := ready(done)
			if !finished {
				t.Fatal("Put still blocked after Close")
			}
			if !errors.Is(err, ErrClosed) {
				t.Errorf("Put = %v, want %v", err, ErrClosed)
			}
		})
	})

	t.Run("wakes a blocked Fetch", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := New(10, 10)
			done := goFetch(t.Context(), l)
			if _, finished := ready(done); finished {
				t.Fatal("Fetch on empty log returned, want it to block")
			}
			l.Close()
			r, finished := ready(done)
			if !finished {
				t.Fatal("Fetch still blocked after Close")
			}
			if !errors.Is(r.err, ErrClosed) || r.items != nil {
				t.Errorf("Fetch = (%v, %v), want (nil, %v)", r.items, r.err, ErrClosed)
			}
		})
	})

	t.Run("drains then ErrClosed", func(t *testing.T) {
		l := New(10, 10)
		mustPut(t, l, ev(1, 1))
		mustPut(t, l, ev(2, 1))
		l.Close()
		l.Close() // idempotent
		if err := l.Put(t.Context(), ev(3, 1)); !errors.Is(err, ErrClosed) {
			t.Errorf("Put after Close = %v, want %v", err, ErrClosed)
		}
		items, err := l.Fetch(t.Context())
		if err != nil {
			t.Fatalf("first Fetch after Close = %v, want nil", err)
		}
		if got, want := seqs(items), []int64{1, 2}; !equal(got, want) {
			t.Errorf("first Fetch after Close = %v, want %v", got, want)
		}
		items, err = l.Fetch(t.Context())
		if !errors.Is(err, ErrClosed) || items != nil {
			t.Errorf("second Fetch after Close = (%v, %v), want (nil, %v)", items, err, ErrClosed)
		}
	})
}

func TestLog_Blocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(10, 10)
		if since, ok := l.Blocked(); ok || !since.IsZero() {
			t.Errorf("Blocked() on new log = (%v, %v), want (zero, false)", since, ok)
		}
		if got, want := l.BlockedTotal(), time.Duration(0); got != want {
			t.Errorf("BlockedTotal() on new log = %v, want %v", got, want)
		}

		// A Put with room does not count as blocked.
		mustPut(t, l, ev(0, 10))
		if _, ok := l.Blocked(); ok {
			t.Error("Blocked() ok = true after non-blocking Put, want false")
		}

		time.Sleep(time.Second)
		start := time.Now()
		done := goPut(t.Context(), l, ev(1, 1))
		synctest.Wait()
		since, ok := l.Blocked()
		if !ok {
			t.Fatal("Blocked() ok = false while Put waits, want true")
		}
		if !since.Equal(start) {
			t.Errorf("Blocked() since = %v, want %v", since, start)
		}

		const wait = 3 * time.Second
		time.Sleep(wait)
		synctest.Wait()
		if got, want := l.BlockedTotal(), time.Duration(0); got != want {
			t.Errorf("BlockedTotal() while still waiting = %v, want %v", got, want)
		}
		if _, err := l.Fetch(t.Context()); err != nil {
			t.Fatalf("Fetch = %v, want nil", err)
		}
		if err, finished := ready(done); !finished || err != nil {
			t.Fatalf("Put = (%v, finished %v), want (nil, true)", err, finished)
		}
		if since, ok := l.Blocked(); ok || !since.IsZero() {
			t.Errorf("Blocked() after Put resumed = (%v, %v), want (zero, false)", since, ok)
		}
		if got, want := l.BlockedTotal(), wait; got != want {
			t.Errorf("BlockedTotal() = %v, want %v", got, want)
		}

		// A second blocked period, ended by cancellation, adds to the total.
		if _, err := l.Fetch(t.Context()); err != nil {
			t.Fatalf("Fetch = %v, want nil", err)
		}
		mustPut(t, l, ev(2, 10))
		ctx, cancel := context.WithCancel(t.Context())
		done = goPut(ctx, l, ev(3, 1))
		synctest.Wait()
		time.Sleep(2 * time.Second)
		cancel()
		if err, finished := ready(done); !finished || !errors.Is(err, context.Canceled) {
			t.Fatalf("Put = (%v, finished %v), want (%v, true)", err, finished, context.Canceled)
		}
		if got, want := l.BlockedTotal(), wait+2*time.Second; got != want {
			t.Errorf("BlockedTotal() = %v, want %v", got, want)
		}
	})
}

// TestLog_Stress runs one producer and one consumer over many items of random sizes and checks
// order and the bounds. Run it with -race.
func TestLog_Stress(t *testing.T) {
	const (
		n        = 100_000
		maxBytes = 1000
		maxItems = 50
		maxSize  = 1200 // some items are larger than maxBytes
	)
	l := New(maxBytes, maxItems)
	// A bug that deadlocks the log fails the test with DeadlineExceeded instead of hanging it.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := make([]int, n)
	for i := range sizes {
		if rng.IntN(20) == 0 {
			sizes[i] = maxSize - rng.IntN(maxSize-maxBytes) // oversized
		} else {
			sizes[i] = 1 + rng.IntN(maxBytes/10)
		}
	}

	var wg sync.WaitGroup
	var stop atomic.Bool
	defer func() { // also on t.Fatal, so that no goroutine outlives the test
		l.Close()
		stop.Store(true)
		wg.Wait()
	}()

	// Observer: the lock-free accessors never report more than the bounds allow.
	var observeErr atomic.Pointer[string]
	wg.Go(func() {
		for !stop.Load() {
			if got := l.Len(); got > maxItems || got < 0 {
				msg := fmt.Sprintf("Len() = %d, want 0..%d", got, maxItems)
				observeErr.CompareAndSwap(nil, &msg)
			}
			if got := l.Size(); got > maxSize || got < 0 {
				msg := fmt.Sprintf("Size() = %d, want 0..%d", got, maxSize)
				observeErr.CompareAndSwap(nil, &msg)
			}
			runtime.Gosched()
		}
	})

	// Producer.
	var putErr error
	wg.Go(func() {
		defer l.Close()
		for i, s := range sizes {
			if err := l.Put(ctx, ev(int64(i), s)); err != nil {
				putErr = err
				return
			}
		}
	})

	// Consumer, on the test goroutine.
	next := int64(0)
	for {
		items, err := l.Fetch(ctx)
		if errors.Is(err, ErrClosed) {
			break
		}
		if err != nil {
			t.Fatalf("Fetch = %v, want nil", err)
		}
		if len(items) == 0 || len(items) > maxItems {
			t.Fatalf("Fetch returned %d items, want 1..%d", len(items), maxItems)
		}
		bytes := 0
		for _, e := range items {
			if e.Timestamp != next {
				t.Fatalf("Fetch item seq %d, want %d", e.Timestamp, next)
			}
			next++
			bytes += e.Bytes()
		}
		if bytes > maxBytes && len(items) != 1 {
			t.Fatalf("Fetch returned %d bytes in %d items, want <= %d unless alone", bytes, len(items), maxBytes)
		}
	}
	stop.Store(true)
	wg.Wait()

	if putErr != nil {
		t.Fatalf("Put = %v, want nil", putErr)
	}
	if got, want := next, int64(n); got != want {
		t.Errorf("consumed %d items, want %d", got, want)
	}
	if msg := observeErr.Load(); msg != nil {
		t.Error(*msg)
	}
}

// BenchmarkLog_PutFetch measures one Put per iteration with a Fetch every 100 items, on one
// goroutine: the uncontended cost of the buffer itself.
func BenchmarkLog_PutFetch(b *testing.B) {
	const batch = 100
	l := New(1<<30, batch)
	e := ev(0, 100)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Put(ctx, e); err != nil {
			b.Fatal(err)
		}
		if l.Len() == batch {
			if _, err := l.Fetch(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkLog_PutFetchConcurrent measures one producer and one consumer on separate goroutines,
// with the producer blocking on a full log.
func BenchmarkLog_PutFetchConcurrent(b *testing.B) {
	l := New(1<<30, 100)
	e := ev(0, 100)
	ctx := b.Context()
	b.ReportAllocs()
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			if _, err := l.Fetch(ctx); err != nil {
				return
			}
		}
	})
	for b.Loop() {
		if err := l.Put(ctx, e); err != nil {
			b.Fatal(err)
		}
	}
	l.Close()
	wg.Wait()
}
