package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/metrics"
	"github.com/vplayer/vplayer/workflow"
)

// pollInterval is how often the workflow record is read while vplayer catches up: the
// resolution of vplayer's catch-up time.
const pollInterval = 10 * time.Millisecond

// stopGrace bounds the wait for vplayer to exit after SIGTERM (it must within 2s).
const stopGrace = 10 * time.Second

// vplayerProc is a running `vplayer run` process.
type vplayerProc struct {
	cmd         *exec.Cmd
	logPath     string
	metricsAddr string // its --metrics-addr
	exited      chan struct{}
	waitErr     error
	started     time.Time
}

// startVplayer runs t's vplayer binary on the bench workflow on t's target, its output to a log
// file. A non-empty startPos is passed as --start-pos (it only matters before the record exists);
// t's worker count, when not 0, as --apply-workers.
func (c *cluster) startVplayer(ctx context.Context, t vtarget, startPos string) (*vplayerProc, error) {
	args := append([]string{}, t.cmd[1:]...)
	args = append(args, "run",
		"--workflow", workflowName,
		"--source", c.source.DSN(dbName),
		"--target", t.server.DSN(dbName),
		"--vplayer-progress-deadline", "10m",
		"--retry-delay", "1s",
	)
	if startPos != "" {
		args = append(args, "--start-pos", startPos)
	}
	if t.workers > 0 {
		args = append(args, "--apply-workers", strconv.Itoa(t.workers))
	}
	// Its metrics, for the retries of its workers: on a port free a moment ago.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("find a free port for vplayer's metrics: %w", err)
	}
	metricsAddr := l.Addr().String()
	l.Close()
	args = append(args, "--metrics-addr", metricsAddr)
	logf, err := os.CreateTemp(c.tmp, "vplayer-*.log")
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(t.cmd[0], args...)
	cmd.Env = append(os.Environ(), c.o.Env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &vplayerProc{cmd: cmd, logPath: logf.Name(), metricsAddr: metricsAddr, exited: make(chan struct{}), started: time.Now()}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start vplayer: %w", err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// waitFor polls the workflow record until its position contains want (a MariaDB GTID
// position), and fails when the process exits or the record says Error.
func (p *vplayerProc) waitFor(ctx context.Context, store *workflow.Store, want string) error {
	return waitRecord(ctx, store, want, p.exited, p.describeExit)
}

func waitRecord(ctx context.Context, store *workflow.Store, want string, exited <-chan struct{}, why func() error) error {
	target, err := binlog.ParsePosition(want, "mariadb")
	if err != nil {
		return err
	}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		r, err := store.Get(ctx, workflowName)
		if err == nil {
			if pos, err := binlog.ParsePosition(r.Pos, "mariadb"); err == nil && pos.Contains(target) {
				return nil
			}
			if r.State == workflow.StateError {
				return fmt.Errorf("vplayer failed: %s", r.Message)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			return why()
		case <-tick.C:
		}
	}
}

func (p *vplayerProc) describeExit() error {
	return fmt.Errorf("vplayer exited before catching up (%v); its log ends:\n%s", p.waitErr, tailFile(p.logPath, 20))
}

// peakRSS returns the process's peak resident set size (VmHWM), in bytes.
func (p *vplayerProc) peakRSS() (int64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.cmd.Process.Pid), "status"))
	if err != nil {
		return 0, err
	}
	return parseVmHWM(b)
}

// parseVmHWM reads "VmHWM:   12345 kB" from a /proc/<pid>/status.
func parseVmHWM(status []byte) (int64, error) {
	for line := range strings.Lines(string(status)) {
		rest, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("unexpected VmHWM line %q", strings.TrimSpace(line))
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("VmHWM: %w", err)
		}
		return kb * 1024, nil
	}
	return 0, errors.New("no VmHWM in /proc status")
}

// stop sends SIGTERM and waits for a clean exit (status 0), killing the process after
// stopGrace.
func (p *vplayerProc) stop() error {
	select {
	case <-p.exited:
		return p.describeExit()
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("vplayer did not exit within %v of SIGTERM; its log ends:\n%s", stopGrace, tailFile(p.logPath, 20))
	}
	if p.waitErr != nil {
		return fmt.Errorf("vplayer exited with %v after SIGTERM; its log ends:\n%s", p.waitErr, tailFile(p.logPath, 20))
	}
	return nil
}

// applyRetries reads vplayer_apply_retries_total from the process's /metrics.
func (p *vplayerProc) applyRetries(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.metricsAddr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	return metricValue(string(body), metrics.NameApplyRetries)
}

// metricValue returns the value of a metric of one series (vplayer's carry the workflow's label)
// in a Prometheus text exposition.
func metricValue(exposition, name string) (int64, error) {
	for line := range strings.Lines(exposition) {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (!strings.HasPrefix(rest, " ") && !strings.HasPrefix(rest, "{")) {
			continue
		}
		f := strings.Fields(rest)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		return int64(v), nil
	}
	return 0, fmt.Errorf("no %s in /metrics", name)
}

// tailFile returns the last n lines of a file, or why it cannot.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
