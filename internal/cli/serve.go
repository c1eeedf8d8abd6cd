package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/vplayer/vplayer/metrics"
)

// shutdownTimeout bounds the wait for the requests in flight at exit.
const shutdownTimeout = time.Second

// serveMetrics listens on addr and serves col's /metrics and /healthz until the returned stop is
// called; stop shuts the server down and waits for it. A failure to listen (port in use, unknown
// host) is an error of the run: exit code 1.
func serveMetrics(addr string, col *metrics.Collector, log *slog.Logger) (stop func(), err error) {
	return serve("metrics-addr", "metrics", addr, metrics.Handler(metrics.NewRegistry(col), col), log)
}

// servePprof listens on addr and serves the Go runtime's profiles under /debug/pprof/, without the
// command line, until the returned stop is called, as serveMetrics does.
func servePprof(addr string, log *slog.Logger) (stop func(), err error) {
	return serve("pprof-addr", "profiles", addr, metrics.PprofHandler(), log)
}

// serve listens on addr, the value of --flag, logs "serving <what>" with the address it listens
// on, and serves h until the returned stop is called.
func serve(flag, what, addr string, h http.Handler, log *slog.Logger) (stop func(), err error) {
	srv, err := metrics.Listen(addr, h)
	if err != nil {
		return nil, fmt.Errorf("--%s %s: %w", flag, addr, err)
	}
	log.Info("serving "+what, "addr", srv.Addr().String())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(); err != nil {
			log.Error(what+" server failed", "addr", srv.Addr().String(), "error", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			log.Warn(what+" server did not shut down cleanly", "error", err)
		}
		<-done
	}, nil
}
