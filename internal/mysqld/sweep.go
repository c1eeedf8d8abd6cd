package mysqld

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// tempPrefix starts the name of every temporary directory Start creates.
const tempPrefix = "vplayer-mysqld-"

// maxTempBase keeps the unix socket path (base + prefix + name + random + "/mysqld.sock") under
// the 107-byte limit of sun_path.
const maxTempBase = 40

// tempBase is where Start creates temporary directories: os.TempDir(), or /tmp when that is
// too long for a unix socket path.
func tempBase() string {
	if d := os.TempDir(); len(d) <= maxTempBase {
		return d
	}
	return "/tmp"
}

var sweepOnce sync.Once

// sweepStale removes, once per process, the temporary directories left by harness processes
// that died without Stop (a test binary killed by a timeout or SIGKILL: its servers die with
// it through Pdeathsig, their directories stay). A directory is removed only when the process
// recorded in its owner file and the server recorded in its pid file are both gone; a directory
// without an owner file is left alone, as it may be being created.
func sweepStale() {
	sweepOnce.Do(func() { sweep(tempBase()) })
}

func sweep(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		l := newLayout(filepath.Join(base, e.Name()))
		owner, ok := readPID(l.owner)
		if !ok || alive(owner) {
			continue
		}
		if server, ok := readPID(l.pidFile); ok && alive(server) {
			continue
		}
		_ = os.RemoveAll(l.root)
	}
}

func readPID(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil && pid > 0
}

// alive reports whether a process with this pid exists (a zombie counts). A pid reused by an
// unrelated process reads as alive, which only delays a removal.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
