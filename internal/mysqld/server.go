// Package mysqld starts throw-away MariaDB or MySQL servers for tests, the demo and the
// benchmark: each in its own temporary directory, on a free loopback port, as a child process
// that dies with its parent.
//
// A server is initialised from scratch (mariadb-install-db, or mysqld --initialize-insecure) and
// accepts root with an empty password over TCP from 127.0.0.1. It reads no option file.
package mysqld

import (
	"bytes"
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
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql" // also registers the "mysql" database/sql driver
)

// Timeouts of Start and Stop.
const (
	// StartTimeout bounds initialisation plus the wait for the first connection.
	StartTimeout = 60 * time.Second
	// StopGrace is how long Stop waits after SIGTERM before SIGKILL.
	StopGrace = 10 * time.Second
)

// portAttempts is how many free ports Start tries: another process may take the port between
// the probe and the server's bind.
const portAttempts = 3

// errAccessDenied is the server's ER_ACCESS_DENIED_ERROR.
const errAccessDenied = 1045

// errPortInUse marks a start that failed because the port was taken.
var errPortInUse = errors.New("port in use")

// Server is a running server started by Start. Its methods are safe for concurrent use.
type Server struct {
	name    string
	flavor  string
	version string
	port    int
	dir     layout
	proc    *process // replaced by Restart, under procMu
	procMu  sync.Mutex
	ended   bool // Stop or Kill ran; under procMu

	// binary, args and env started proc; Restart starts them again.
	binary string
	args   []string
	env    []string
	// stopGrace is how long Stop waits after SIGTERM; zero means StopGrace.
	stopGrace time.Duration
	// dolt is set for a Dolt sql-server (StartDolt).
	dolt bool

	stopOnce sync.Once
	stopErr  error
}

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

// Addr returns the server's TCP address, "127.0.0.1:PORT".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Port returns the server's TCP port on 127.0.0.1.
func (s *Server) Port() int { return s.port }

// DSN returns a go-sql-driver/mysql data source name for root (no password) on database db;
// db may be empty.
func (s *Server) DSN(db string) string {
	return "root@tcp(" + s.Addr() + ")/" + db + "?parseTime=false"
}

// DB opens a connection pool on database db (see DSN). The caller closes it.
func (s *Server) DB(db string) (*sql.DB, error) {
	return sql.Open("mysql", s.DSN(db))
}

// Pool opens a connection pool on database db (may be empty) with multi-statement batches
// allowed and rows matched counted (clientFoundRows), as vplayer opens its own pools. The caller
// closes it.
func (s *Server) Pool(db string) (*sql.DB, error) {
	cfg, err := mysql.ParseDSN(s.DSN(db))
	if err != nil {
		return nil, err
	}
	cfg.MultiStatements = true
	cfg.ClientFoundRows = true
	cfg.MaxAllowedPacket = 0
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

// Flavor returns FlavorMariaDB or FlavorMySQL, from the binary's --version.
func (s *Server) Flavor() string { return s.flavor }

// Version returns the binary's version, as --version prints it after "Ver".
func (s *Server) Version() string { return s.version }

// Name returns Options.Name, or "server" when it was empty.
func (s *Server) Name() string { return s.name }

// DataDir returns the server's data directory, inside the temporary directory Stop removes.
func (s *Server) DataDir() string { return s.dir.data }

// ErrorLog returns the path of the server's error log (also its stdout and stderr).
func (s *Server) ErrorLog() string { return s.dir.errorLog }

// Stop shuts the server down with SIGTERM, sends SIGKILL if it has not exited after StopGrace,
// and removes its temporary directory. Calls after the first (or after Kill) return the first
// result. The error reports a forced kill, a failed exit or a failed removal; the server is gone
// either way.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.procMu.Lock()
		defer s.procMu.Unlock()
		s.ended = true
		err := s.proc.stop(s.grace())
		if err != nil {
			err = fmt.Errorf("stop %s: %w; error log ends:\n%s", s.name, err, tail(s.dir.errorLog, 20))
		}
		if rmErr := os.RemoveAll(s.dir.root); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("stop %s: %w", s.name, rmErr))
		}
		s.stopErr = err
	})
	return s.stopErr
}

// Kill stops the server with SIGKILL, as a crash would, and removes its temporary directory.
// It does nothing after Stop or Kill.
func (s *Server) Kill() {
	s.stopOnce.Do(func() {
		s.procMu.Lock()
		defer s.procMu.Unlock()
		s.ended = true
		s.proc.kill()
		s.stopErr = os.RemoveAll(s.dir.root)
	})
}

// Signal sends sig to the server's process, as kill(1) would: SIGSTOP freezes it (its port
// still accepts connections, which then get no answer), SIGCONT resumes it. It fails for a signal
// that is not a syscall.Signal and after Stop or Kill.
func (s *Server) Signal(sig os.Signal) error {
	ss, ok := sig.(syscall.Signal)
	if !ok {
		return fmt.Errorf("signal %s: %v is not a system signal", s.name, sig)
	}
	s.procMu.Lock()
	defer s.procMu.Unlock()
	if s.ended {
		return fmt.Errorf("signal %s: server stopped", s.name)
	}
	s.proc.signal(ss)
	return nil
}

// tail returns the last n lines of the file at path, or a note saying why it cannot.
func tail(path string, n int) string {
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

func (s *Server) grace() time.Duration {
	if s.stopGrace > 0 {
		return s.stopGrace
	}
	return StopGrace
}

// Restart stops the server as Stop does (SIGTERM, waiting for the exit, SIGKILL after the stop
// grace) and starts it again on the same data directory and port, returning once it accepts
// connections. The old process has exited before the new one starts: two servers never share
// the directory. It fails after Stop or Kill.
func (s *Server) Restart(ctx context.Context) error {
	s.procMu.Lock()
	defer s.procMu.Unlock()
	if s.ended {
		return fmt.Errorf("restart %s: server stopped", s.name)
	}
	if err := s.proc.stop(s.grace()); err != nil {
		return fmt.Errorf("restart %s: %w", s.name, err)
	}
	proc, err := startProcess(s.binary, s.args, s.env, s.dir.errorLog)
	if err != nil {
		return fmt.Errorf("restart %s: %w", s.name, err)
	}
	s.proc = proc
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	if err := s.waitReady(ctx); err != nil {
		return fmt.Errorf("restart %s: %w", s.name, err)
	}
	return nil
}
