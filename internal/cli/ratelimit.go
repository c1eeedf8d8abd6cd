package cli

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// repeatWindow is how long an identical warning or error line is suppressed after it was logged.
const repeatWindow = 30 * time.Second

// maxRepeatKeys bounds the lines remembered; older ones are forgotten first.
const maxRepeatKeys = 256

// repeatHandler rate-limits repeated log lines: a WARN or ERROR line identical to one logged
// less than the window ago (same level, message and attributes, the logger's included) is
// suppressed. The next identical line logged after the window carries suppressed=<n>, the number
// of identical lines not logged before it, and Flush does the same at exit for the lines still
// suppressed, so that no repeat goes uncounted. Lower levels pass
// through. All handlers derived with WithAttrs and WithGroup share one memory.
type repeatHandler struct {
	next   slog.Handler
	prefix string // the attributes and groups added by WithAttrs and WithGroup, as text
	mem    *repeatMemory
}

type repeatMemory struct {
	window time.Duration
	now    func() time.Time

	mu    sync.Mutex
	lines map[string]*repeatLine
}

// repeatLine is one distinct line: when it was last logged, and what was suppressed since.
type repeatLine struct {
	logged     time.Time
	suppressed int
	last       slog.Record  // the last suppressed record, for Flush
	handler    slog.Handler // the handler it came through
}

func newRepeatHandler(next slog.Handler, window time.Duration, now func() time.Time) *repeatHandler {
	return &repeatHandler{next: next, mem: &repeatMemory{window: window, now: now, lines: map[string]*repeatLine{}}}
}

func (h *repeatHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *repeatHandler) WithAttrs(as []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.prefix)
	for _, a := range as {
		b.WriteString(a.String())
		b.WriteByte(' ')
	}
	return &repeatHandler{next: h.next.WithAttrs(as), prefix: b.String(), mem: h.mem}
}

func (h *repeatHandler) WithGroup(name string) slog.Handler {
	return &repeatHandler{next: h.next.WithGroup(name), prefix: h.prefix + name + ".{", mem: h.mem}
}

func (h *repeatHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return h.next.Handle(ctx, r)
	}
	key := h.key(r)
	m := h.mem
	now := m.now()
	m.mu.Lock()
	line, seen := m.lines[key]
	if seen && now.Sub(line.logged) < m.window {
		line.suppressed++
		line.last = r.Clone()
		line.handler = h.next
		m.mu.Unlock()
		return nil
	}
	suppressed := 0
	if seen {
		suppressed = line.suppressed
	} else {
		m.forgetOldLocked(now)
	}
	m.lines[key] = &repeatLine{logged: now}
	m.mu.Unlock()
	if suppressed > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("suppressed", suppressed))
	}
	return h.next.Handle(ctx, r)
}

// key identifies a line: level, message and attributes, without the time.
func (h *repeatHandler) key(r slog.Record) string {
	var b strings.Builder
	b.WriteString(h.prefix)
	b.WriteString(r.Level.String())
	b.WriteByte(' ')
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteByte(' ')
		b.WriteString(a.String())
		return true
	})
	return b.String()
}

// forgetOldLocked drops the lines whose window ended with nothing suppressed, and when the
// memory is still full, the oldest line.
func (m *repeatMemory) forgetOldLocked(now time.Time) {
	if len(m.lines) < maxRepeatKeys {
		return
	}
	var oldestKey string
	var oldest time.Time
	for k, l := range m.lines {
		if l.suppressed == 0 && now.Sub(l.logged) >= m.window {
			delete(m.lines, k)
			continue
		}
		if oldestKey == "" || l.logged.Before(oldest) {
			oldestKey, oldest = k, l.logged
		}
	}
	if len(m.lines) >= maxRepeatKeys {
		delete(m.lines, oldestKey)
	}
}

// Flush logs the last of each line's suppressed repeats, with suppressed=<n> counting the ones
// before it that were not logged: every occurrence is then either logged or counted. Call it at
// exit.
func (h *repeatHandler) Flush(ctx context.Context) {
	m := h.mem
	m.mu.Lock()
	var pending []*repeatLine
	for _, l := range m.lines {
		if l.suppressed > 0 {
			pending = append(pending, l)
		}
	}
	clear(m.lines)
	m.mu.Unlock()
	slices.SortFunc(pending, func(a, b *repeatLine) int { return a.last.Time.Compare(b.last.Time) })
	for _, l := range pending {
		r := l.last.Clone()
		if l.suppressed > 1 {
			r.AddAttrs(slog.Int("suppressed", l.suppressed-1))
		}
		l.handler.Handle(ctx, r)
	}
}
