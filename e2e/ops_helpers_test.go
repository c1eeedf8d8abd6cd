package e2e

import (
	"bufio"
	"fmt"
	"github.com/vplayer/vplayer/internal/eventually"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startProc runs the vplayer binary with args and extra environment variables (NAME=value).
func startProc(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, cmd: exec.Command(binary, args...), out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(p.cmd.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("vplayer %s output:\n%s", strings.Join(args[:1], " "), p.out.String())
		}
	})
	return p
}

// runProc runs the vplayer binary to its end and returns its exit code and output.
func runProc(t *testing.T, env []string, timeout time.Duration, args ...string) (int, string) {
	t.Helper()
	p := startProc(t, env, args...)
	code := p.wait(timeout)
	return code, p.out.String()
}

var servingAddr = regexp.MustCompile(`msg="serving metrics".* addr=(\S+)|"msg":"serving metrics".*"addr":"([^"]+)"`)

// metricsAddr waits for the process to log the address its metrics server listens on.
func (p *proc) metricsAddr(timeout time.Duration) string {
	p.t.Helper()
	var m []string
	eventually.Must(p.t, timeout, 20*time.Millisecond, "vplayer to log its metrics address", func() error {
		out := p.out.String()
		if m = servingAddr.FindStringSubmatch(out); m == nil {
			return fmt.Errorf("output:\n%s", out)
		}
		return nil
	})
	return m[1] + m[2]
}

// httpGet returns the status and body of a GET, or code 0 when the request failed.
func httpGet(url string) (int, string) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// scrape is one /metrics reading: samples by "name{labels}" as the exposition prints them.
type scrape map[string]float64

func getMetrics(t *testing.T, addr string) (scrape, string) {
	t.Helper()
	code, body := httpGet("http://" + addr + "/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	s := scrape{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		s[line[:i]] = v
	}
	return s, body
}

// get returns the value of the sample of name whose labels include every given name="value"
// pair; it fails the test when there is none.
func (s scrape) get(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	for k, v := range s {
		n, rest, _ := strings.Cut(k, "{")
		if n != name {
			continue
		}
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			if !strings.Contains(rest, labels[i]+`="`+labels[i+1]+`"`) {
				ok = false
				break
			}
		}
		if ok {
			return v
		}
	}
	t.Fatalf("no sample %s%v in /metrics", name, labels)
	return 0
}
