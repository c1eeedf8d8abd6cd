package mysqld

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

func TestSweep(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := strconv.Itoa(cmd.Process.Pid)
	self := strconv.Itoa(os.Getpid())

	base := t.TempDir()
	tests := []struct {
		name      string
		dir       string
		owner     string // "" for no owner file
		server    string // "" for no pid file
		wantExist bool
	}{
		{name: "dead owner", dir: tempPrefix + "a-1", owner: dead, wantExist: false},
		{name: "dead owner and server", dir: tempPrefix + "b-1", owner: dead, server: dead, wantExist: false},
		{name: "live owner", dir: tempPrefix + "c-1", owner: self, wantExist: true},
		{name: "live server", dir: tempPrefix + "d-1", owner: dead, server: self, wantExist: true},
		{name: "no owner file", dir: tempPrefix + "e-1", wantExist: true},
		{name: "other prefix", dir: "other-1", owner: dead, wantExist: true},
	}
	for _, tt := range tests {
		l := newLayout(filepath.Join(base, tt.dir))
		if err := os.Mkdir(l.root, 0o755); err != nil {
			t.Fatal(err)
		}
		for path, pid := range map[string]string{l.owner: tt.owner, l.pidFile: tt.server} {
			if pid == "" {
				continue
			}
			if err := os.WriteFile(path, []byte(pid+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	sweep(base)
	for _, tt := range tests {
		_, err := os.Stat(filepath.Join(base, tt.dir))
		if got := !errors.Is(err, os.ErrNotExist); got != tt.wantExist {
			t.Errorf("%s: exists after sweep=%v, want %v", tt.name, got, tt.wantExist)
		}
	}
}
