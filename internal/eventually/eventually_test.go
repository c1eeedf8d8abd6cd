package eventually

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// TestWait: the condition is polled every interval until it holds, and once more after the
// sleep that crosses the deadline; past that, Wait returns its last error as it was.
func TestWait(t *testing.T) {
	errNotYet := errors.New("not yet")
	tests := []struct {
		name      string
		holdsFrom int // the call from which cond returns nil (1-based); 0: never
		wantErr   error
		wantCalls int
		wantTook  time.Duration
	}{
		{"holds at once", 1, nil, 1, 0},
		{"holds on the third call", 3, nil, 3, 2 * time.Second},
		{"holds on the call after the deadline", 6, nil, 6, 5 * time.Second},
		{"never holds", 0, errNotYet, 6, 5 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				calls := 0
				start := time.Now()
				err := Wait(4500*time.Millisecond, time.Second, func() error {
					calls++
					if tc.holdsFrom > 0 && calls >= tc.holdsFrom {
						return nil
					}
					return errNotYet
				})
				if err != tc.wantErr {
					t.Errorf("Wait() = %v, want %v", err, tc.wantErr)
				}
				if calls != tc.wantCalls {
					t.Errorf("cond called %d times, want %d", calls, tc.wantCalls)
				}
				if got := time.Since(start); got != tc.wantTook {
					t.Errorf("Wait took %v, want %v", got, tc.wantTook)
				}
			})
		})
	}
}

// fakeT records Must's failure; its Fatalf returns instead of ending the goroutine.
type fakeT struct {
	testing.TB
	failed string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Fatalf(format string, args ...any) { f.failed = fmt.Sprintf(format, args...) }

// TestMust: Must fails the test naming what it awaited, for how long, and what it saw last;
// a condition that holds fails nothing.
func TestMust(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ft := &fakeT{TB: t}
		n := 0
		Must(ft, time.Second, 100*time.Millisecond, "the row count to reach 3", func() error {
			n++
			return fmt.Errorf("count %d", n)
		})
		if got, want := ft.failed, "waited 1s for the row count to reach 3; last: count 11"; got != want {
			t.Errorf("Must failed with %q, want %q", got, want)
		}

		ft = &fakeT{TB: t}
		Must(ft, time.Second, 100*time.Millisecond, "nothing", func() error { return nil })
		if ft.failed != "" {
			t.Errorf("Must failed with %q on a condition that holds", ft.failed)
		}
	})
}
