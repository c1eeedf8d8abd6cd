package mysqld

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The pinned Dolt: the module path and pseudo-version that `go install` builds (the module's
// release tags are not served under its /go path, this pseudo-version is), and the version the
// binary then reports.
const (
	DoltModule        = "github.com/dolthub/dolt/go/cmd/dolt"
	DoltModuleVersion = "v0.40.5-0.20260424001550-011a27ff4303"
	DoltVersion       = "1.86.4"
)

// EnvDolt names the environment variable that, when set, is the path of the dolt binary that
// FindDolt returns (it must be DoltVersion).
const EnvDolt = "VPLAYER_DOLT"

// ErrDoltNotFound is returned (wrapped) by EnsureDolt when no dolt of DoltVersion is installed and
// none can be built (no go toolchain).
var ErrDoltNotFound = errors.New("no dolt " + DoltVersion + " found")

// DoltCacheDir returns where BuildDolt installs dolt: <user cache dir>/vplayer/dolt-<version>.
func DoltCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("dolt cache directory: %w", err)
	}
	return filepath.Join(d, "vplayer", "dolt-"+DoltVersion), nil
}

// FindDolt returns the path of a dolt binary of DoltVersion: $VPLAYER_DOLT if set, else the
// first of dolt on PATH, in $GOBIN, in $GOPATH/bin (or ~/go/bin) and in DoltCacheDir that
// reports DoltVersion. A binary of another version is passed over.
func FindDolt(ctx context.Context) (string, error) {
	if p := os.Getenv(EnvDolt); p != "" {
		if err := isExecutable(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvDolt, p, err)
		}
		if v, err := doltVersion(ctx, p); err != nil || v != DoltVersion {
			return "", fmt.Errorf("%s=%s: version %q (%v), want %s", EnvDolt, p, v, err, DoltVersion)
		}
		return p, nil
	}
	var seen []string
	for _, p := range doltCandidates() {
		if isExecutable(p) != nil {
			continue
		}
		v, err := doltVersion(ctx, p)
		if err == nil && v == DoltVersion {
			return p, nil
		}
		seen = append(seen, fmt.Sprintf("%s is %q", p, v))
	}
	msg := "on PATH, $GOBIN, $GOPATH/bin or the cache"
	if len(seen) > 0 {
		msg += " (" + strings.Join(seen, ", ") + ")"
	}
	return "", fmt.Errorf("%w %s: run scripts/ensure-dolt.sh or set %s", ErrDoltNotFound, msg, EnvDolt)
}

func doltCandidates() []string {
	var out []string
	if p, err := exec.LookPath("dolt"); err == nil {
		out = append(out, p)
	}
	if gobin := os.Getenv("GOBIN"); gobin != "" {
		out = append(out, filepath.Join(gobin, "dolt"))
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if home, err := os.UserHomeDir(); err == nil {
			gopath = filepath.Join(home, "go")
		}
	}
	for _, d := range filepath.SplitList(gopath) {
		out = append(out, filepath.Join(d, "bin", "dolt"))
	}
	if d, err := DoltCacheDir(); err == nil {
		out = append(out, filepath.Join(d, "dolt"))
	}
	return out
}

// doltVersion runs `dolt version` and returns the version it prints ("dolt version 1.86.4").
// It runs with a throw-away DOLT_ROOT_PATH so that it writes nothing in the user's home.
func doltVersion(ctx context.Context, binary string) (string, error) {
	root, err := os.MkdirTemp("", "vplayer-dolt-version-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(root)
	if err := writeDoltGlobalConfig(root); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, binary, "version")
	cmd.Env = append(os.Environ(), doltEnv(root)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s version: %w: %s", binary, err, bytes.TrimSpace(out))
	}
	for line := range strings.Lines(string(out)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "dolt version "); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("%s version printed no version: %s", binary, bytes.TrimSpace(out))
}

// BuildDolt builds the pinned dolt into DoltCacheDir with `go install` (cgo; about 5 minutes on
// 2 cores) and returns its path. The go command's output goes to log. Without a go toolchain the
// error wraps ErrDoltNotFound.
func BuildDolt(ctx context.Context, log io.Writer) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		if isExecutable("/usr/local/go/bin/go") != nil {
			return "", fmt.Errorf("%w, and no go toolchain to build it: install Go or set %s", ErrDoltNotFound, EnvDolt)
		}
		goBin = "/usr/local/go/bin/go"
	}
	dir, err := DoltCacheDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("build dolt: %w", err)
	}
	cmd := exec.CommandContext(ctx, goBin, "install", DoltModule+"@"+DoltModuleVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "CGO_ENABLED=1")
	cmd.Dir = dir // outside any module, so that the install is of the pinned version alone
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build dolt (go install %s@%s): %w", DoltModule, DoltModuleVersion, err)
	}
	p := filepath.Join(dir, "dolt")
	if v, err := doltVersion(ctx, p); err != nil || v != DoltVersion {
		return "", fmt.Errorf("built %s reports version %q (%v), want %s", p, v, err, DoltVersion)
	}
	return p, nil
}

// EnsureDolt returns FindDolt's binary, building it with BuildDolt when none is found.
func EnsureDolt(ctx context.Context, log io.Writer) (string, error) {
	p, err := FindDolt(ctx)
	if err == nil || !errors.Is(err, ErrDoltNotFound) || os.Getenv(EnvDolt) != "" {
		return p, err
	}
	return BuildDolt(ctx, log)
}

// doltEnv is the environment every dolt command runs with: its global configuration under root
// (not the user's home), and no event flush: after each command dolt otherwise starts a detached
// `dolt send-metrics` (whatever metrics.disabled says), which outlives the command and writes
// under root after the caller removed it.
func doltEnv(root string) []string {
	return []string{"DOLT_ROOT_PATH=" + root, "DOLT_DISABLE_EVENT_FLUSH=1"}
}

// writeDoltGlobalConfig writes dolt's global configuration under root (DOLT_ROOT_PATH): the
// committer identity that `dolt init` needs, and usage metrics off.
func writeDoltGlobalConfig(root string) error {
	dir := filepath.Join(root, ".dolt")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cfg := `{"user.name":"vplayer tests","user.email":"vplayer@localhost","metrics.disabled":"true"}`
	return os.WriteFile(filepath.Join(dir, "config_global.json"), []byte(cfg), 0o644)
}
