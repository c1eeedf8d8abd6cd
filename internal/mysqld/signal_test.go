package mysqld

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// procState returns the state letter of pid as /proc shows it ("S" sleeping, "T" stopped).
func procState(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	// "pid (comm) state ...": comm may hold spaces, so the state is what follows the last ')'.
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0]
}

// waitState waits up to a second for pid's state to be want, and returns the last state seen.
func waitState(t *testing.T, pid int, want string) string {
	t.Helper()
	var got string
	for deadline := time.Now().Add(time.Second); ; time.Sleep(5 * time.Millisecond) {
		if got = procState(t, pid); got == want || time.Now().After(deadline) {
			return got
		}
	}
}

// TestServer_Signal: SIGSTOP freezes the server's process and SIGCONT resumes it; after Kill,
// Signal fails rather than signal a pid that may belong to another process. A sleep stands in for
// the server: only the process matters.
func TestServer_Signal(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip(err)
	}
	root := t.TempDir()
	p, err := startProcess(sleep, []string{"60"}, nil, filepath.Join(root, "error.log"))
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{name: "sleeper", proc: p, dir: newLayout(filepath.Join(root, "server"))}
	t.Cleanup(s.Kill)

	if err := s.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("Signal(SIGSTOP) = %v, want nil", err)
	}
	if got, want := waitState(t, p.pid, "T"), "T"; got != want {
		t.Errorf("state after SIGSTOP = %q, want %q", got, want)
	}
	if err := s.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("Signal(SIGCONT) = %v, want nil", err)
	}
	if got, want := waitState(t, p.pid, "S"), "S"; got != want {
		t.Errorf("state after SIGCONT = %q, want %q", got, want)
	}
	s.Kill()
	if err := s.Signal(syscall.SIGCONT); err == nil {
		t.Errorf("Signal after Kill = nil, want an error")
	}
}
