package binlog

import (
	"net"
	"testing"
	"time"
)

// deadlineRecorder is a net.Conn that records the read deadlines set on it.
type deadlineRecorder struct {
	net.Conn
	set []time.Time
}

func (r *deadlineRecorder) SetReadDeadline(t time.Time) error {
	r.set = append(r.set, t)
	return nil
}

// TestCoarseDeadlineConn: go-mysql's per-read deadline moves (now + timeout before each read,
// here 1,000 reads over 10 s) reach the socket about once per slack; the deadline in force is
// never earlier than the one last asked for and at most the slack later; a deadline brought
// forward or cleared passes at once.
func TestCoarseDeadlineConn(t *testing.T) {
	rec := &deadlineRecorder{}
	c := newCoarseDeadlineConn(rec)
	base := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const timeout = 65 * time.Second
	for i := range 1000 {
		asked := base.Add(time.Duration(i) * 10 * time.Millisecond).Add(timeout)
		if err := c.SetReadDeadline(asked); err != nil {
			t.Fatal(err)
		}
		inForce := rec.set[len(rec.set)-1]
		if inForce.Before(asked) || inForce.Sub(asked) > deadlineSlack {
			t.Fatalf("read %d: deadline in force %v for %v asked: want no earlier, at most %v later", i, inForce, asked, deadlineSlack)
		}
	}
	if n := len(rec.set); n < 9 || n > 11 {
		t.Errorf("%d deadline moves reached the socket for 10s of reads, want about 10", n)
	}

	// Close wakes the reader: now + 100ms must reach the socket as asked.
	wake := base.Add(10*time.Second + 100*time.Millisecond)
	before := len(rec.set)
	c.SetReadDeadline(wake)
	if len(rec.set) != before+1 || !rec.set[len(rec.set)-1].Equal(wake) {
		t.Errorf("a deadline brought forward was not set as asked: %v", rec.set[before:])
	}
	c.SetReadDeadline(time.Time{})
	if last := rec.set[len(rec.set)-1]; !last.IsZero() {
		t.Errorf("clearing the deadline set %v, want the zero time", last)
	}
	// After a clear, the next deadline is set again.
	next := base.Add(time.Minute)
	c.SetReadDeadline(next)
	if last := rec.set[len(rec.set)-1]; last.Before(next) {
		t.Errorf("after a clear: deadline %v for %v asked", last, next)
	}
}
