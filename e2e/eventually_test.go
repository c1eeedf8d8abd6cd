package e2e

import "time"

// eventually calls cond every interval until it returns true or timeout has passed, and reports
// whether it returned true. cond runs at least once, and once more after a sleep that crosses the
// deadline, so a condition that holds by then is not missed. It fails nothing itself: the caller
// keeps its own failure message, with whatever last value cond recorded.
func eventually(timeout, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(interval)
	}
}
