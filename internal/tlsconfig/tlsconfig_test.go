package tlsconfig_test

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/vplayer/vplayer/internal/tlsconfig"
	"github.com/vplayer/vplayer/internal/tlsconfig/certtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseMode(t *testing.T) {
	tests := []struct {
		in      string
		want    tlsconfig.Mode
		wantErr bool
	}{
		{"disabled", tlsconfig.Disabled, false},
		{"PREFERRED", tlsconfig.Preferred, false},
		{"required", tlsconfig.Required, false},
		{"verify_ca", tlsconfig.VerifyCA, false},
		{" verify-identity ", tlsconfig.VerifyIdentity, false},
		{"on", "", true},
		{"", "", true},
	}
	for _, tt := range tests {
		got, err := tlsconfig.ParseMode(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseMode(%q)=%q, %v, want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// server is a TLS server on 127.0.0.1 presenting files' server certificate; with clientCA it
// requires a client certificate that CA signed.
func server(t *testing.T, files certtest.Files, clientCA bool) string {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(files.ServerCert, files.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}}
	if clientCA {
		pem, err := os.ReadFile(files.CA)
		if err != nil {
			t.Fatal(err)
		}
		cfg.ClientCAs = x509.NewCertPool()
		cfg.ClientCAs.AppendCertsFromPEM(pem)
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return ln.Addr().String()
}

// handshake dials addr with cfg and returns the handshake's error.
func handshake(t *testing.T, addr string, cfg *tls.Config) error {
	t.Helper()
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := tls.Client(raw, cfg)
	defer c.Close()
	if err := c.Handshake(); err != nil {
		return err
	}
	// With TLS 1.3 a rejected client certificate surfaces at the first read.
	_, err = c.Read(make([]byte, 1))
	if err != nil && strings.Contains(err.Error(), "certificate") {
		return err
	}
	return nil
}

func TestSettings_Config(t *testing.T) {
	dir := t.TempDir()
	good, err := certtest.Write(dir, "good", "127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	other, err := certtest.Write(dir, "other", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	addr := server(t, good, false)
	mtlsAddr := server(t, good, true)

	tests := []struct {
		name     string
		s        tlsconfig.Settings
		host     string
		addr     string
		wantErr  []string // substrings of the handshake error; nil for success
		wantNone bool     // Config returns nil (plaintext)
	}{
		{name: "disabled", s: tlsconfig.Settings{Mode: tlsconfig.Disabled}, wantNone: true},
		{name: "preferred does not verify", s: tlsconfig.Settings{Mode: tlsconfig.Preferred}, host: "127.0.0.1", addr: addr},
		{name: "required does not verify", s: tlsconfig.Settings{Mode: tlsconfig.Required}, host: "db.example", addr: addr},
		{name: "verify-ca with the right CA", s: tlsconfig.Settings{Mode: tlsconfig.VerifyCA, CA: good.CA}, host: "db.example", addr: addr},
		{name: "verify-ca with a wrong CA", s: tlsconfig.Settings{Mode: tlsconfig.VerifyCA, CA: other.CA}, host: "127.0.0.1", addr: addr,
			wantErr: []string{"verify-ca", "not trusted by --source-tls-ca " + other.CA}},
		{name: "verify-ca with the system roots", s: tlsconfig.Settings{Mode: tlsconfig.VerifyCA}, host: "127.0.0.1", addr: addr,
			wantErr: []string{"system's certificate authorities", "--source-tls-ca"}},
		{name: "verify-identity by IP", s: tlsconfig.Settings{Mode: tlsconfig.VerifyIdentity, CA: good.CA}, host: "127.0.0.1", addr: addr},
		{name: "verify-identity by name", s: tlsconfig.Settings{Mode: tlsconfig.VerifyIdentity, CA: good.CA}, host: "localhost", addr: addr},
		{name: "verify-identity with another name", s: tlsconfig.Settings{Mode: tlsconfig.VerifyIdentity, CA: good.CA}, host: "db.example", addr: addr,
			wantErr: []string{"does not name db.example"}},
		{name: "client certificate", s: tlsconfig.Settings{Mode: tlsconfig.VerifyCA, CA: good.CA, Cert: good.ClientCert, Key: good.ClientKey}, host: "127.0.0.1", addr: mtlsAddr},
		{name: "no client certificate", s: tlsconfig.Settings{Mode: tlsconfig.VerifyCA, CA: good.CA}, host: "127.0.0.1", addr: mtlsAddr,
			wantErr: []string{"certificate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.s.Flag = "source"
			cfg, err := tt.s.Config(tt.host)
			if err != nil {
				t.Fatalf("Config: %v", err)
			}
			if tt.wantNone {
				if cfg != nil {
					t.Errorf("Config=%v, want nil", cfg)
				}
				return
			}
			err = handshake(t, tt.addr, cfg)
			if tt.wantErr == nil {
				if err != nil {
					t.Errorf("handshake: %v, want success", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("handshake succeeded, want an error containing %q", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("handshake error %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestSettings_Config_errors(t *testing.T) {
	dir := t.TempDir()
	files, err := certtest.Write(dir, "x", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	unreadable := filepath.Join(dir, "unreadable.pem")
	if err := os.WriteFile(unreadable, []byte("x"), 0o000); err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "notpem.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		s    tlsconfig.Settings
		want []string
	}{
		{"missing CA", tlsconfig.Settings{Mode: tlsconfig.VerifyCA, CA: missing}, []string{"--target-tls-ca " + missing, "no such file"}},
		{"CA not PEM", tlsconfig.Settings{Mode: tlsconfig.VerifyCA, CA: notPEM}, []string{"--target-tls-ca " + notPEM, "no PEM certificate"}},
		{"missing cert", tlsconfig.Settings{Mode: tlsconfig.Required, Cert: missing, Key: files.ClientKey}, []string{"--target-tls-cert " + missing}},
		{"missing key", tlsconfig.Settings{Mode: tlsconfig.Required, Cert: files.ClientCert, Key: missing}, []string{"--target-tls-key " + missing}},
		{"mismatched key", tlsconfig.Settings{Mode: tlsconfig.Required, Cert: files.ClientCert, Key: files.ServerKey}, []string{"--target-tls-cert", "--target-tls-key"}},
		{"cert without key", tlsconfig.Settings{Mode: tlsconfig.Required, Cert: files.ClientCert}, []string{"--target-tls-cert and --target-tls-key go together"}},
		{"files with disabled", tlsconfig.Settings{Mode: tlsconfig.Disabled, CA: files.CA}, []string{"--target-tls-mode disabled"}},
		{"CA with required", tlsconfig.Settings{Mode: tlsconfig.Required, CA: files.CA}, []string{"--target-tls-ca", "verify-ca or verify-identity"}},
	}
	if os.Geteuid() != 0 { // root reads any file
		tests = append(tests, struct {
			name string
			s    tlsconfig.Settings
			want []string
		}{"unreadable CA", tlsconfig.Settings{Mode: tlsconfig.VerifyCA, CA: unreadable}, []string{"--target-tls-ca " + unreadable, "permission denied"}})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.s.Flag = "target"
			_, err := tt.s.Config("127.0.0.1")
			if err == nil {
				t.Fatalf("Config succeeded, want an error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Config error %q, want it to contain %q", err, w)
				}
			}
		})
	}
}
