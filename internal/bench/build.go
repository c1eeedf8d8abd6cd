package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// vplayerPackage is the product binary's main package, which BuildVplayer builds.
const vplayerPackage = "github.com/vplayer/vplayer/cmd/vplayer"

// BuildVplayer builds the vplayer binary from the module the working directory is in, as
// `go build` would there, into dir and returns its path. The go command is $GO when set (the
// Makefile's), else go on the PATH. It fails, saying so, outside vplayer's module.
func BuildVplayer(ctx context.Context, dir string) (string, error) {
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	out := filepath.Join(dir, "vplayer")
	cmd := exec.CommandContext(ctx, goCmd, "build", "-o", out, vplayerPackage)
	var msg bytes.Buffer
	cmd.Stdout, cmd.Stderr = &msg, &msg
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build vplayer (%s build %s, in vplayer's module; or give --vplayer): %w: %s",
			goCmd, vplayerPackage, err, strings.TrimSpace(msg.String()))
	}
	return out, nil
}
