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
	"strconv"
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
