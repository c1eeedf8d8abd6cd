package cli

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// fakeClock is a settable clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func newTestRepeatLogger() (*slog.Logger, *repeatHandler, *bytes.Buffer, *fakeClock) {
	var buf bytes.Buffer
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	h := newRepeatHandler(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}), 30*time.Second, clk.now)
	return slog.New(h).With("workflow", "orders"), h, &buf, clk
}

func lines(buf *bytes.Buffer) []string {
	s := strings.TrimRight(buf.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func TestRepeatHandler(t *testing.T) {
	log, h, buf, clk := newTestRepeatLogger()
	const msg = "error in stream orders, will retry after 5s: dial tcp: connection refused"
	for i := 0; i < 6; i++ { // every 5s: one logged, five suppressed
		log.Error(msg)
		clk.t = clk.t.Add(5 * time.Second)
	}
	log.Error("another error")
	log.Info("progress", "transactions", 1)
	log.Info("progress", "transactions", 1) // info lines are never suppressed
	log.Warn(msg)                           // another level: another line
	log.With("attempt", 2).Error(msg)       // other attributes: another line
	clk.t = clk.t.Add(time.Second)          // 31s after the first
	log.Error(msg)                          // logged, counting the five before
	log.Error(msg)                          // suppressed
	log.Error(msg)                          // suppressed
	h.Flush(context.Background())           // logs the last one, counting the one before it
	h.Flush(context.Background())           // nothing left

	want := []string{
		`level=ERROR msg="` + msg + `" workflow=orders`,
		`level=ERROR msg="another error" workflow=orders`,
		`level=INFO msg=progress workflow=orders transactions=1`,
		`level=INFO msg=progress workflow=orders transactions=1`,
		`level=WARN msg="` + msg + `" workflow=orders`,
		`level=ERROR msg="` + msg + `" workflow=orders attempt=2`,
		`level=ERROR msg="` + msg + `" workflow=orders suppressed=5`,
		`level=ERROR msg="` + msg + `" workflow=orders suppressed=1`,
	}
	got := lines(buf)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestRepeatHandler_boundedMemory(t *testing.T) {
	log, h, buf, clk := newTestRepeatLogger()
	for i := 0; i < 3*maxRepeatKeys; i++ {
		log.Error("distinct", "i", i)
		clk.t = clk.t.Add(time.Millisecond)
	}
	if n := len(h.mem.lines); n > maxRepeatKeys {
		t.Errorf("remembers %d lines, want at most %d", n, maxRepeatKeys)
	}
	if n := len(lines(buf)); n != 3*maxRepeatKeys {
		t.Errorf("logged %d distinct lines, want all %d", n, 3*maxRepeatKeys)
	}
}
