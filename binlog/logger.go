package binlog

import (
	"context"
	"errors"
	"log/slog"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// killConnectionMsg is the message go-mysql logs at ERROR when closing a syncer fails to KILL
// the syncer's previous connection.
const killConnectionMsg = "kill connection"

// Handle passes go-mysql's records on, except that a failed KILL of a connection the server
// no longer knows (ER_NO_SUCH_THREAD: the attempt had already lost it) is not an error: it is
// passed on at Debug, where the inner handler's level decides, as any debug line.
func (w warnOnly) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == killConnectionMsg && unknownThread(r) {
		if !w.Handler.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		d := slog.NewRecord(r.Time, slog.LevelDebug, "kill connection: already gone", r.PC)
		r.Attrs(func(a slog.Attr) bool { d.AddAttrs(a); return true })
		return w.Handler.Handle(ctx, d)
	}
	return w.Handler.Handle(ctx, r)
}

// WithAttrs and WithGroup keep the wrapper around the derived handler.
func (w warnOnly) WithAttrs(as []slog.Attr) slog.Handler { return warnOnly{w.Handler.WithAttrs(as)} }

func (w warnOnly) WithGroup(name string) slog.Handler { return warnOnly{w.Handler.WithGroup(name)} }

// unknownThread reports whether r's error attribute is the server's ER_NO_SUCH_THREAD.
func unknownThread(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "error" {
			return true
		}
		err, ok := a.Value.Any().(error)
		var me *mysql.MyError
		found = ok && errors.As(err, &me) && me.Code == mysql.ER_NO_SUCH_THREAD
		return false
	})
	return found
}
