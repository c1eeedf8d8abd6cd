package stall

import (
	"errors"
	"strings"
	"time"
)

// ErrStalled is the sentinel wrapped by every stall [Error]:
// errors.Is(err, ErrStalled) tells a stall from any other stream error. Its
// text is part of every stall message and operators grep for it: do not
// change it.
var ErrStalled = errors.New("progress stalled; vplayer was unable to replicate the transaction in a timely manner; examine the target mysqld instance health and the replicated queries' EXPLAIN output to see why queries are taking unusually long")

// Detector names the condition that ran out of time. Its values are stable
// and used as the value of a metrics label.
type Detector string

const (
	// RelayLog: the reader was blocked in Put on a full relay log for the
	// progress deadline, or the applier detector fired while the reader was
	// blocked (SPEC 4.1, 4.3).
	RelayLog Detector = "relay_log"
	// Applier: the applier held work for the progress deadline without
	// completing a round trip or a commit, while the reader was not blocked
	// (SPEC 4.3).
	Applier Detector = "applier"
	// Heartbeat: a heartbeat write failed or was in flight for the heartbeat
	// interval (SPEC 4.2).
	Heartbeat Detector = "heartbeat"
	// Copy: the copy phase held a chunk for the progress deadline without
	// reading rows or completing a round trip (SPEC 7a).
	Copy Detector = "copy"
	// Throttle: a check that decides whether the stream is held on purpose (the
	// target's load, its replicas' lag, a manual throttle) did not answer
	// within the progress deadline (SPEC 4.5). Time held is never a stall.
	Throttle Detector = "throttle"
)

// Error is a stall: a detector ran out of time. It wraps [ErrStalled] and,
// when set, Cause; its text names where the time goes and never holds row
// values.
type Error struct {
	// Detector is the condition that fired.
	Detector Detector
	// For is how long the condition had held when it was detected: the
	// reader's time blocked in Put for RelayLog, the time without progress
	// for Applier, the time the write had been in flight for Heartbeat.
	// Zero when unknown (a heartbeat write that returned an error).
	For time.Duration
	// Statement is the shape of the statement the applier was running, e.g.
	// "UPDATE `shop`.`orders`" or "COMMIT"; never row values. Empty when the
	// applier held no open statement.
	Statement string
	// StatementFor is how long Statement had been running; zero when unknown.
	StatementFor time.Duration
	// TxnFor is how long the applier's open target transaction had been
	// open; zero when none was open.
	TxnFor time.Duration
	// Cause is the underlying failure, if any: for Heartbeat, the write's
	// error or "recording took longer than <interval>". Nil otherwise.
	Cause error
}

// Error returns the operator-facing text. By detector:
//
//	relay log I/O stalled: <ErrStalled>; applier busy for <StatementFor> in <Statement>[ (transaction open for <TxnFor>)]
//	relay log I/O stalled: <ErrStalled>; applier holds no open statement[ (transaction open for <TxnFor>)]
//	applier stalled: no progress for <For> while applying <Statement>[ (transaction open for <TxnFor>)]: <ErrStalled>
//	failed to record heartbeat: <Cause>: <ErrStalled>
//	copy stalled: no progress for <For> while running <Statement>: <ErrStalled>
//	throttle check stalled: no progress for <For> while running <Statement>: <ErrStalled>
//
// Durations are rounded to a unit that suits their size (5m2s, 1.5s, 100ms).
func (e *Error) Error() string {
	var b strings.Builder
	switch e.Detector {
	case RelayLog:
		b.WriteString("relay log I/O stalled: ")
		b.WriteString(ErrStalled.Error())
		if e.Statement == "" {
			b.WriteString("; applier holds no open statement")
		} else {
			b.WriteString("; applier busy")
			if e.StatementFor > 0 {
				b.WriteString(" for ")
				b.WriteString(round(e.StatementFor).String())
			}
			b.WriteString(" in ")
			b.WriteString(e.Statement)
		}
		e.writeTxn(&b)
	case Applier:
		e.writeNoProgress(&b, "applier", "applying", true)
	case Copy:
		e.writeNoProgress(&b, "copy", "running", false)
	case Throttle:
		e.writeNoProgress(&b, "throttle check", "running", false)
	case Heartbeat:
		b.WriteString("failed to record heartbeat: ")
		if e.Cause != nil {
			b.WriteString(e.Cause.Error())
			b.WriteString(": ")
		}
		b.WriteString(ErrStalled.Error())
	default:
		if e.Detector != "" {
			b.WriteString(string(e.Detector))
			b.WriteString(" stalled: ")
		}
		if e.Cause != nil {
			b.WriteString(e.Cause.Error())
			b.WriteString(": ")
		}
		b.WriteString(ErrStalled.Error())
	}
	return b.String()
}

// writeNoProgress writes "<who> stalled: no progress for <For> while <doing> <Statement>" (or
// "with no statement in flight"), the open transaction's age when withTxn, then ErrStalled.
func (e *Error) writeNoProgress(b *strings.Builder, who, doing string, withTxn bool) {
	b.WriteString(who + " stalled: no progress for ")
	b.WriteString(round(e.For).String())
	if e.Statement == "" {
		b.WriteString(" with no statement in flight")
	} else {
		b.WriteString(" while " + doing + " ")
		b.WriteString(e.Statement)
	}
	if withTxn {
		e.writeTxn(b)
	}
	b.WriteString(": ")
	b.WriteString(ErrStalled.Error())
}

// writeTxn adds how long the open target transaction has run, when one is open.
func (e *Error) writeTxn(b *strings.Builder) {
	if e.TxnFor <= 0 {
		return
	}
	b.WriteString(" (transaction open for ")
	b.WriteString(round(e.TxnFor).String())
	b.WriteString(")")
}

// Unwrap returns [ErrStalled] and, when set, Cause, so that errors.Is and
// errors.As see both (e.g. context.DeadlineExceeded for a heartbeat write).
func (e *Error) Unwrap() []error {
	if e.Cause == nil {
		return []error{ErrStalled}
	}
	return []error{ErrStalled, e.Cause}
}

// round makes d readable: whole seconds from a minute up, tenths of a second
// from a second up, milliseconds from a millisecond up, else microseconds.
// Negative durations read as 0s.
func round(d time.Duration) time.Duration {
	switch {
	case d <= 0:
		return 0
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(time.Millisecond)
	default:
		return d.Round(time.Microsecond)
	}
}
