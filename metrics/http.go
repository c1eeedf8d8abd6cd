package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves /metrics from reg and /healthz from c.
//
// /healthz answers 200 "ok" while the stream runs and has made progress since its last error,
// and 503 with the reason otherwise: starting, stalled or failed and not yet progressing again,
// waiting to retry, stopped, or stopped on a terminal error.
func Handler(reg *prometheus.Registry, c *Collector) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		ok, reason := c.Health()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintln(w, reason)
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "vplayer: /metrics /healthz")
	})
	return mux
}

// PprofHandler serves the Go runtime's profiles under /debug/pprof/ (the index, the named
// profiles, profile, symbol and trace), for a listener of its own. It never serves the process's
// command line: /debug/pprof/cmdline answers 404, since a DSN given with its password inline is
// part of it.
func PprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not served: the command line can hold a password", http.StatusNotFound)
	})
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "vplayer: /debug/pprof/")
	})
	return mux
}

// NewRegistry returns a registry holding c and the Go runtime and process collectors. It is the
// process's own registry, not the global one.
func NewRegistry(c *Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(registered(c)...)
	return reg
}

// registered returns the collectors NewRegistry registers: every metric /metrics can show is
// described by one of them.
func registered(c *Collector) []prometheus.Collector {
	return []prometheus.Collector{c, prometheusGoCollector(), prometheusProcessCollector()}
}

// Server is an HTTP server of vplayer run: --metrics-addr's or --pprof-addr's.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// Listen listens on addr (HOST:PORT; port 0 picks a free one) for h. Serve serves it.
func Listen(addr string, h http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &Server{ln: ln, srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until Shutdown, then returns nil; any other failure is returned.
func (s *Server) Serve() error {
	if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops accepting connections and waits for the requests in flight until ctx ends, then
// closes what is left (a long profile request).
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.srv.Close())
	}
	s.ln.Close() // when Serve never ran; otherwise already closed
	return err
}
