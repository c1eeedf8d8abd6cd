// Package eventually waits, in tests, for a state that another goroutine, process or server
// brings about: it polls a condition until it holds or a deadline passes. Only tests import it
// (cmd/vplayer's tests check that no package of the module does otherwise).
package eventually

import (
	"testing"
	"time"
)

// Wait calls cond every interval until it returns nil or timeout has passed, and returns nil
// or cond's last error, unwrapped. cond runs at least once, and once more after the sleep that
// crosses the deadline, so a state reached by then is not missed. cond's error says what it saw
// instead of the state awaited (a value, or the error of the query that reads it).
func Wait(timeout, interval time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil || !time.Now().Before(deadline) {
			return err
		}
		time.Sleep(interval)
	}
}

// Must is Wait that fails the test at once when cond still returns an error after timeout:
// "waited 5s for <what>; last: <cond's last error>". what names the state awaited.
func Must(t testing.TB, timeout, interval time.Duration, what string, cond func() error) {
	t.Helper()
	if err := Wait(timeout, interval, cond); err != nil {
		t.Fatalf("waited %v for %s; last: %v", timeout, what, err)
	}
}
