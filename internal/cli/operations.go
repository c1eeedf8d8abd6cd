package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/vplayer/vplayer/internal/tlsconfig"
	"github.com/vplayer/vplayer/metrics"
	"github.com/vplayer/vplayer/stream"
)

// validateOperations checks the run's operational flags: --metrics-addr and the TLS modes.
func (f *runFlags) validateOperations() error {
	if f.metricsAddr != "" {
		if err := checkListenAddr(f.metricsAddr); err != nil {
			return usagef("--metrics-addr %q: %v", f.metricsAddr, err)
		}
	}
	for _, t := range []tlsFlags{f.sourceTLS, f.targetTLS} {
		if _, err := tlsconfig.ParseMode(t.mode); err != nil {
			return usagef("--%s-tls-mode: %v", t.side, err)
		}
	}
	return nil
}

// checkListenAddr checks a HOST:PORT to listen on; HOST may be empty (every interface) and PORT 0
// (a free port).
func checkListenAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want HOST:PORT, e.g. 127.0.0.1:9100 or :9100")
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return nil
}

// operations are what a run serves operators besides replication: the metrics collector (read by
// /metrics, /healthz and the progress line), the metrics server and the progress logger.
type operations struct {
	col          *metrics.Collector
	stopServer   func()
	stopProgress context.CancelFunc
	progressDone chan struct{}
}

// startOperations creates the collector, starts serving --metrics-addr when set (a failure to
// listen is an error: exit code 1) and the progress line. stop ends both.
func (f *runFlags) startOperations(ctx context.Context, log *slog.Logger) (*operations, error) {
	o := &operations{
		col: metrics.New(metrics.Options{Workflow: f.workflow, RelayLogMaxBytes: f.relayMaxSize, RelayLogMaxItems: f.relayMaxItems}),
	}
	if f.metricsAddr != "" {
		stop, err := serveMetrics(f.metricsAddr, o.col, log)
		if err != nil {
			return nil, err
		}
		o.stopServer = stop
	}
	pctx, cancel := context.WithCancel(ctx)
	o.stopProgress, o.progressDone = cancel, make(chan struct{})
	go func() {
		defer close(o.progressDone)
		logProgress(pctx, log, o.col, progressInterval)
	}()
	return o, nil
}

// hook makes the stream report to the collector.
func (o *operations) hook(cfg *stream.Config) {
	cfg.OnStart, cfg.OnError, cfg.OnState = o.col.OnStart, o.col.OnError, o.col.OnState
}

// stop ends the progress line and shuts the metrics server down, waiting for both.
func (o *operations) stop() {
	o.stopProgress()
	<-o.progressDone
	if o.stopServer != nil {
		o.stopServer()
	}
}
