package cli

import (
	"context"
	"crypto/tls"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/spf13/pflag"

	"github.com/vplayer/vplayer/internal/tlsconfig"
)

// tlsFlags are one connection's --<side>-tls-* flags.
type tlsFlags struct {
	side                string // "source" or "target"
	mode, ca, cert, key string
	resolved            tlsconfig.Mode // the mode in force, once configured
}

// register adds the --<side>-tls-* flags to fs.
func (t *tlsFlags) register(fs *pflag.FlagSet, side string) {
	t.side = side
	fs.StringVar(&t.mode, t.side+"-tls-mode", string(tlsconfig.Preferred), "TLS to the "+t.side+": disabled, preferred (TLS when offered, unverified), required (unverified), verify-ca or verify-identity; with --"+t.side+"-tls-ca alone, verify-ca")
	fs.StringVar(&t.ca, t.side+"-tls-ca", "", "PEM file of the CA certificates the "+t.side+"'s certificate must chain to (verify-ca, verify-identity; default: the system's)")
	fs.StringVar(&t.cert, t.side+"-tls-cert", "", "PEM client certificate presented to the "+t.side+" (with --"+t.side+"-tls-key)")
	fs.StringVar(&t.key, t.side+"-tls-key", "", "PEM private key of --"+t.side+"-tls-cert")
}

// settings resolves the mode: the flag when given; else the DSN's tls parameter, when it has one;
// else verify-ca when a CA file is given, else preferred.
func (t *tlsFlags) settings(fs *pflag.FlagSet, e *endpoint) (tlsconfig.Settings, error) {
	s := tlsconfig.Settings{Flag: t.side, CA: t.ca, Cert: t.cert, Key: t.key}
	modeFlag := t.side + "-tls-mode"
	switch {
	case fs.Changed(modeFlag) && e.dsnTLS != "":
		return s, usagef("--%s has tls=%s and --%s is set: choose one (prefer --%s)", t.side, e.dsnTLS, modeFlag, modeFlag)
	case fs.Changed(modeFlag):
		m, err := tlsconfig.ParseMode(t.mode)
		if err != nil {
			return s, usagef("--%s: %v", modeFlag, err)
		}
		s.Mode = m
	case e.dsnTLS != "":
		m, ok := dsnTLSModes[strings.ToLower(e.dsnTLS)]
		if !ok {
			return s, usagef("--%s has tls=%s: want true, false, skip-verify or preferred, or use --%s", t.side, e.dsnTLS, modeFlag)
		}
		s.Mode = m
	case t.ca != "":
		s.Mode = tlsconfig.VerifyCA
	default:
		s.Mode = tlsconfig.Preferred
	}
	return s, nil
}

// dsnTLSModes maps the go-sql-driver DSN's tls values to modes.
var dsnTLSModes = map[string]tlsconfig.Mode{
	"false":       tlsconfig.Disabled,
	"preferred":   tlsconfig.Preferred,
	"skip-verify": tlsconfig.Required,
	"true":        tlsconfig.VerifyIdentity,
}

// configureBothTLS sets up the TLS of the source and target connections from their flags, reading
// the files: an error names the flag (exit code 2, before any connection).
func configureBothTLS(fs *pflag.FlagSet, srcTLS, tgtTLS *tlsFlags, src, tgt *endpoint) error {
	for _, side := range []struct {
		flags *tlsFlags
		e     *endpoint
	}{{srcTLS, src}, {tgtTLS, tgt}} {
		st, err := side.flags.settings(fs, side.e)
		if err != nil {
			return err
		}
		if err := side.e.configureTLS(st); err != nil {
			return err
		}
		side.flags.resolved = st.Mode
	}
	return nil
}

// configureTLS sets up the endpoint's SQL driver for the settings, reading the files: an error
// names the flag and the file (exit code 2, before any connection). binlogTLS then gives the
// binlog connection's configuration.
func (e *endpoint) configureTLS(s tlsconfig.Settings) error {
	cfg, err := s.Config(e.host)
	if err != nil {
		return usagef("%v", err)
	}
	e.tlsMode, e.tls = s.Mode, cfg
	e.cfg.TLS, e.cfg.TLSConfig, e.cfg.AllowFallbackToPlaintext = cfg, "", false
	if s.Mode == tlsconfig.Preferred {
		e.cfg.AllowFallbackToPlaintext = true
		// The driver falls back by clearing its configuration's TLS in place: with a hook set it
		// works on a copy per connection, so that concurrent connections do not race on it.
		if err := e.cfg.Apply(mysql.BeforeConnect(func(context.Context, *mysql.Config) error { return nil })); err != nil {
			return err
		}
	}
	return nil
}

// binlogTLS returns the TLS configuration of the binlog connection: the SQL pool's, except that
// with preferred it is used only when the pool's connection is encrypted (the binlog client has
// no fallback of its own).
func (e *endpoint) binlogTLS(ctx context.Context, pool *sql.DB, log *slog.Logger) (*tls.Config, error) {
	cfg := cloneTLS(e.tls)
	if cfg != nil && e.tlsMode == tlsconfig.Preferred {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var name, cipher string
		if err := pool.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&name, &cipher); err != nil {
			return nil, fmt.Errorf("source: read whether its connection is encrypted (Ssl_cipher): %w", err)
		}
		if cipher == "" {
			cfg = nil // the server offers no TLS
		}
	}
	log.Info("source connections", "tls_mode", e.tlsMode, "binlog_tls", cfg != nil)
	return cfg, nil
}

func cloneTLS(c *tls.Config) *tls.Config {
	if c == nil {
		return nil
	}
	return c.Clone()
}
