// Package tlsconfig builds the client TLS configuration of one MySQL connection (the source or
// the target) from a mode and certificate files, as MySQL clients' --ssl-mode names them. The
// same configuration serves the SQL pool and the binlog connection.
package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
)

// Mode says whether and how a connection uses TLS.
type Mode string

// Modes, weakest first.
const (
	// Disabled: plaintext.
	Disabled Mode = "disabled"
	// Preferred: TLS when the server offers it, else plaintext; the server's certificate is not
	// checked.
	Preferred Mode = "preferred"
	// Required: TLS or fail; the server's certificate is not checked.
	Required Mode = "required"
	// VerifyCA: TLS, and the server's certificate must chain to the CA (--*-tls-ca, else the
	// system's roots); its name is not checked.
	VerifyCA Mode = "verify-ca"
	// VerifyIdentity: as VerifyCA, and the certificate must name the host the DSN dials.
	VerifyIdentity Mode = "verify-identity"
)

// Modes lists the modes, for usage text.
var Modes = []Mode{Disabled, Preferred, Required, VerifyCA, VerifyIdentity}

// ParseMode parses a mode name (case-insensitive; underscores accepted for dashes).
func ParseMode(s string) (Mode, error) {
	m := Mode(strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "_", "-"))
	for _, x := range Modes {
		if m == x {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown TLS mode %q: want disabled, preferred, required, verify-ca or verify-identity", s)
}

// Verifies reports whether m checks the server's certificate.
func (m Mode) Verifies() bool { return m == VerifyCA || m == VerifyIdentity }

// Settings are one connection's TLS flags.
type Settings struct {
	// Flag is the flag prefix errors name: "source" for --source-tls-mode, --source-tls-ca...
	Flag string
	Mode Mode
	// CA, Cert and Key are PEM file paths, each optional; Cert and Key go together.
	CA, Cert, Key string
}

func (s Settings) flag(name string) string { return "--" + s.Flag + "-tls-" + name }

// Config reads the files and returns the client configuration for host (the server name
// verify-identity checks), or nil for Disabled. Every error names the flag and the file: the
// caller reports it before connecting.
//
// The server's certificate is checked by the configuration's own VerifyConnection (with
// InsecureSkipVerify set so that neither driver applies its own rule), so that verify-ca can
// skip the name check and a failure names the CA file that did not trust it.
func (s Settings) Config(host string) (*tls.Config, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if s.Mode == Disabled {
		return nil, nil
	}
	cfg := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}
	if host != "" && !isIP(host) {
		cfg.ServerName = host // SNI only: verification is VerifyConnection's
	}
	if s.Cert != "" {
		certPEM, err := os.ReadFile(s.Cert)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", s.flag("cert"), s.Cert, unwrapPath(err))
		}
		keyPEM, err := os.ReadFile(s.Key)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", s.flag("key"), s.Key, unwrapPath(err))
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("%s %s and %s %s: %w", s.flag("cert"), s.Cert, s.flag("key"), s.Key, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if !s.Mode.Verifies() {
		return cfg, nil
	}
	var roots *x509.CertPool // nil: the system's roots
	trusted := "the system's certificate authorities (set " + s.flag("ca") + ")"
	if s.CA != "" {
		pem, err := os.ReadFile(s.CA)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", s.flag("ca"), s.CA, unwrapPath(err))
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s %s: no PEM certificate in the file", s.flag("ca"), s.CA)
		}
		trusted = s.flag("ca") + " " + s.CA
	}
	checkName := ""
	if s.Mode == VerifyIdentity {
		checkName = host
	}
	mode := s.Mode
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return fmt.Errorf("TLS %s: the server sent no certificate", mode)
		}
		opts := x509.VerifyOptions{Roots: roots, DNSName: checkName, Intermediates: x509.NewCertPool()}
		for _, c := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
		if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
			var he x509.HostnameError
			if errors.As(err, &he) {
				return fmt.Errorf("TLS %s: the server's certificate does not name %s: %w", mode, host, err)
			}
			return fmt.Errorf("TLS %s: the server's certificate is not trusted by %s: %w", mode, trusted, err)
		}
		return nil
	}
	return cfg, nil
}

// check validates the combination of mode and files.
func (s Settings) check() error {
	if (s.Cert == "") != (s.Key == "") {
		return fmt.Errorf("%s and %s go together: set both or neither", s.flag("cert"), s.flag("key"))
	}
	if s.Mode == Disabled && (s.CA != "" || s.Cert != "") {
		return fmt.Errorf("%s disabled: drop the TLS file flags, or choose another mode", s.flag("mode"))
	}
	if s.CA != "" && !s.Mode.Verifies() {
		return fmt.Errorf("%s is set but %s is %s, which does not check the server's certificate: use verify-ca or verify-identity", s.flag("ca"), s.flag("mode"), s.Mode)
	}
	return nil
}

// unwrapPath drops the *PathError's repetition of the path, which the caller names.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func isIP(host string) bool { return net.ParseIP(host) != nil }
