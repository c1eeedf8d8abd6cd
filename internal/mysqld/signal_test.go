package mysqld

import (
	"fmt"
	"github.com/vplayer/vplayer/internal/eventually"
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

// waitState waits up to a second for pid's state to be want, and fails the test otherwise.
func waitState(t *testing.T, pid int, want, after string) {
	t.Helper()
	eventually.Must(t, time.Second, 5*time.Millisecond, fmt.Sprintf("state %q %s", want, after), func() error {
		if got := procState(t, pid); got != want {
			return fmt.Errorf("state %q", got)
		}
		return nil
	})
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
	waitState(t, p.pid, "T", "after SIGSTOP")
	if err := s.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("Signal(SIGCONT) = %v, want nil", err)
	}
	waitState(t, p.pid, "S", "after SIGCONT")
	s.Kill()
	if err := s.Signal(syscall.SIGCONT); err == nil {
		t.Errorf("Signal after Kill = nil, want an error")
	}
}
