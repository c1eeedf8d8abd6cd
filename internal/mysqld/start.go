package mysqld

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// portAttempts is how many free ports Start tries: another process may take the port between
// the probe and the server's bind.
const portAttempts = 3

// errAccessDenied is the server's ER_ACCESS_DENIED_ERROR.
const errAccessDenied = 1045

// errPortInUse marks a start that failed because the port was taken.
var errPortInUse = errors.New("port in use")

// Start initialises a new data directory and starts a server on it. It returns once the server
// accepts connections as root over TCP, within StartTimeout or ctx, whichever ends first. On
// error nothing is left running and the temporary directory is removed.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	name := opts.Name
	if name == "" {
		name = "server"
	}
	binary, err := Find()
	if err != nil {
		return nil, err
	}
	flavor, version, err := detectFlavor(ctx, binary)
	if err != nil {
		return nil, err
	}
	sweepStale()
	root, err := os.MkdirTemp(tempBase(), tempPrefix+name+"-")
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	s := &Server{name: name, flavor: flavor, version: version, dir: newLayout(root)}
	if err := s.start(ctx, binary, opts); err != nil {
		if rmErr := os.RemoveAll(root); rmErr != nil {
			err = errors.Join(err, rmErr)
		}
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return s, nil
}

func (s *Server) start(ctx context.Context, binary string, opts Options) error {
	l := s.dir
	if err := os.WriteFile(l.owner, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.Mkdir(l.tmp, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(l.initFile, []byte(strings.Join(initStatements, ";\n")+";\n"), 0o644); err != nil {
		return err
	}
	if err := s.initialise(ctx, binary, opts); err != nil {
		return err
	}
	var err error
	for range portAttempts {
		if err = s.launch(ctx, binary, opts); !errors.Is(err, errPortInUse) {
			return err
		}
	}
	return err
}

// initialise creates the system tables in the data directory.
func (s *Server) initialise(ctx context.Context, binary string, opts Options) error {
	var installDB, basedir string
	if s.flavor == FlavorMariaDB {
		var err error
		if installDB, basedir, err = findInstallDB(binary); err != nil {
			return err
		}
	}
	prog, args := initArgs(s.flavor, binary, installDB, basedir, opts, s.dir)
	out, err := os.OpenFile(s.dir.install, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Stdout, cmd.Stderr = out, out
	// The install script runs mariadbd --bootstrap as its child: on cancellation kill both.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("initialise data directory: %w; %s output:\n%s", err, filepath.Base(prog), errorLines(s.dir.install, 10))
	}
	return nil
}

// launch starts the server process on a fresh free port and waits until it accepts
// connections. It returns an error wrapping errPortInUse when the port was taken meanwhile.
func (s *Server) launch(ctx context.Context, binary string, opts Options) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	// A retry starts a new error log so that the tail shown on failure is this attempt's.
	if err := os.Remove(s.dir.errorLog); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	s.binary, s.args = binary, serverArgs(s.flavor, opts, s.dir, port)
	proc, err := startProcess(binary, s.args, nil, s.dir.errorLog)
	if err != nil {
		return err
	}
	s.port, s.proc = port, proc
	if err := s.waitReady(ctx); err != nil {
		proc.kill()
		return err
	}
	if err := s.ensureRoot(ctx); err != nil {
		proc.kill()
		return err
	}
	return nil
}

// waitReady polls until the server answers a ping as root, the process exits, or ctx ends.
func (s *Server) waitReady(ctx context.Context) error {
	db, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		return err
	}
	defer db.Close()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		if s.proc.poll() {
			log := tail(s.dir.errorLog, 30)
			err := fmt.Errorf("server exited during startup (%v); error log ends:\n%s",
				s.proc.exitErr(), log)
			if strings.Contains(strings.ToLower(log), "address already in use") { // MariaDB capitalises it, Dolt not
				err = fmt.Errorf("%w: %w", errPortInUse, err)
			}
			return err
		}
		lastErr = s.ping(ctx, db)
		var myErr *mysql.MySQLError
		switch {
		case lastErr == nil:
			return nil
		case errors.As(lastErr, &myErr) && myErr.Number == errAccessDenied:
			return fmt.Errorf("server up but refuses root: %w", lastErr)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("server not ready: %w (last error: %v); error log ends:\n%s",
				ctx.Err(), lastErr, tail(s.dir.errorLog, 30))
		case <-tick.C:
		}
	}
}

// ping dials first so that the driver does not log every refused connection while the server
// starts.
func (s *Server) ping(ctx context.Context, db *sql.DB) error {
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "tcp", s.Addr())
	if err != nil {
		return err
	}
	c.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

// ensureRoot re-asserts over TCP what the init file did: root with an empty password has every
// privilege from any host. Statements are kept out of the binary log.
func (s *Server) ensureRoot(ctx context.Context) error {
	if err := s.exec(ctx, initStatements...); err != nil {
		return fmt.Errorf("ensure root account: %w", err)
	}
	return nil
}

// errorLines returns up to n lines of the file at path that mention an error, or its tail when
// none does: the install scripts end their output with a long generic help text.
func errorLines(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	var found []string
	for line := range strings.Lines(string(b)) {
		if strings.Contains(line, "ERROR") || strings.Contains(line, "[Error]") {
			found = append(found, strings.TrimRight(line, "\n"))
		}
	}
	if len(found) == 0 {
		return tail(path, n)
	}
	return strings.Join(found[max(0, len(found)-n):], "\n")
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
