package cli

import (
	"runtime/debug"
)

// The garbage collector's settings of `vplayer run`, unless the environment sets GOGC or
// GOMEMLIMIT: collections half as often as Go's default (GOGC=100), within a soft limit well
// under the 64 MiB vplayer keeps to. The binlog decoder and the planner allocate short-lived
// values for every row; with Go's defaults, collecting them was about a third of vplayer's CPU on
// a catch-up, and this cuts the process's CPU per row change by about a fifth (docs/benchmarks.md).
const (
	runGCPercent   = 200
	runMemoryLimit = 48 << 20
)

// tuneGC applies the run's garbage collector settings where the environment leaves them to Go.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(runGCPercent)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(runMemoryLimit)
	}
}
