package mysqld

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DoltStopGrace is how long Stop and Restart wait for a Dolt sql-server to exit after SIGTERM:
// with a replica attached its shutdown takes tens of seconds.
const DoltStopGrace = 90 * time.Second

// DoltOptions configures a Dolt sql-server started by StartDolt.
type DoltOptions struct {
	// Name labels the server as Options.Name does.
	Name string
	// ServerID is the server's server_id. Zero means 1.
	ServerID uint32
}

// StartDolt starts a Dolt sql-server (the dolt binary of EnsureDolt's search, already found by
// the caller: binary) as a MySQL-flavour binlog primary: log_bin, gtid_mode=ON,
// enforce_gtid_consistency=ON and the server id persisted in a new data directory in a temporary
// directory, on a free loopback port. root with an empty password may connect from any host.
// Dolt's global configuration (DOLT_ROOT_PATH) lives in the temporary directory too. The
// server's Flavor is FlavorMySQL and its Version "dolt <version>".
func StartDolt(ctx context.Context, binary string, opts DoltOptions) (*Server, error) {
	if err := (Options{Name: opts.Name}).validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	name := opts.Name
	if name == "" {
		name = "dolt"
	}
	version, err := doltVersion(ctx, binary)
	if err != nil {
		return nil, err
	}
	sweepStale()
	root, err := os.MkdirTemp(tempBase(), tempPrefix+name+"-")
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	s := &Server{name: name, flavor: FlavorMySQL, version: "dolt " + version, dir: newLayout(root),
		binary: binary, stopGrace: DoltStopGrace, dolt: true}
	if err := s.startDolt(ctx, (Options{ServerID: opts.ServerID}).serverID()); err != nil {
		if rmErr := os.RemoveAll(root); rmErr != nil {
			err = errors.Join(err, rmErr)
		}
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return s, nil
}

// doltHome is DOLT_ROOT_PATH inside the layout: dolt's global configuration.
func (l layout) doltHome() string { return filepath.Join(l.root, "home") }

func (s *Server) startDolt(ctx context.Context, serverID uint32) error {
	l := s.dir
	if err := os.WriteFile(l.owner, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(l.data, 0o755); err != nil {
		return err
	}
	if err := writeDoltGlobalConfig(l.doltHome()); err != nil {
		return err
	}
	s.env = doltEnv(l.doltHome())
	// The data directory is itself a Dolt database, whose local configuration keeps the persisted
	// variables; log_bin takes effect only at the server's start.
	setup := []string{
		"SET @@PERSIST.log_bin = 1",
		"SET @@PERSIST.gtid_mode = 'ON'",
		"SET @@PERSIST.enforce_gtid_consistency = 'ON'",
		"SET @@PERSIST.server_id = " + strconv.FormatUint(uint64(serverID), 10),
		"CREATE USER IF NOT EXISTS 'root'@'%'",
		"GRANT ALL PRIVILEGES ON *.* TO 'root'@'%' WITH GRANT OPTION",
	}
	for _, args := range [][]string{{"init"}, {"sql", "-q", strings.Join(setup, "; ") + ";"}} {
		if err := s.doltCommand(ctx, args...); err != nil {
			return err
		}
	}
	var err error
	for range portAttempts {
		if err = s.launchDolt(ctx); !errors.Is(err, errPortInUse) {
			return err
		}
	}
	return err
}

// doltCommand runs a dolt command in the data directory, its output going to the install log.
func (s *Server) doltCommand(ctx context.Context, args ...string) error {
	out, err := os.OpenFile(s.dir.install, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.CommandContext(ctx, s.binary, args...)
	cmd.Dir = s.dir.data
	cmd.Env = append(os.Environ(), s.env...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("dolt %s: %w; output ends:\n%s", args[0], err, tail(s.dir.install, 10))
	}
	return nil
}

func (s *Server) launchDolt(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	if err := os.Remove(s.dir.errorLog); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	s.args = []string{"sql-server",
		"--host=127.0.0.1",
		"--port=" + strconv.Itoa(port),
		"--data-dir=" + s.dir.data,
		"--socket=" + s.dir.socket,
		"--loglevel=warning",
	}
	proc, err := startProcess(s.binary, s.args, s.env, s.dir.errorLog)
	if err != nil {
		return err
	}
	s.port, s.proc = port, proc
	if err := s.waitReady(ctx); err != nil {
		proc.kill()
		return err
	}
	return nil
}

// IsDolt reports whether s is a Dolt sql-server (StartDolt).
func (s *Server) IsDolt() bool { return s.dolt }
