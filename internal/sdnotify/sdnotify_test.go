package sdnotify

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// env is a getenv of fixed variables.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// listen listens on a unixgram socket named name and returns a function reading one datagram.
func listen(t *testing.T, name string) (recv func() string) {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return func() string {
		t.Helper()
		if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 4096)
		n, err := c.Read(b)
		if err != nil {
			t.Fatal(err)
		}
		return string(b[:n])
	}
}

func TestNotifier_Send(t *testing.T) {
	for _, tc := range []struct{ name, socket string }{
		{name: "path", socket: filepath.Join(t.TempDir(), "notify")},
		{name: "abstract", socket: fmt.Sprintf("@vplayer-sdnotify-test-%d", os.Getpid())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recv := listen(t, tc.socket)
			n := FromEnv(env(map[string]string{"NOTIFY_SOCKET": tc.socket}))
			if n == nil {
				t.Fatal("FromEnv returned nil with NOTIFY_SOCKET set")
			}
			if err := n.Send(Ready, Status("Running:\nok")); err != nil {
				t.Fatal(err)
			}
			if got, want := recv(), "READY=1\nSTATUS=Running: ok"; got != want {
				t.Errorf("datagram %q, want %q", got, want)
			}
			if err := n.Send(Watchdog); err != nil {
				t.Fatal(err)
			}
			if got, want := recv(), "WATCHDOG=1"; got != want {
				t.Errorf("datagram %q, want %q", got, want)
			}
		})
	}
}

func TestNotifier_Send_errors(t *testing.T) {
	if n := FromEnv(env(nil)); n != nil {
		t.Errorf("FromEnv without NOTIFY_SOCKET = %v, want nil", n)
	}
	n := FromEnv(env(map[string]string{"NOTIFY_SOCKET": filepath.Join(t.TempDir(), "absent")}))
	if err := n.Send(Ready); err == nil || !strings.HasPrefix(err.Error(), "sdnotify: ") {
		t.Errorf("Send to an absent socket: %v, want an sdnotify error", err)
	}
	if err := n.Send(); err == nil {
		t.Error("Send of nothing: nil error")
	}
}

func TestWatchdogInterval(t *testing.T) {
	for _, tc := range []struct {
		name    string
		vars    map[string]string
		want    time.Duration
		wantErr bool
	}{
		{name: "unset", vars: nil},
		{name: "ours", vars: map[string]string{"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "42"}, want: 30 * time.Second},
		{name: "no pid", vars: map[string]string{"WATCHDOG_USEC": "1500"}, want: 1500 * time.Microsecond},
		{name: "another process's", vars: map[string]string{"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "7"}},
		{name: "zero", vars: map[string]string{"WATCHDOG_USEC": "0"}, wantErr: true},
		{name: "not a number", vars: map[string]string{"WATCHDOG_USEC": "30s"}, wantErr: true},
		{name: "overflow", vars: map[string]string{"WATCHDOG_USEC": "9223372036854775807"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := WatchdogInterval(env(tc.vars), 42)
			if (err != nil) != tc.wantErr {
				t.Fatalf("WatchdogInterval: error %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("WatchdogInterval=%v, want %v", got, tc.want)
			}
		})
	}
}
