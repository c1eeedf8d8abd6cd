package mysqld

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Options configures one server started by Start.
type Options struct {
	// Name labels the server in its temporary directory name and in errors ("source",
	// "target"). Optional; at most maxNameLen letters, digits, '-' and '_' (it is part of the
	// unix socket path, which is limited to 107 bytes).
	Name string
	// ServerID is the server's server_id. Zero means 1. Servers that replicate from one
	// another, and binlog readers, need distinct ids.
	ServerID uint32
	// Binlog makes the server a replication source: log_bin on, binlog_format=ROW,
	// binlog_row_image=FULL, binlog_row_metadata=FULL, log_slave_updates on (and on MySQL
	// gtid_mode=ON with enforce_gtid_consistency=ON). Without it the binary log is off.
	Binlog bool
	// ExtraArgs are appended to the server's command line after vplayer's own options, so
	// they override them ("--innodb-buffer-pool-size=256M").
	ExtraArgs []string
	// Durable sets innodb_flush_log_at_trx_commit=1 and sync_binlog=1, as in production (for
	// benchmarks). The default, for tests, is 2 and 0: a crash of the host may lose the last
	// second of commits, a crash of the server loses nothing.
	Durable bool
	// LogFileSize is innodb_log_file_size, at initialisation and at every start ("96M", the
	// MariaDB default). Empty means 48M: small and quick to create, for tests.
	LogFileSize string
}

// maxNameLen bounds Options.Name.
const maxNameLen = 16

func (o Options) validate() error {
	if len(o.Name) > maxNameLen {
		return fmt.Errorf("options: name %q longer than %d bytes", o.Name, maxNameLen)
	}
	for _, r := range o.Name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("options: name %q: only letters, digits, '-' and '_' allowed", o.Name)
		}
	}
	for _, a := range o.ExtraArgs {
		if !strings.HasPrefix(a, "--") {
			return fmt.Errorf("options: extra argument %q: want --name=value", a)
		}
	}
	return nil
}

func (o Options) serverID() uint32 {
	if o.ServerID == 0 {
		return 1
	}
	return o.ServerID
}

// Sizes shared by initialisation and the running server, so that InnoDB does not resize its
// redo log at the first start (logFileSize: unless Options.LogFileSize says otherwise).
const (
	bufferPoolSize = "32M"
	logFileSize    = "48M"
)

func (o Options) logFileSize() string {
	if o.LogFileSize == "" {
		return logFileSize
	}
	return o.LogFileSize
}

// layout is the set of paths inside a server's temporary directory.
type layout struct {
	root     string // the os.MkdirTemp directory; removed by Stop
	data     string // datadir
	errorLog string // --log-error, also the process's stdout and stderr
	socket   string
	pidFile  string
	initFile string // SQL run by the server at start, before it accepts connections
	owner    string // "<pid of the harness process>\n", read by sweepStale
	install  string // output of the initialisation
	tmp      string // --tmpdir: concurrent bootstraps sharing /tmp collide on temporary tables
}

func newLayout(root string) layout {
	return layout{
		root:     root,
		data:     filepath.Join(root, "data"),
		errorLog: filepath.Join(root, "error.log"),
		socket:   filepath.Join(root, "mysqld.sock"),
		pidFile:  filepath.Join(root, "mysqld.pid"),
		initFile: filepath.Join(root, "init.sql"),
		owner:    filepath.Join(root, "owner"),
		install:  filepath.Join(root, "install.log"),
		tmp:      filepath.Join(root, "tmp"),
	}
}

// userArgs returns --user=root when running as root: mariadbd and mysqld refuse to run as root
// without it, and warn when given it as anyone else.
func userArgs() []string {
	if os.Geteuid() == 0 {
		return []string{"--user=root"}
	}
	return nil
}

// initArgs returns the command line that initialises l.data, for the server binary of the given
// flavor (installDB and basedir apply to MariaDB only).
func initArgs(flavor, binary, installDB, basedir string, o Options, l layout) (string, []string) {
	common := []string{
		"--tmpdir=" + l.tmp,
		"--innodb-buffer-pool-size=" + bufferPoolSize,
		"--innodb-log-file-size=" + o.logFileSize(),
	}
	if flavor == FlavorMySQL {
		args := []string{"--no-defaults", "--initialize-insecure", "--datadir=" + l.data,
			"--log-error=" + l.install}
		args = append(args, userArgs()...)
		return binary, append(args, common...)
	}
	args := []string{"--no-defaults", "--datadir=" + l.data,
		"--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve"}
	if basedir != "" {
		args = append(args, "--basedir="+basedir)
	}
	args = append(args, userArgs()...)
	return installDB, append(args, common...)
}

// serverArgs returns the server's command line; --no-defaults comes first so that no option
// file (/etc/mysql/my.cnf) is read.
func serverArgs(flavor string, o Options, l layout, port int) []string {
	args := []string{
		"--no-defaults",
		"--datadir=" + l.data,
		"--port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1",
		"--socket=" + l.socket,
		"--pid-file=" + l.pidFile,
		"--log-error=" + l.errorLog,
		"--init-file=" + l.initFile,
		"--tmpdir=" + l.tmp,
		"--server-id=" + strconv.FormatUint(uint64(o.serverID()), 10),
		"--skip-name-resolve",
		"--performance-schema=OFF",
		"--innodb-buffer-pool-size=" + bufferPoolSize,
		"--innodb-log-file-size=" + o.logFileSize(),
		"--max-connections=200",
		"--max-allowed-packet=64M",
		"--character-set-server=utf8mb4",
	}
	args = append(args, userArgs()...)
	if o.Durable {
		args = append(args, "--innodb-flush-log-at-trx-commit=1", "--sync-binlog=1")
	} else {
		args = append(args, "--innodb-flush-log-at-trx-commit=2", "--sync-binlog=0")
	}
	switch flavor {
	case FlavorMySQL:
		// The X plugin listens on 33060 by default: two servers would collide.
		args = append(args, "--mysqlx=OFF")
		if o.Binlog {
			args = append(args, "--log-bin=binlog", "--gtid-mode=ON", "--enforce-gtid-consistency=ON")
		} else {
			args = append(args, "--skip-log-bin") // MySQL 8 logs by default
		}
	default:
		if o.Binlog {
			args = append(args, "--log-bin=binlog", "--log-slave-updates")
		}
		args = append(args, "--relay-log=relay-bin") // stable name when used as a replica
	}
	if o.Binlog {
		args = append(args,
			"--binlog-format=ROW",
			"--binlog-row-image=FULL",
			"--binlog-row-metadata=FULL",
		)
	}
	return append(args, o.ExtraArgs...)
}

// initStatements are run by the server at every start (--init-file), with binary logging off
// for the session so that a source's binlog starts empty, and again over TCP once it is up. They
// give root with an empty password every privilege from 127.0.0.1 and from any host: MySQL's
// --initialize-insecure creates root@localhost only, and with skip-name-resolve a TCP client on
// 127.0.0.1 never matches localhost.
var initStatements = []string{
	"SET SESSION sql_log_bin = 0",
	"CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'",
	"GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION",
	"CREATE USER IF NOT EXISTS 'root'@'%'",
	"GRANT ALL PRIVILEGES ON *.* TO 'root'@'%' WITH GRANT OPTION",
}
