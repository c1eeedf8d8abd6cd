package bench

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat: Linux reports them in USER_HZ, 100
// per second on every architecture Go supports.
const userHZ = 100

// cpuTime returns the user plus system CPU time process pid has used so far.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

// parseStatCPU reads utime and stime (fields 14 and 15) from a /proc/<pid>/stat line. The
// command name, field 2, is in parentheses and may hold spaces: fields are counted after it.
func parseStatCPU(stat []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat %q", stat)
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state): utime is field 14, f[11]; stime f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc stat %q", stat)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// serverPID returns the process id of the server behind db, from its pid file.
func serverPID(ctx context.Context, db *sql.DB) (int, error) {
	var path string
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.pid_file").Scan(&path); err != nil {
		return 0, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// cpuMeter measures the CPU time processes use between start and stop.
type cpuMeter struct {
	pids  []int
	start []time.Duration
}

func startCPU(pids ...int) *cpuMeter {
	m := &cpuMeter{pids: pids, start: make([]time.Duration, len(pids))}
	for i, p := range pids {
		m.start[i], _ = cpuTime(p)
	}
	return m
}

// stop returns the CPU seconds each process used since start, in the order given; a process
// that cannot be read counts 0.
func (m *cpuMeter) stop() []float64 {
	out := make([]float64, len(m.pids))
	for i, p := range m.pids {
		if t, err := cpuTime(p); err == nil {
			out[i] = round((t - m.start[i]).Seconds(), 2)
		}
	}
	return out
}
