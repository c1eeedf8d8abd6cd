package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is one mode's outcome: what its JSON file holds and its printed table shows.
type Result struct {
	Mode  string    `json:"mode"`
	Quick bool      `json:"quick"`
	Time  time.Time `json:"time"`
	// Server is the servers' version; CPUs the machine's.
	Server   string   `json:"server"`
	CPUs     int      `json:"cpus"`
	Settings Settings `json:"settings"`
	Workload Workload `json:"workload"`
	// Appliers are vplayer first, one row per worker count (--apply-workers), then the
	// comparison build if any (--compare-vplayer; catch-up modes), then the native replicas.
	Appliers []Applier `json:"appliers"`
	// Ratios are throughputs divided, keyed "<applier>/<other applier>" (catch-up modes): each
	// vplayer row's over each native replica's, the first vplayer row's over the comparison
	// build's, and each vplayer row with N > 1 workers over the one with 1 worker.
	Ratios map[string]float64 `json:"ratios,omitempty"`
	// CompareFirst reports that the comparison build was timed before vplayer, not after it.
	CompareFirst bool `json:"compare_first,omitempty"`
}

// Settings are what the servers ran with, as they reported it.
type Settings struct {
	Source ServerSettings `json:"source"`
	// Targets are the settings of every target: vplayer's, the comparison build's and the native
	// replicas' (copy mode: every loader's), all the same.
	Targets ServerSettings `json:"targets"`
	// SourceNotDefault and TargetsNotDefault list, as name=value, what differs from MariaDB's
	// defaults (the binary log's settings only where it is on).
	SourceNotDefault  []string `json:"source_not_default"`
	TargetsNotDefault []string `json:"targets_not_default"`
	// Timing says what was timed and how.
	Timing string `json:"timing"`
}

// Workload is what the source wrote.
type Workload struct {
	Description  string `json:"description"`
	Generator    string `json:"generator"`
	Tables       int    `json:"tables"`
	RowsPerTable int    `json:"rows_per_table"`
	Transactions int64  `json:"transactions"`
	RowChanges   int64  `json:"row_changes"`
	// Rate and Seconds are the lag mode's target rate (transactions/s; 0 in the lagfull mode,
	// whose source is not paced) and the lag modes' duration per applier; Clients is how many
	// sessions wrote the source during the measurement.
	Rate    int     `json:"rate,omitempty"`
	Clients int     `json:"clients,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
}

// Applier is one applier's figures.
type Applier struct {
	Name string `json:"name"`
	// ApplyWorkers is the --apply-workers vplayer ran with; 0 for the binary's default (no flag
	// passed) and for the other appliers.
	ApplyWorkers int `json:"apply_workers,omitempty"`
	// Seconds is the catch-up time (catchup and insert modes).
	Seconds            float64 `json:"seconds,omitempty"`
	TransactionsPerSec float64 `json:"transactions_per_sec,omitempty"`
	RowsPerSec         float64 `json:"rows_per_sec,omitempty"`
	// PeakRSSBytes is vplayer's VmHWM; 0 when not measured.
	PeakRSSBytes int64 `json:"peak_rss_bytes,omitempty"`
	// ApplyRetries is vplayer's vplayer_apply_retries_total at the end of its catch-up: batches a
	// worker rolled back and ran again, each after a lock wait of up to the lock watcher's delay;
	// absent when not read (a native replica, a build that does not export it).
	ApplyRetries *int64 `json:"apply_retries,omitempty"`
	// CPU seconds used during the catch-up by the vplayer process (absent for a native replica:
	// it runs inside the target server), by the target server and by the source server.
	CPUApplierSeconds float64 `json:"cpu_applier_seconds,omitempty"`
	CPUTargetSeconds  float64 `json:"cpu_target_seconds,omitempty"`
	CPUSourceSeconds  float64 `json:"cpu_source_seconds,omitempty"`
	// Lag mode: the source's achieved rate while this applier ran, and the delay percentiles of
	// the timestamps, in milliseconds.
	SourceRate float64 `json:"source_rate,omitempty"`
	Stamps     int     `json:"stamps,omitempty"`
	LagP50Ms   float64 `json:"lag_p50_ms,omitempty"`
	LagP99Ms   float64 `json:"lag_p99_ms,omitempty"`
	LagMaxMs   float64 `json:"lag_max_ms,omitempty"`
	// SourceCommitP99Ms is the p99 of the time the stamps took to commit on the source: the part
	// of the lag that comes before any applier can see the write.
	SourceCommitP99Ms float64 `json:"source_commit_p99_ms,omitempty"`
	// TargetEqual reports that the target equalled the source at the end of the mode.
	TargetEqual bool `json:"target_equal"`
}

func (c *cluster) newResult(mode string) *Result {
	return &Result{
		Mode:     mode,
		Quick:    c.o.Quick,
		Time:     time.Now().UTC().Truncate(time.Second),
		Server:   c.source.Version(),
		CPUs:     runtime.NumCPU(),
		Settings: c.settings.withTiming(timingNote(mode)),
	}
}

func (s Settings) withTiming(t string) Settings {
	s.Timing = t
	return s
}

func timingNote(mode string) string {
	switch mode {
	case ModeLag:
		return "appliers run one at a time while the source writes at a fixed rate; a timestamp row written on the source every 100ms is read on the target every 10ms; lag = time first seen on the target - time written"
	case ModeLagFull:
		return "appliers run one at a time while the source writes as fast as its sessions can; a timestamp row written on the source every 100ms is read on the target every 10ms; lag = time first seen on the target - time written"
	}
	return "appliers catch up one at a time, never two at once; vplayer from process start until its record's pos contains the source position (polled every 10ms); native from START SLAVE until MASTER_GTID_WAIT returns"
}

// add appends a catch-up applier's figures for a backlog of st.
func (r *Result) add(a Applier, tm timing, st genStats) {
	r.Appliers = append(r.Appliers, figures(a, tm, st))
}

// figures fills a catch-up applier's figures for a backlog of st.
func figures(a Applier, tm timing, st genStats) Applier {
	s := tm.took.Seconds()
	a.Seconds = round(s, 3)
	a.CPUApplierSeconds, a.CPUTargetSeconds, a.CPUSourceSeconds = tm.applierCPU, tm.targetCPU, tm.sourceCPU
	a.ApplyRetries = tm.retries
	a.TransactionsPerSec = round(float64(st.Transactions)/s, 0)
	a.RowsPerSec = round(float64(st.Rows)/s, 0)
	return a
}

// isNative reports a native replica's row.
func isNative(name string) bool { return name == nameSingle || name == nameParallel }

// isCompare reports the comparison build's row.
func isCompare(name string) bool { return strings.HasPrefix(name, comparePrefix) }

// ratios fills Ratios: each vplayer row's transactions per second over each native replica's,
// the first vplayer row's over the comparison build's, and each row with N > 1 workers over the
// row with 1 worker.
func (r *Result) ratios() {
	set := func(a, b Applier) {
		if b.TransactionsPerSec <= 0 {
			return
		}
		if r.Ratios == nil {
			r.Ratios = map[string]float64{}
		}
		r.Ratios[a.Name+"/"+b.Name] = round(a.TransactionsPerSec/b.TransactionsPerSec, 2)
	}
	var first, one *Applier
	for i, a := range r.Appliers {
		if isNative(a.Name) {
			continue
		}
		for _, n := range r.Appliers {
			if isNative(n.Name) {
				set(a, n)
			}
		}
		if isCompare(a.Name) {
			if first != nil {
				set(*first, a)
			}
			continue
		}
		if first == nil {
			first = &r.Appliers[i]
		}
		if a.ApplyWorkers == 1 {
			one = &r.Appliers[i]
		}
	}
	if one == nil {
		return
	}
	for _, a := range r.Appliers {
		if a.ApplyWorkers > 1 {
			set(a, *one)
		}
	}
}

func (r *Result) setEqual(equal map[string]bool) {
	for i := range r.Appliers {
		r.Appliers[i].TargetEqual = equal[r.Appliers[i].Name]
	}
}

func round(x float64, digits int) float64 {
	p := 1.0
	for range digits {
		p *= 10
	}
	return float64(int64(x*p+0.5)) / p
}

// line is an applier's figures on one line, for progress output.
func (a Applier) line() string {
	if a.Stamps > 0 {
		return fmt.Sprintf("%s: lag p50 %.0f ms, p99 %.0f ms, max %.0f ms over %d stamps (source at %.0f txn/s, its stamp commits p99 %.0f ms)",
			a.Name, a.LagP50Ms, a.LagP99Ms, a.LagMaxMs, a.Stamps, a.SourceRate, a.SourceCommitP99Ms)
	}
	line := fmt.Sprintf("%s: %.2fs, %.0f txn/s, %.0f rows/s; CPU %s", a.Name, a.Seconds, a.TransactionsPerSec, a.RowsPerSec, a.cpu())
	if a.ApplyRetries != nil && (*a.ApplyRetries > 0 || a.ApplyWorkers > 1) {
		line += fmt.Sprintf("; %d batches retried", *a.ApplyRetries)
	}
	return line
}

// cpu is "applier/target/source" CPU seconds, "-" for an applier that is not a process of its
// own.
func (a Applier) cpu() string {
	app := "-"
	if a.CPUApplierSeconds > 0 {
		app = fmt.Sprintf("%.1f", a.CPUApplierSeconds)
	}
	return fmt.Sprintf("%s/%.1f/%.1f s", app, a.CPUTargetSeconds, a.CPUSourceSeconds)
}

func mib(b int64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// print writes the mode's table.
func (r *Result) print(w io.Writer) {
	fmt.Fprintf(w, "\n%s (%s, %d CPUs)\n%s\n", strings.ToUpper(r.Mode), r.Server, r.CPUs, r.Settings.line())
	wl := r.Workload
	switch r.Mode {
	case ModeLag:
		fmt.Fprintf(w, "source at %d txn/s for %.0fs per applier, %s; %d tables x %d rows; %s\n", wl.Rate, wl.Seconds, wl.Description, wl.Tables, wl.RowsPerTable, wl.Generator)
	case ModeLagFull:
		fmt.Fprintf(w, "source unpaced, as fast as %d sessions can, for %.0fs per applier, %s; %d tables x %d rows; %s\n", wl.Clients, wl.Seconds, wl.Description, wl.Tables, wl.RowsPerTable, wl.Generator)
	default:
		fmt.Fprintf(w, "backlog: %d transactions, %d row changes (%s); %d tables x %d rows\n", wl.Transactions, wl.RowChanges, wl.Description, wl.Tables, wl.RowsPerTable)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if r.Mode == ModeLag || r.Mode == ModeLagFull {
		fmt.Fprintln(tw, "applier\tsource txn/s\tsource commit p99\tstamps\tlag p50\tlag p99\tlag max\tpeak RSS\ttarget\t")
		for _, a := range r.Appliers {
			fmt.Fprintf(tw, "%s\t%.0f\t%.0f ms\t%d\t%.0f ms\t%.0f ms\t%.0f ms\t%s\t%s\t\n", a.Name, a.SourceRate, a.SourceCommitP99Ms, a.Stamps, a.LagP50Ms, a.LagP99Ms, a.LagMaxMs, mib(a.PeakRSSBytes), equalWord(a.TargetEqual))
		}
	} else {
		fmt.Fprintln(tw, "applier\tseconds\ttxn/s\trows/s\tvs native 1\tvs native 4\tpeak RSS\tCPU vplayer/target/source\ttarget\t")
		for _, a := range r.Appliers {
			fmt.Fprintf(tw, "%s\t%.2f\t%.0f\t%.0f\t%s\t%s\t%s\t%s\t%s\t\n", a.Name, a.Seconds, a.TransactionsPerSec, a.RowsPerSec,
				r.ratioCell(a.Name, nameSingle), r.ratioCell(a.Name, nameParallel), mib(a.PeakRSSBytes), a.cpu(), equalWord(a.TargetEqual))
		}
	}
	tw.Flush()
	if line := r.compareLine(); line != "" {
		fmt.Fprintln(w, line)
	}
	for _, line := range r.workersLines() {
		fmt.Fprintln(w, line)
	}
}

// ratioCell is Ratios' a/b as "2.50x", "-" when there is none.
func (r *Result) ratioCell(a, b string) string {
	if v, ok := r.Ratios[a+"/"+b]; ok {
		return fmt.Sprintf("%.2fx", v)
	}
	return "-"
}

// compareLine sums up the build under test against the comparison build (--compare-vplayer):
// the ratio of their throughputs and the difference in percent; empty without one.
func (r *Result) compareLine() string {
	if len(r.Appliers) < 2 || isNative(r.Appliers[0].Name) || isCompare(r.Appliers[0].Name) || !isCompare(r.Appliers[1].Name) {
		return ""
	}
	v, cmp := r.Appliers[0], r.Appliers[1]
	if cmp.TransactionsPerSec <= 0 {
		return ""
	}
	ratio := v.TransactionsPerSec / cmp.TransactionsPerSec
	first := "vplayer timed first"
	if r.CompareFirst {
		first = "comparison build timed first"
	}
	return fmt.Sprintf("vplayer / %s: %.2fx txn/s (%+.1f%%), peak RSS %s vs %s; %s", cmp.Name, ratio, (ratio-1)*100, mib(v.PeakRSSBytes), mib(cmp.PeakRSSBytes), first)
}

func equalWord(ok bool) string {
	if ok {
		return "equal"
	}
	return "DIFFERS"
}

// fileName is the result's file name: <mode>.json, or <mode>-quick.json for a quick run.
func (r *Result) fileName() string {
	if r.Quick {
		return r.Mode + "-quick.json"
	}
	return r.Mode + ".json"
}

// write writes the result as indented JSON into dir, replacing an earlier run's, and returns
// the file's path.
func (r *Result) write(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, r.fileName())
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return "", err
	}
	return path, nil
}
