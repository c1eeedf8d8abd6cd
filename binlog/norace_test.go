//go:build !race

package binlog

// raceEnabled says the test binary runs under the race detector.
const raceEnabled = false
