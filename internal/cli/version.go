package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/vplayer/vplayer/metrics"
)

// buildInfo is what the binary knows of its own build: the labels of vplayer_build_info, and
// what `vplayer version` adds to them.
type buildInfo struct {
	metrics.Build
	// Time is the commit time of Revision (RFC 3339), "" when unknown.
	Time string
	// Modified says the working tree had changes the revision does not hold.
	Modified bool
}

// unknown stands for a part of the build that the binary does not record.
const unknown = "unknown"

// readBuild returns the running binary's build, from runtime/debug.ReadBuildInfo.
func readBuild() buildInfo {
	info, ok := debug.ReadBuildInfo()
	return buildOf(info, ok)
}

// buildOf returns the build info holds; ok false (a binary built without module support) gives
// unknown parts but the running Go version.
func buildOf(info *debug.BuildInfo, ok bool) buildInfo {
	b := buildInfo{Build: metrics.Build{Version: unknown, Revision: unknown, GoVersion: runtime.Version()}}
	if !ok || info == nil {
		return b
	}
	if info.Main.Version != "" {
		b.Version = info.Main.Version
	}
	if info.GoVersion != "" {
		b.GoVersion = info.GoVersion
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the version line: version, revision with its time and whether the tree was
// modified, Go version and platform.
func (b buildInfo) String() string {
	rev := b.Revision
	if b.Time != "" {
		rev += ", " + b.Time
	}
	if b.Modified {
		rev += ", modified"
	}
	return fmt.Sprintf("vplayer %s (revision %s) %s %s/%s", b.Version, rev, b.GoVersion, runtime.GOOS, runtime.GOARCH)
}

// versionCmd prints the version line: `vplayer version` and `vplayer --version`.
func versionCmd(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return usagef("vplayer version takes no arguments, got %q", args)
	}
	fmt.Fprintln(stdout, readBuild())
	return nil
}
