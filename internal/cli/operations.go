package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"

	"github.com/vplayer/vplayer/internal/tlsconfig"
	"github.com/vplayer/vplayer/metrics"
	"github.com/vplayer/vplayer/stream"
)

// validateOperations checks the run's operational flags: --metrics-addr, --pprof-addr and the
// TLS modes.
func (f *runFlags) validateOperations() error {
	if f.metricsAddr != "" {
		if err := checkListenAddr(f.metricsAddr); err != nil {
			return usagef("--metrics-addr %q: %v", f.metricsAddr, err)
		}
	}
	if f.pprofAddr != "" {
		if err := checkListenAddr(f.pprofAddr); err != nil {
			return usagef("--pprof-addr %q: %v", f.pprofAddr, err)
		}
		if _, port, _ := net.SplitHostPort(f.pprofAddr); f.pprofAddr == f.metricsAddr && port != "0" {
			return usagef("--pprof-addr %q is --metrics-addr's: the profiles have a listener of their own, e.g. 127.0.0.1:6060", f.pprofAddr)
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
// /metrics, /healthz, the progress line and systemd's notifications), the metrics and profiles
// servers, the progress logger and, under systemd's Type=notify, the notifications.
type operations struct {
	col          *metrics.Collector
	stopServers  []func()
	stopProgress context.CancelFunc
	progressDone chan struct{}
	systemd      *systemdFeed  // nil unless $NOTIFY_SOCKET is set
	systemdDone  chan struct{} // closed when systemd's Run returns
}

// startOperations creates the collector, starts serving --metrics-addr and --pprof-addr when set
// (a failure to listen is an error: exit code 1), the progress line and, when $NOTIFY_SOCKET is
// set, systemd's notifications. stop ends them all.
func (f *runFlags) startOperations(ctx context.Context, log *slog.Logger) (*operations, error) {
	o := &operations{
		col: metrics.New(metrics.Options{Workflow: f.workflow, RelayLogMaxBytes: f.relayMaxSize, RelayLogMaxItems: f.relayMaxItems,
			ApplyDelay: f.hold.applyDelay, Build: readBuild().Build}),
	}
	if f.metricsAddr != "" {
		stop, err := serveMetrics(f.metricsAddr, o.col, log)
		if err != nil {
			return nil, err
		}
		o.stopServers = append(o.stopServers, stop)
	}
	if f.pprofAddr != "" {
		stop, err := servePprof(f.pprofAddr, log)
		if err != nil {
			o.stopAll()
			return nil, err
		}
		o.stopServers = append(o.stopServers, stop)
	}
	pctx, cancel := context.WithCancel(ctx)
	o.stopProgress, o.progressDone = cancel, make(chan struct{})
	go func() {
		defer close(o.progressDone)
		logProgress(pctx, log, o.col, progressInterval)
	}()
	if o.systemd = newSystemdFeed(os.Getenv, os.Getpid(), o.col.Snapshot, log); o.systemd != nil {
		o.systemdDone = make(chan struct{})
		go func() {
			defer close(o.systemdDone)
			o.systemd.Run(pctx)
		}()
	}
	return o, nil
}

// hook makes the stream report to the collector.
func (o *operations) hook(cfg *stream.Config) {
	cfg.OnStart, cfg.OnError, cfg.OnState = o.col.OnStart, o.col.OnError, o.col.OnState
}

// ready tells systemd, when it asked, that the stream runs (READY=1): the watchdog is fed from
// then on, while the stream is live.
func (o *operations) ready() {
	if o.systemd != nil {
		o.systemd.Ready()
	}
}

// stop ends the progress line and systemd's notifications (STOPPING=1) and shuts the servers down,
// waiting for them all.
func (o *operations) stop() {
	o.stopProgress()
	<-o.progressDone
	if o.systemdDone != nil {
		<-o.systemdDone
	}
	o.stopAll()
}

// stopAll shuts the servers started so far down.
func (o *operations) stopAll() {
	for _, stop := range o.stopServers {
		stop()
	}
	o.stopServers = nil
}
