package cli

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/vplayer/vplayer/metrics"
)

// shutdownTimeout bounds the wait for the metrics requests in flight at exit.
const shutdownTimeout = time.Second

// serveMetrics listens on addr and serves col's /metrics, /healthz and /debug/pprof/ until the
// returned stop is called; stop shuts the server down and waits for it. A failure to listen (port
// in use, unknown host) is an error of the run: exit code 1.
func serveMetrics(addr string, col *metrics.Collector, log *slog.Logger) (stop func(), err error) {
	srv, err := metrics.Listen(addr, metrics.Handler(metrics.NewRegistry(col), col))
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	log.Info("serving metrics", "addr", srv.Addr().String())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(); err != nil {
			log.Error("metrics server failed", "addr", srv.Addr().String(), "error", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			log.Warn("metrics server did not shut down cleanly", "error", err)
		}
		<-done
	}, nil
}
