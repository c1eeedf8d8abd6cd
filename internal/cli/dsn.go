package cli

import (
	"crypto/tls"
	"database/sql"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/vplayer/vplayer/internal/tlsconfig"
)

// endpoint is a parsed --source or --target DSN.
type endpoint struct {
	cfg  *mysql.Config
	host string
	port uint16
	// dsnTLS is the DSN's tls parameter, "" when it has none; tlsMode and tls are what
	// configureTLS settled (nil: plaintext).
	dsnTLS  string
	tlsMode tlsconfig.Mode
	tls     *tls.Config
}

// parseDSN parses a go-sql-driver DSN for flag, taking the password from passwordEnv when that is
// set. Errors never repeat the DSN: it may hold a password.
func parseDSN(flag, dsn, passwordEnv string) (*endpoint, error) {
	if dsn == "" {
		return nil, usagef("--%s is required: a DSN like user:pass@tcp(host:3306)/db", flag)
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		// The driver's parse errors can quote parts of the DSN, the password included.
		return nil, usagef("--%s is not a valid DSN: want user:pass@tcp(host:port)/db (a password with special characters goes in %s instead)", flag, passwordEnv)
	}
	if p, ok := os.LookupEnv(passwordEnv); ok {
		cfg.Passwd = p
	}
	if cfg.Net != "tcp" {
		return nil, usagef("--%s must use tcp(host:port), not %s: the binlog protocol needs a TCP address", flag, cfg.Net)
	}
	host, portStr, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		host, portStr = cfg.Addr, "3306"
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return nil, usagef("--%s has an invalid port %q", flag, portStr)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	return &endpoint{cfg: cfg, host: host, port: uint16(port), dsnTLS: cfg.TLSConfig}, nil
}

// pool opens a connection pool; multi-statement batches are allowed, and statements count the
// rows they matched (clientFoundRows), which the applier's --exec-mode checks read.
func (e *endpoint) pool() (*sql.DB, error) {
	c := e.cfg.Clone()
	c.MultiStatements = true
	c.ClientFoundRows = true
	c.MaxAllowedPacket = 0 // the server's max_allowed_packet, not the driver's 64 MiB default
	c.DBName = ""
	conn, err := mysql.NewConnector(c)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(conn), nil
}
