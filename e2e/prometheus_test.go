package e2e

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/vplayer/vplayer/internal/eventually"
	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
)

// rulesFile is the alert rule file shipped for Prometheus.
const rulesFile = "../deploy/prometheus/vplayer-rules.yml"

// TestPrometheusAlertsOnStall runs Debian's prometheus binary against a running vplayer with the
// shipped rule file loaded, in a scrape job named as the Kubernetes Deployment's prometheus.io
// annotations name it: once Prometheus scrapes the process, a lock on the target stalls the
// applier, and Prometheus's HTTP API shows the VplayerStalled rule's own expression true for this
// workflow, the alert pending or firing, and the lag series scraped and grown past the deadline.
// Once the process has exited, VplayerDown's expression holds for the workflow and the alert is
// pending.
func TestPrometheusAlertsOnStall(t *testing.T) {
	bin := prometheusBinary(t)
	const deadline = 2 * time.Second
	e := newEnv(t)
	e.createKV("int")
	for _, db := range []*sql.DB{e.src, e.dst} {
		if _, err := db.ExecContext(e.ctx(), "INSERT INTO kv VALUES (1, 1)"); err != nil {
			t.Fatal(err)
		}
	}
	p := e.startVplayer("--metrics-addr", "127.0.0.1:0", "--vplayer-progress-deadline", deadline.String(), "--retry-delay", "300ms")
	addr := p.metricsAddr(30 * time.Second)
	e.waitRunning(30 * time.Second)

	prom := startPrometheus(t, bin, addr)
	sel := fmt.Sprintf(`{workflow=%q}`, e.workflow)
	// The stall must come after Prometheus's first scrape, or the counter's first sample already
	// holds it and increase sees no change.
	prom.waitQuery(`vplayer_stalls_total{detector="applier",workflow="`+e.workflow+`"} == 0`, 30*time.Second, nonEmpty)
	prom.waitQuery(`up{job="`+scrapeJob+`"} == 1`, 5*time.Second, nonEmpty)
	prom.waitQuery(`vplayer_build_info`+sel+` == 1`, 5*time.Second, nonEmpty)

	release := e.lockRow("UPDATE " + e.db + ".kv SET v = v WHERE id = 1")
	locked := time.Now()
	if _, err := e.src.ExecContext(e.ctx(), "UPDATE kv SET v = 2 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}

	expr := ruleExpr(t, "VplayerStalled")
	res := prom.waitQuery(expr, deadline+20*time.Second, func(r []promSample) bool {
		for _, s := range r {
			if s.Metric["workflow"] == e.workflow && s.Metric["detector"] == "applier" {
				return true
			}
		}
		return false
	})
	t.Logf("%s true %v after the lock: %v", expr, time.Since(locked).Round(100*time.Millisecond), res)

	alert := prom.waitAlert("VplayerStalled", e.workflow, 10*time.Second)
	t.Logf("alert %s %s: %v", alert.Labels["alertname"], alert.State, alert.Labels)
	if got, want := alert.Labels["detector"], "applier"; got != want {
		t.Errorf("VplayerStalled's detector=%q, want %q", got, want)
	}

	lag := prom.waitQuery("max_over_time(vplayer_lag_seconds"+sel+"[1m]) >= "+strconv.Itoa(int(deadline.Seconds())), 10*time.Second, nonEmpty)
	t.Logf("lag scraped by Prometheus, highest in the last minute: %v", lag)

	release()
	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("vplayer exited with %d after SIGTERM, want 0", code)
	}
	// The process is gone: the next scrape fails.
	down := ruleExpr(t, "VplayerDown")
	res = prom.waitQuery(down, 15*time.Second, func(r []promSample) bool {
		for _, s := range r {
			if s.Metric["workflow"] == e.workflow && s.Metric["job"] == scrapeJob {
				return true
			}
		}
		return false
	})
	t.Logf("%s true once vplayer exited: %v", down, res)
	alert = prom.waitAlert("VplayerDown", e.workflow, 10*time.Second)
	t.Logf("alert %s %s: %v", alert.Labels["alertname"], alert.State, alert.Labels)
	if err := prom.stop(); err != nil {
		t.Errorf("stop prometheus: %v", err)
	}
}

// prometheusBinary returns the prometheus server's path; it skips the test when none is
// installed, unless VPLAYER_REQUIRE_MYSQL=1 (CI), which fails it.
func prometheusBinary(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err == nil {
		return bin
	}
	msg := "no prometheus binary on PATH: install Debian's prometheus package (scripts/ensure-prometheus.sh)"
	if os.Getenv(mysqltest.EnvRequire) == "1" {
		t.Fatalf("%s; %s=1 requires it", msg, mysqltest.EnvRequire)
	}
	t.Skipf("%s (set %s=1 to fail instead)", msg, mysqltest.EnvRequire)
	return ""
}

// ruleExpr returns the expression of the named alert in the shipped rule file.
func ruleExpr(t *testing.T, alert string) string {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &file); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			if r.Alert == alert {
				return r.Expr
			}
		}
	}
	t.Fatalf("%s has no alert %s", rulesFile, alert)
	return ""
}

// scrapeJob is the scrape job's name: the one Prometheus's Kubernetes example configuration
// gives the pods it finds through the prometheus.io annotations, as the Deployment's are.
const scrapeJob = "kubernetes-pods"

// promServer is a running prometheus process.
type promServer struct {
	t      *testing.T
	url    string
	cmd    *exec.Cmd
	out    *syncBuffer
	done   chan struct{}
	client *http.Client
}

// startPrometheus starts bin on a free loopback port, with its storage in a temporary directory,
// scraping target every second and evaluating the shipped rules every second, and waits until it
// is ready. It is stopped at the test's end if the test has not stopped it.
func startPrometheus(t *testing.T, bin, target string) *promServer {
	t.Helper()
	rules, err := filepath.Abs(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - %q
scrape_configs:
  - job_name: %s
    static_configs:
      - targets: [%q]
`, rules, scrapeJob, target)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	listen := freeLoopbackAddr(t)
	p := &promServer{
		t: t, url: "http://" + listen, out: &syncBuffer{}, done: make(chan struct{}),
		client: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
	}
	p.cmd = exec.Command(bin,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+listen,
		"--log.level=warn",
	)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("prometheus output:\n%s", p.out.String())
		}
	})
	if err := eventually.Wait(30*time.Second, 100*time.Millisecond, func() error {
		code, body := p.get("/-/ready")
		if code == http.StatusOK {
			return nil
		}
		select {
		case <-p.done:
			t.Fatalf("prometheus exited before it was ready; output:\n%s", p.out.String())
		default:
		}
		return fmt.Errorf("/-/ready: %d %s", code, body)
	}); err != nil {
		t.Fatalf("prometheus not ready within 30s: %v; output:\n%s", err, p.out.String())
	}
	return p
}

// freeLoopbackAddr returns a loopback address whose port was free a moment ago.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// stop sends SIGTERM and waits up to 10s for the exit, then kills. It returns an error when
// prometheus had to be killed or had already exited on its own.
func (p *promServer) stop() error {
	select {
	case <-p.done:
		if p.cmd.ProcessState != nil && !p.cmd.ProcessState.Success() {
			return fmt.Errorf("prometheus exited by itself: %v", p.cmd.ProcessState)
		}
		return nil
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("prometheus did not exit within 10s of SIGTERM; killed")
	}
}

func (p *promServer) get(path string) (int, []byte) {
	resp, err := p.client.Get(p.url + path)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// promSample is one element of an instant vector from /api/v1/query.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (s promSample) String() string { return fmt.Sprintf("%v=%v", s.Metric, s.Value[1]) }

func nonEmpty(r []promSample) bool { return len(r) > 0 }

// query evaluates an instant query now; it fails the test on an API error.
func (p *promServer) query(q string) []promSample {
	p.t.Helper()
	code, b := p.get("/api/v1/query?query=" + url.QueryEscape(q))
	var resp struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string       `json:"resultType"`
			Result     []promSample `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		p.t.Fatalf("query %q: %d %s: %v", q, code, b, err)
	}
	if resp.Status != "success" || resp.Data.ResultType != "vector" {
		p.t.Fatalf("query %q: %d status %q, result type %q: %s", q, code, resp.Status, resp.Data.ResultType, resp.Error)
	}
	return resp.Data.Result
}

// waitQuery polls query q until ok holds of its result, and returns that result; it fails the
// test after timeout.
func (p *promServer) waitQuery(q string, timeout time.Duration, ok func([]promSample) bool) []promSample {
	p.t.Helper()
	var r []promSample
	eventually.Must(p.t, timeout, 200*time.Millisecond, fmt.Sprintf("query %q to give the wanted result", q), func() error {
		if r = p.query(q); !ok(r) {
			return fmt.Errorf("result %v", r)
		}
		return nil
	})
	return r
}

// promAlert is one element of /api/v1/alerts.
type promAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

// waitAlert polls /api/v1/alerts until the named alert of workflow is pending or firing.
func (p *promServer) waitAlert(name, workflow string, timeout time.Duration) promAlert {
	p.t.Helper()
	var found promAlert
	eventually.Must(p.t, timeout, 200*time.Millisecond, fmt.Sprintf("a %s alert of workflow %s pending or firing", name, workflow), func() error {
		code, b := p.get("/api/v1/alerts")
		var resp struct {
			Status string `json:"status"`
			Data   struct {
				Alerts []promAlert `json:"alerts"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &resp); err != nil || resp.Status != "success" {
			p.t.Fatalf("GET /api/v1/alerts: %d %s: %v", code, b, err)
		}
		for _, a := range resp.Data.Alerts {
			if a.Labels["alertname"] == name && a.Labels["workflow"] == workflow && (a.State == "pending" || a.State == "firing") {
				found = a
				return nil
			}
		}
		return fmt.Errorf("alerts %+v", resp.Data.Alerts)
	})
	return found
}
