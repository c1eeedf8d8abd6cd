// Package sdnotify speaks systemd's service notification protocol (sd_notify(3)) without
// libsystemd: each notification is one datagram of newline-separated KEY=value assignments, sent
// to the AF_UNIX socket named by $NOTIFY_SOCKET (a path, or an abstract name after "@").
package sdnotify

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Assignments a service sends (see sd_notify(3)).
const (
	Ready    = "READY=1"    // startup is done
	Stopping = "STOPPING=1" // the service is shutting down
	Watchdog = "WATCHDOG=1" // the service is alive: resets systemd's WatchdogSec timer
)

// Status returns the STATUS= assignment of text, the one line systemctl status shows. Line
// breaks become spaces, since a newline would start another assignment.
func Status(text string) string {
	return "STATUS=" + strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(text)
}

// Notifier sends notifications to one socket. Its methods are safe for concurrent use.
type Notifier struct {
	addr *net.UnixAddr
}

// FromEnv returns the Notifier of $NOTIFY_SOCKET read through getenv (os.Getenv), or nil when it
// is unset: the process was not started by systemd with Type=notify.
func FromEnv(getenv func(string) string) *Notifier {
	path := getenv("NOTIFY_SOCKET")
	if path == "" {
		return nil
	}
	// Go's net package maps a leading "@" to the abstract namespace's NUL byte.
	return &Notifier{addr: &net.UnixAddr{Name: path, Net: "unixgram"}}
}

// Send sends the assignments as one datagram. It does not block on the receiver: a full socket
// buffer is an error.
func (n *Notifier) Send(assignments ...string) error {
	if len(assignments) == 0 {
		return errors.New("sdnotify: nothing to send")
	}
	c, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return fmt.Errorf("sdnotify: %w", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(strings.Join(assignments, "\n"))); err != nil {
		return fmt.Errorf("sdnotify: %w", err)
	}
	return nil
}

// WatchdogInterval returns systemd's watchdog timeout for process pid, $WATCHDOG_USEC read
// through getenv, or 0 when there is none: unset, or $WATCHDOG_PID names another process. The
// service must send Watchdog more often than that; sd_watchdog_enabled(3) advises half of it.
func WatchdogInterval(getenv func(string) string, pid int) (time.Duration, error) {
	usec := getenv("WATCHDOG_USEC")
	if usec == "" {
		return 0, nil
	}
	if p := getenv("WATCHDOG_PID"); p != "" && p != strconv.Itoa(pid) {
		return 0, nil
	}
	n, err := strconv.ParseUint(usec, 10, 63)
	if err != nil || n == 0 || n > uint64(time.Duration(1<<63-1)/time.Microsecond) {
		return 0, fmt.Errorf("sdnotify: WATCHDOG_USEC=%q is not a positive count of microseconds", usec)
	}
	return time.Duration(n) * time.Microsecond, nil
}
