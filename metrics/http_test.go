package metrics

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/vplayer/vplayer/stall"
	"github.com/vplayer/vplayer/workflow"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestServer(t *testing.T) {
	col, _ := newTestCollector()
	srv, err := Listen("127.0.0.1:0", Handler(NewRegistry(col), col))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	base := "http://" + srv.Addr().String()

	if code, body := get(t, base+"/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "starting") {
		t.Errorf("/healthz before the first attempt: %d %q, want 503 starting", code, body)
	}
	a := &fakePipeline{}
	col.OnState(workflow.StateRunning)
	col.start(a)
	if code, body := get(t, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz while running: %d %q, want 200 ok", code, body)
	}
	col.OnError(&stall.Error{Detector: stall.RelayLog}, false)
	if code, body := get(t, base+"/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "relay log I/O stalled") {
		t.Errorf("/healthz after a stall: %d %q, want 503 naming the stall", code, body)
	}
	code, body := get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`vplayer_stalls_total{detector="relay_log",workflow="orders"} 1`,
		`vplayer_state{state="Running",workflow="orders"} 1`,
		"go_goroutines ",
		"process_cpu_seconds_total ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// The profiles have a listener of their own (--pprof-addr).
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=1", "/nope"} {
		if code, _ := get(t, base+path); code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, code)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("Serve after Shutdown: %v, want nil", err)
	}
}

// TestPprofHandler: the profiles are served, the command line is not.
func TestPprofHandler(t *testing.T) {
	srv, err := Listen("127.0.0.1:0", PprofHandler())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	base := "http://" + srv.Addr().String()

	if code, body := get(t, base+"/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/: %d, want 200 with the profiles", code)
	}
	if code, body := get(t, base+"/debug/pprof/goroutine?debug=1"); code != http.StatusOK || !strings.Contains(body, "goroutine profile") {
		t.Errorf("/debug/pprof/goroutine?debug=1: %d, want 200 with the goroutines", code)
	}
	if code, _ := get(t, base+"/debug/pprof/symbol"); code != http.StatusOK {
		t.Errorf("/debug/pprof/symbol: %d, want 200", code)
	}
	for _, path := range []string{"/debug/pprof/cmdline", "/debug/pprof/cmdline?debug=1", "/debug/pprof/cmdline/"} {
		code, body := get(t, base+path)
		if code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, code)
		}
		for _, arg := range os.Args[1:] {
			if len(arg) > 3 && strings.Contains(body, arg) {
				t.Errorf("%s shows the command line's %q: %q", path, arg, body)
			}
		}
	}
	if code, _ := get(t, base+"/metrics"); code != http.StatusNotFound {
		t.Errorf("/metrics on the profiles' listener: %d, want 404", code)
	}
	http.DefaultClient.CloseIdleConnections()
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("Serve after Shutdown: %v, want nil", err)
	}
}

func TestListen_portInUse(t *testing.T) {
	col, _ := newTestCollector()
	srv, err := Listen("127.0.0.1:0", Handler(NewRegistry(col), col))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	if _, err := Listen(srv.Addr().String(), http.NotFoundHandler()); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("Listen on a port in use: %v, want address already in use", err)
	}
}
