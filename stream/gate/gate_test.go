package gate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vplayer/vplayer/applier"
	"github.com/vplayer/vplayer/event"
	"github.com/vplayer/vplayer/workflow"
)

// fakeFetcher is a relay log that returns its batches in turn, then nothing.
type fakeFetcher struct {
	fetch func(ctx context.Context) ([]*event.Event, error)
}

var _ applier.Fetcher = fakeFetcher{}

func (f fakeFetcher) Fetch(ctx context.Context) ([]*event.Event, error) { return f.fetch(ctx) }

func batches(bs ...[]*event.Event) fakeFetcher {
	return fakeFetcher{fetch: func(ctx context.Context) ([]*event.Event, error) {
		if len(bs) == 0 {
			return nil, context.DeadlineExceeded
		}
		b := bs[0]
		bs = bs[1:]
		return b, nil
	}}
}

// txn returns the events of one source transaction committed at MariaDB/0-1-seq.
func txn(seq int) []*event.Event {
	return []*event.Event{{Type: event.Begin}, {Type: event.Rows}, commitAt(seq)}
}

func commitAt(seq int) *event.Event {
	return &event.Event{Type: event.Commit, Pos: fmt.Sprintf("MariaDB/0-1-%d", seq)}
}

// show describes events as "B R C3 S4 D5 H".
func show(es []*event.Event) string {
	var out []string
	for _, e := range es {
		s := e.Type.String()[:1]
		if e.Pos != "" {
			s += e.Pos[strings.LastIndexByte(e.Pos, '-')+1:]
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func concat(parts ...[]*event.Event) []*event.Event {
	var out []*event.Event
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// fetchShow fetches once with ctx and describes the result.
func fetchShow(ctx context.Context, g *Gate) string {
	es, err := fetch(ctx, g)
	if err != nil {
		return "error: " + err.Error()
	}
	return show(es)
}

// fetch fetches from g as the applier does: once g returns applier.ErrSettle (everything handed
// over is then committed), it fetches again; a second ErrSettle in a row is an error.
func fetch(ctx context.Context, g *Gate) ([]*event.Event, error) {
	es, err := g.Fetch(ctx)
	if !errors.Is(err, applier.ErrSettle) {
		return es, err
	}
	es, err = g.Fetch(ctx)
	if errors.Is(err, applier.ErrSettle) {
		return nil, errors.New("ErrSettle twice in a row")
	}
	return es, err
}

// cancelled is a context that has already ended: a paused gate returns at once with its error.
func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func TestGate_noPausePassesFetchesUnchanged(t *testing.T) {
	all := concat(txn(1), []*event.Event{{Type: event.Heartbeat}}, txn(2))
	g := New(batches(all), NewRequest(), Config{Flavor: "mariadb", Start: "MariaDB/0-1-0"})
	if got, want := fetchShow(context.Background(), g), "B R C1 H B R C2"; got != want {
		t.Errorf("Fetch=%q, want %q", got, want)
	}
	if paused, _ := g.Paused(); paused {
		t.Error("Paused()=true without a pause")
	}
}

func TestGate_holdStopsAtTheNextBoundary(t *testing.T) {
	tests := []struct {
		name    string
		batches [][]*event.Event
		// holdDuring is the relay fetch during which the hold arrives; -1: before the first.
		holdDuring int
		want       []string // each fetch until the gate pauses
		pausedAt   string
	}{
		{"idle at a boundary", [][]*event.Event{txn(1)}, -1, nil, "MariaDB/0-1-0"},
		{"cut inside a fetch", [][]*event.Event{concat(txn(1), txn(2))}, 0, []string{"B R C1"}, "MariaDB/0-1-1"},
		{"a transaction split across fetches ends first", [][]*event.Event{{{Type: event.Begin}, {Type: event.Rows}}, concat([]*event.Event{{Type: event.Rows}, commitAt(1)}, txn(2))},
			0, []string{"B R", "R C1"}, "MariaDB/0-1-1"},
		{"a skipped transaction is a boundary", [][]*event.Event{{{Type: event.Skip, Pos: "MariaDB/0-1-1"}, {Type: event.Begin}}}, 0, []string{"S1"}, "MariaDB/0-1-1"},
		{"a DDL is a boundary", [][]*event.Event{concat([]*event.Event{{Type: event.DDL, Pos: "MariaDB/0-1-1"}}, txn(2))}, 0, []string{"D1"}, "MariaDB/0-1-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := NewRequest()
			if tt.holdDuring < 0 {
				req.Set(workflow.PauseHold, "mariadb")
			}
			n := 0
			relay := fakeFetcher{fetch: func(ctx context.Context) ([]*event.Event, error) {
				if n == tt.holdDuring {
					req.Set(workflow.PauseHold, "mariadb") // the applier waited in Fetch when the request came
				}
				if n >= len(tt.batches) {
					t.Fatalf("relay fetch %d: the gate should have paused", n+1)
				}
				n++
				return tt.batches[n-1], nil
			}}
			g := New(relay, req, Config{Flavor: "mariadb", Start: "MariaDB/0-1-0"})
			for i, want := range tt.want {
				if got := fetchShow(context.Background(), g); got != want {
					t.Fatalf("fetch %d=%q, want %q", i+1, got, want)
				}
			}
			// Paused: the next fetch waits without touching the relay log.
			if got, want := fetchShow(cancelled(), g), "error: "+context.Canceled.Error(); got != want {
				t.Fatalf("fetch at the pause point=%q, want %q", got, want)
			}
			if paused, pos := g.Paused(); !paused || pos != tt.pausedAt {
				t.Errorf("Paused()=%v, %q; want true, %q", paused, pos, tt.pausedAt)
			}
			select {
			case <-g.notify:
			default:
				t.Error("the gate paused without notifying the poller")
			}
		})
	}
}

// TestGate_pauseAtPosition: a pause at a position hands everything up to and including it over,
// then waits; moving the pause further releases exactly up to the new position; clearing it
// releases the rest, in order, nothing lost or repeated.
func TestGate_pauseAtPosition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		req := NewRequest()
		req.Set(workflow.PauseHeld, "mariadb")
		g := New(batches(concat(txn(1), txn(2), txn(3)), concat(txn(4), txn(5))), req, Config{Flavor: "mariadb", Start: "MariaDB/0-1-0"})
		if got, want := fetchShow(cancelled(), g), "error: "+context.Canceled.Error(); got != want {
			t.Fatalf("held fetch=%q, want %q", got, want)
		}

		got := make(chan string, 1)
		fetch := func() { got <- fetchShow(context.Background(), g) }
		go fetch()
		synctest.Wait()
		select {
		case s := <-got:
			t.Fatalf("a held gate returned %q", s)
		default:
		}
		req.Set("MariaDB/0-1-2", "mariadb")
		if s, want := <-got, "B R C1 B R C2"; s != want {
			t.Fatalf("fetch after pausing at 0-1-2=%q, want %q", s, want)
		}
		go fetch()
		synctest.Wait()
		if paused, pos := g.Paused(); !paused || pos != "MariaDB/0-1-2" {
			t.Fatalf("Paused()=%v, %q; want true at MariaDB/0-1-2", paused, pos)
		}
		req.Set("MariaDB/0-1-4", "mariadb")
		if s, want := <-got, "B R C3"; s != want {
			t.Fatalf("first fetch after moving the pause to 0-1-4=%q, want %q", s, want)
		}
		if s, want := fetchShow(context.Background(), g), "B R C4"; s != want {
			t.Fatalf("second fetch after moving the pause to 0-1-4=%q, want %q", s, want)
		}
		go fetch()
		synctest.Wait()
		req.Set("", "mariadb")
		if s, want := <-got, "B R C5"; s != want {
			t.Fatalf("fetch after the pause ended=%q, want %q", s, want)
		}
		if paused, _ := g.Paused(); paused {
			t.Error("Paused()=true after the pause ended")
		}
	})
}

func TestGate_alreadyPastThePausePosition(t *testing.T) {
	req := NewRequest()
	req.Set("MariaDB/0-1-3", "mariadb")
	g := New(batches(txn(6)), req, Config{Flavor: "mariadb", Start: "MariaDB/0-1-5"})
	if got, want := fetchShow(cancelled(), g), "error: "+context.Canceled.Error(); got != want {
		t.Fatalf("fetch=%q, want the gate paused at its start", got)
	}
}

func TestGate_unparsablePauseHolds(t *testing.T) {
	req := NewRequest()
	req.Set("MariaDB/not-a-position", "mariadb")
	g := New(batches(txn(1)), req, Config{Flavor: "mariadb", Start: "MariaDB/0-1-0"})
	if got, want := fetchShow(cancelled(), g), "error: "+context.Canceled.Error(); got != want {
		t.Fatalf("fetch=%q, want the gate held", got)
	}
}

// TestGate_relayBlockedSince: a reader blocked behind a pause is no stall; after the pause the
// stall clock starts again from the resume.
func TestGate_relayBlockedSince(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		req := NewRequest()
		req.Set(workflow.PauseHold, "mariadb")
		g := New(batches(txn(1)), req, Config{Flavor: "mariadb", Start: "MariaDB/0-1-0"})
		blocked := time.Now()
		if _, err := fetch(cancelled(), g); !errors.Is(err, context.Canceled) {
			t.Fatalf("Fetch=%v, want the gate paused", err)
		}
		if got := g.RelayBlockedSince(blocked); !got.IsZero() {
			t.Errorf("blocked since while paused=%v, want zero", got)
		}
		time.Sleep(time.Minute) // the fake clock: a long pause
		req.Set("", "mariadb")
		resumed := time.Now()
		if got := fetchShow(context.Background(), g); got != "B R C1" {
			t.Fatalf("fetch after resume=%q", got)
		}
		if got := g.RelayBlockedSince(blocked); !got.Equal(resumed) {
			t.Errorf("blocked since after resume=%v, want the resume time %v", got, resumed)
		}
		later := resumed.Add(time.Second)
		if got := g.RelayBlockedSince(later); !got.Equal(later) {
			t.Errorf("blocked since a time after the resume=%v, want it unchanged", got)
		}
		if got := g.RelayBlockedSince(time.Time{}); !got.IsZero() {
			t.Errorf("not blocked=%v, want zero", got)
		}
	})
}

// TestGate_whileHeld: a Fetch held at the pause point that ends by its deadline (the applier's
// idle turn) calls whileHeld, once; one that ends because the attempt ends does not, and neither
// does a Fetch that hands events over.
func TestGate_whileHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		req := NewRequest()
		req.Set(workflow.PauseHold, "mariadb")
		g := New(batches(txn(1)), req, Config{Flavor: "mariadb", Start: "MariaDB/0-1-0"})
		held := 0
		g.whileHeld = func() { held++ }
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		_, err := fetch(ctx, g)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || held != 1 {
			t.Fatalf("held Fetch to its deadline: %v, whileHeld called %d times; want the deadline and 1", err, held)
		}
		if _, err := fetch(cancelled(), g); !errors.Is(err, context.Canceled) || held != 1 {
			t.Fatalf("held Fetch cancelled: %v, whileHeld called %d times; want cancelled and still 1", err, held)
		}
		req.Set("", "mariadb")
		if got := fetchShow(context.Background(), g); got != "B R C1" || held != 1 {
			t.Fatalf("fetch after the pause = %q, whileHeld called %d times; want the transaction and still 1", got, held)
		}
	})
}

// TestGate_settlesBeforePausing: at the pause point the gate first returns applier.ErrSettle,
// not paused yet, so that the applier commits what it was handed; at the next Fetch it is
// paused there. After a resume, the next pause asks again.
func TestGate_settlesBeforePausing(t *testing.T) {
	req := NewRequest()
	g := New(batches(txn(1), txn(2)), req, Config{Flavor: "mariadb", Start: "MariaDB/0-1-0"})
	if got := fetchShow(context.Background(), g); got != "B R C1" {
		t.Fatalf("first fetch = %q", got)
	}
	for round, want := range []string{"MariaDB/0-1-1", "MariaDB/0-1-2"} {
		req.Set(workflow.PauseHold, "mariadb")
		if _, err := g.Fetch(cancelled()); !errors.Is(err, applier.ErrSettle) {
			t.Fatalf("round %d: first Fetch at the pause point: %v, want %v", round, err, applier.ErrSettle)
		}
		if paused, _ := g.Paused(); paused {
			t.Fatalf("round %d: paused before the applier settled", round)
		}
		if _, err := g.Fetch(cancelled()); !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: Fetch after settling: %v, want it paused until its context ends", round, err)
		}
		if paused, at := g.Paused(); !paused || at != want {
			t.Fatalf("round %d: after settling: paused %v at %q, want paused at %s", round, paused, at, want)
		}
		req.Set("", "mariadb")
		if round == 0 {
			if got := fetchShow(context.Background(), g); got != "B R C2" {
				t.Fatalf("fetch after the resume = %q, want the next transaction", got)
			}
		}
	}
}

// TestGate_withdrawnPauseSettlesAgain: a pause withdrawn after the gate asked the applier to
// settle, before its next Fetch, leaves nothing behind: the events go on, and the next pause
// asks the applier to settle what was handed over since.
func TestGate_withdrawnPauseSettlesAgain(t *testing.T) {
	req := NewRequest()
	g := New(batches(txn(1), txn(2)), req, Config{Flavor: "mariadb", Start: "MariaDB/0-1-0"})
	if got := fetchShow(context.Background(), g); got != "B R C1" {
		t.Fatalf("first fetch = %q", got)
	}
	req.Set(workflow.PauseHold, "mariadb")
	if _, err := g.Fetch(cancelled()); !errors.Is(err, applier.ErrSettle) {
		t.Fatalf("Fetch at the pause point: %v, want %v", err, applier.ErrSettle)
	}
	req.Set("", "mariadb") // withdrawn before the applier fetched again
	if got := fetchShow(context.Background(), g); got != "B R C2" {
		t.Fatalf("fetch after the pause was withdrawn = %q, want the next transaction", got)
	}
	req.Set(workflow.PauseHold, "mariadb")
	if _, err := g.Fetch(cancelled()); !errors.Is(err, applier.ErrSettle) {
		t.Fatalf("Fetch at the next pause point: %v, want %v: C2 was handed over since the last settle", err, applier.ErrSettle)
	}
}
