package mysqld

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// EnvBinary names the environment variable that, when set, is the path of the server binary
// (mariadbd or mysqld) that Find returns.
const EnvBinary = "VPLAYER_MYSQLD"

// ErrNotFound is returned (wrapped) by Find when no server binary is installed and EnvBinary is
// unset. A set but unusable EnvBinary is a different error: the caller asked for that binary.
var ErrNotFound = errors.New("no mariadbd or mysqld found")

// Flavors returned by Server.Flavor.
const (
	FlavorMariaDB = "mariadb"
	FlavorMySQL   = "mysql"
)

// sbinDirs are searched after PATH: Debian's PATH for non-root users lacks them.
var sbinDirs = []string{"/usr/sbin", "/usr/local/sbin"}

// Find returns the path of the server binary: $VPLAYER_MYSQLD if set, else mariadbd, then mysqld,
// each looked up on PATH and then in /usr/sbin and /usr/local/sbin. When nothing is found the
// error wraps ErrNotFound and says what to install.
func Find() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if err := isExecutable(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvBinary, p, err)
		}
		return p, nil
	}
	for _, name := range []string{"mariadbd", "mysqld"} {
		if p, err := lookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w on PATH, /usr/sbin or /usr/local/sbin: "+
		"install one (apt-get install mariadb-server) or set %s to its path", ErrNotFound, EnvBinary)
}

// lookPath finds name on PATH, then in sbinDirs.
func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range sbinDirs {
		p := filepath.Join(dir, name)
		if isExecutable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}

func isExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s: not an executable file", p)
	}
	return nil
}

// detectFlavor runs `binary --version` and reports FlavorMariaDB or FlavorMySQL, and the
// version from the first line ("10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64").
func detectFlavor(ctx context.Context, binary string) (flavor, version string, err error) {
	out, err := exec.CommandContext(ctx, binary, "--no-defaults", "--version").CombinedOutput()
	if err != nil {
		return "", "", fmt.Errorf("%s --version: %w: %s", binary, err, strings.TrimSpace(string(out)))
	}
	version, _, _ = strings.Cut(strings.TrimSpace(string(out)), "\n")
	if _, v, ok := strings.Cut(version, " Ver "); ok {
		version = strings.TrimSpace(v)
	}
	if strings.Contains(strings.ToLower(version), "mariadb") {
		return FlavorMariaDB, version, nil
	}
	return FlavorMySQL, version, nil
}

// findInstallDB finds mariadb-install-db for a MariaDB server binary. It looks beside the binary
// (bin, sbin, scripts of the same installation) before PATH, so that a binary named by
// VPLAYER_MYSQLD is initialised by its own script. It also returns the installation's base
// directory when that is not the system one (/usr), to pass as --basedir.
func findInstallDB(binary string) (script, basedir string, err error) {
	real, err := filepath.EvalSymlinks(binary)
	if err != nil {
		return "", "", err
	}
	base := filepath.Dir(filepath.Dir(real))
	names := []string{"mariadb-install-db", "mysql_install_db"}
	for _, dir := range []string{"bin", "scripts", "sbin"} {
		for _, name := range names {
			p := filepath.Join(base, dir, name)
			if isExecutable(p) == nil {
				if base == "/usr" {
					base = ""
				}
				return p, base, nil
			}
		}
	}
	for _, name := range names {
		if p, err := lookPath(name); err == nil {
			return p, "", nil
		}
	}
	return "", "", fmt.Errorf("mariadb-install-db not found beside %s or on PATH", binary)
}
