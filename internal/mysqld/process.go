package mysqld

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
)

// process is a child server process. It is reaped by polling wait4 rather than by a goroutine
// blocked in Wait, so that a running server owns no goroutine and tests that check for leaked
// goroutines (goleak) can share servers across tests.
type process struct {
	mu     sync.Mutex
	pid    int
	exited bool
	status syscall.WaitStatus
}

// startProcess starts binary with args (and env added to this process's environment) in its own
// process group, with stdout and stderr appended to logPath. The child gets SIGKILL when the thread that started it dies, so it does
// not outlive a test binary that panics or is killed.
func startProcess(binary string, args, env []string, logPath string) (*process, error) {
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer devnull.Close()
	p, err := os.StartProcess(binary, append([]string{binary}, args...), &os.ProcAttr{
		Files: []*os.File{devnull, logf, logf},
		Env:   append(os.Environ(), env...),
		Sys: &syscall.SysProcAttr{
			Setpgid:   true,
			Pdeathsig: syscall.SIGKILL,
		},
	})
	if err != nil {
		return nil, err
	}
	pid := p.Pid
	// Reaping is done with wait4 on the pid; the handle is only released (a pidfd on Linux).
	if err := p.Release(); err != nil {
		return nil, err
	}
	return &process{pid: pid}, nil
}

// poll reaps the process if it has exited and reports whether it has.
func (p *process) poll() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reapLocked(false)
}

func (p *process) reapLocked(block bool) bool {
	if p.exited {
		return true
	}
	opts := syscall.WNOHANG
	if block {
		opts = 0
	}
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(p.pid, &ws, opts, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil { // ECHILD: reaped elsewhere; nothing left to wait for
			p.exited = true
			return true
		}
		if pid == p.pid && (ws.Exited() || ws.Signaled()) {
			p.exited = true
			p.status = ws
			return true
		}
		if !block {
			return false
		}
	}
}

// signal sends sig to the process group; a no-op once the process is reaped (its pid may then
// belong to someone else).
func (p *process) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reapLocked(false) {
		return
	}
	_ = syscall.Kill(-p.pid, sig)
}

// stop sends SIGTERM and waits up to grace for the process to exit, then sends SIGKILL and
// waits for it. It returns an error when the process had to be killed or exited with a
// failure status.
func (p *process) stop(grace time.Duration) error {
	p.signal(syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for !p.poll() {
		if time.Now().After(deadline) {
			p.kill()
			return fmt.Errorf("pid %d did not exit within %v of SIGTERM; killed", p.pid, grace)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return p.exitErr()
}

// kill sends SIGKILL to the process group and waits for the process.
func (p *process) kill() {
	p.signal(syscall.SIGKILL)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reapLocked(true)
}

// exitErr describes a failed exit; nil for a clean one or while running.
func (p *process) exitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ws := p.status; {
	case !p.exited:
		return nil
	case ws.Signaled():
		return fmt.Errorf("pid %d killed by %v", p.pid, ws.Signal())
	case ws.Exited() && ws.ExitStatus() != 0:
		return fmt.Errorf("pid %d exited with status %d", p.pid, ws.ExitStatus())
	}
	return nil
}
