package bench

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseVmHWM(t *testing.T) {
	tests := []struct {
		name    string
		status  string
		want    int64
		wantErr bool
	}{
		{"present", "Name:\tvplayer\nVmPeak:\t  900 kB\nVmHWM:\t   12345 kB\nVmRSS:\t 100 kB\n", 12345 * 1024, false},
		{"absent", "Name:\tvplayer\n", 0, true},
		{"bad unit", "VmHWM:\t 1 MB\n", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseVmHWM([]byte(tt.status))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("parseVmHWM()=%d, %v; want %d, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestMetricValue(t *testing.T) {
	exposition := "# HELP vplayer_apply_retries_total Batches ...\n# TYPE vplayer_apply_retries_total counter\n" +
		"vplayer_apply_retries_total_other 9\nvplayer_apply_retries_total{workflow=\"bench\"} 17\nvplayer_rows_total 2.5e+06\n"
	if got, err := metricValue(exposition, "vplayer_apply_retries_total"); err != nil || got != 17 {
		t.Errorf("metricValue(retries) = %d, %v; want 17", got, err)
	}
	if got, err := metricValue(exposition, "vplayer_rows_total"); err != nil || got != 2500000 {
		t.Errorf("metricValue(rows, in exponent form) = %d, %v; want 2500000", got, err)
	}
	if _, err := metricValue(exposition, "vplayer_missing"); err == nil {
		t.Error("metricValue of a metric not exposed: no error")
	}
}

func TestOptions_Validate(t *testing.T) {
	ok := Options{Vplayer: []string{"/bin/vplayer"}}
	tests := []struct {
		name string
		edit func(*Options)
		want string // substring of the error; empty for none
	}{
		{"defaults", func(*Options) {}, ""},
		{"every mode", func(o *Options) { o.Mode = ModeLag }, ""},
		{"unknown mode", func(o *Options) { o.Mode = "fast" }, "--mode"},
		{"negative transactions", func(o *Options) { o.Transactions = -1 }, "--transactions"},
		{"negative rows", func(o *Options) { o.RowsPerTable = -1 }, "--rows-per-table"},
		{"negative rate", func(o *Options) { o.Rate = -1 }, "--rate"},
		{"negative duration", func(o *Options) { o.Duration = -time.Second }, "--duration"},
		{"no binary: Run builds one", func(o *Options) { o.Vplayer = nil }, ""},
		{"empty binary path", func(o *Options) { o.Vplayer = []string{""} }, "--vplayer"},
		{"trace without the profiler", func(o *Options) { o.Trace = "t.out" }, "--cpuprofile"},
		{"memprofile without the profiler", func(o *Options) { o.MemProfile = "m.pprof" }, "--cpuprofile"},
		{"profiles", func(o *Options) { o.CPUProfile, o.MemProfile, o.Trace = "c", "m", "t" }, ""},
		{"comparison build", func(o *Options) { o.CompareVplayer, o.CompareFirst = []string{"/tmp/vplayer-base"}, true }, ""},
		{"comparison build, catchup", func(o *Options) { o.Mode, o.CompareVplayer = ModeInsert, []string{"/tmp/b"} }, ""},
		{"empty comparison build", func(o *Options) { o.CompareVplayer = []string{""} }, "--compare-vplayer"},
		{"comparison build in the lag mode", func(o *Options) { o.Mode, o.CompareVplayer = ModeLag, []string{"/tmp/b"} }, "--mode"},
		{"compare first without a build", func(o *Options) { o.CompareFirst = true }, "--compare-vplayer"},
		{"new modes", func(o *Options) { o.Mode = ModeHotrow }, ""},
		{"lagfull", func(o *Options) { o.Mode, o.Clients = ModeLagFull, 8 }, ""},
		{"comparison build in the lagfull mode", func(o *Options) { o.Mode, o.CompareVplayer = ModeLagFull, []string{"/tmp/b"} }, "--mode"},
		{"comparison build, hotrow", func(o *Options) { o.Mode, o.CompareVplayer = ModeHotrow, []string{"/tmp/b"} }, ""},
		{"negative clients", func(o *Options) { o.Clients = -1 }, "--clients"},
		{"worker counts", func(o *Options) { o.ApplyWorkers = []int{1, 4} }, ""},
		{"zero workers", func(o *Options) { o.ApplyWorkers = []int{0} }, "at least 1"},
		{"workers twice", func(o *Options) { o.ApplyWorkers = []int{4, 4} }, "twice"},
		{"workers in the copy mode", func(o *Options) { o.Mode, o.ApplyWorkers = ModeCopy, []int{4} }, "--apply-workers"},
		{"one worker count and a comparison build", func(o *Options) { o.ApplyWorkers, o.CompareVplayer = []int{4}, []string{"/tmp/b"} }, ""},
		{"two worker counts and a comparison build", func(o *Options) { o.ApplyWorkers, o.CompareVplayer = []int{1, 4}, []string{"/tmp/b"} }, "at most one"},
		{"one worker count and the profiler", func(o *Options) { o.ApplyWorkers, o.CPUProfile = []int{4}, "c" }, ""},
		{"two worker counts and the profiler", func(o *Options) { o.ApplyWorkers, o.CPUProfile = []int{1, 4}, "c" }, "at most one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := ok
			tt.edit(&o)
			err := o.Validate()
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate()=%v, want an error naming %q", err, tt.want)
			}
		})
	}
}

func TestOptions_withDefaults(t *testing.T) {
	full := Options{}.withDefaults()
	if full.RowsPerTable != DefaultRowsPerTable || full.Mode != ModeAll || full.Clients != DefaultClients || full.Rate != DefaultRate {
		t.Errorf("full defaults: %+v", full)
	}
	quick := Options{Quick: true, Rate: 50, Clients: 3}.withDefaults()
	if quick.RowsPerTable != DefaultQuickRowsPerTable || quick.Rate != 50 || quick.Clients != 3 {
		t.Errorf("quick defaults: %+v", quick)
	}
	if got := (Options{Mode: ModeAll}).modes(); strings.Join(got, ",") != "catchup,insert,hotrow,lag,lagfull" {
		t.Errorf("modes()=%v", got)
	}
	if got := (Options{Mode: ModeHotrow}).modes(); strings.Join(got, ",") != "hotrow" {
		t.Errorf("modes()=%v", got)
	}
}

func TestOptions_perMode(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		mode string
		txns int
		dur  time.Duration
	}{
		{"catchup", Options{}, ModeCatchup, 200_000, 30 * time.Second},
		{"hotrow", Options{}, ModeHotrow, 200_000, 30 * time.Second},
		{"insert", Options{}, ModeInsert, 200_000, 30 * time.Second},
		{"lagfull", Options{}, ModeLagFull, 200_000, 60 * time.Second},
		{"quick", Options{Quick: true}, ModeLagFull, DefaultQuickTransactions, DefaultQuickDuration},
		{"quick insert", Options{Quick: true}, ModeInsert, DefaultQuickTransactions, DefaultQuickDuration},
		{"given", Options{Quick: true, Transactions: 7, Duration: time.Minute}, ModeInsert, 7, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.o.transactionsOf(tt.mode); got != tt.txns {
				t.Errorf("transactionsOf(%s)=%d, want %d", tt.mode, got, tt.txns)
			}
			if got := tt.o.durationOf(tt.mode); got != tt.dur {
				t.Errorf("durationOf(%s)=%v, want %v", tt.mode, got, tt.dur)
			}
		})
	}
}

func TestCluster_lagLoadOf(t *testing.T) {
	c := &cluster{o: Options{Rate: 500, Clients: 8, Duration: 5 * time.Second}}
	if got, want := c.lagLoadOf(ModeLag), (lagLoad{rate: 500, clients: generatorWorkers, duration: 5 * time.Second}); got != want {
		t.Errorf("lag: %+v, want %+v", got, want)
	}
	full := c.lagLoadOf(ModeLagFull)
	if want := (lagLoad{rate: 0, clients: 8, duration: 5 * time.Second}); full != want {
		t.Errorf("lagfull: %+v, want %+v", full, want)
	}
	if got, want := full.describe(), "as fast as 8 sessions can (no pacing) for 5s"; got != want {
		t.Errorf("describe()=%q, want %q", got, want)
	}
}

func TestVplayerNames(t *testing.T) {
	for _, tt := range []struct {
		n          int
		name, srv  string
		firstOrNot int
	}{
		{0, "vplayer", "bench-vplayer", 0},
		{1, "vplayer (1 worker)", "bench-vplayer-w1", 0},
		{16, "vplayer (16 workers)", "bench-vplayer-w16", 1},
	} {
		if got := vplayerName(tt.n); got != tt.name {
			t.Errorf("vplayerName(%d)=%q, want %q", tt.n, got, tt.name)
		}
		if got := vplayerServerName(tt.n); got != tt.srv {
			t.Errorf("vplayerServerName(%d)=%q, want %q", tt.n, got, tt.srv)
		}
	}
	ids := map[uint32]bool{sourceID: true, single1ID: true, parallelID: true, compareID: true}
	for i := range 8 {
		id := vplayerServerID(i)
		if ids[id] {
			t.Errorf("vplayerServerID(%d)=%d, taken", i, id)
		}
		ids[id] = true
	}
	if got := (Options{}).workerCounts(); !slices.Equal(got, []int{0}) {
		t.Errorf("workerCounts() without --apply-workers = %v, want [0]", got)
	}
	if got := (Options{ApplyWorkers: []int{4, 1}}).workerCounts(); !slices.Equal(got, []int{4, 1}) {
		t.Errorf("workerCounts()=%v, want [4 1]", got)
	}
}

func TestResult_workers(t *testing.T) {
	st := genStats{Transactions: 1000, Rows: 1000}
	r := &Result{Mode: ModeHotrow, Server: "10.11", CPUs: 2, Workload: Workload{Transactions: 1000, RowChanges: 1000}}
	r.add(Applier{Name: vplayerName(1), ApplyWorkers: 1, PeakRSSBytes: 20 << 20}, timing{took: 100 * time.Millisecond}, st)
	r.add(Applier{Name: vplayerName(4), ApplyWorkers: 4, PeakRSSBytes: 30 << 20}, timing{took: 104 * time.Millisecond}, st)
	r.add(Applier{Name: vplayerName(8), ApplyWorkers: 8, PeakRSSBytes: 40 << 20}, timing{took: 125 * time.Millisecond}, st)
	r.add(Applier{Name: nameSingle}, timing{took: 400 * time.Millisecond}, st)
	r.add(Applier{Name: nameParallel}, timing{took: 200 * time.Millisecond}, st)
	r.ratios()
	r.setEqual(map[string]bool{vplayerName(1): true, vplayerName(4): true, vplayerName(8): true, nameSingle: true, nameParallel: true})
	want := map[string]float64{
		"vplayer (1 worker)/native 1 thread":              4,
		"vplayer (1 worker)/native 4 threads optimistic":  2,
		"vplayer (4 workers)/native 1 thread":             3.85,
		"vplayer (4 workers)/native 4 threads optimistic": 1.92,
		"vplayer (8 workers)/native 1 thread":             3.2,
		"vplayer (8 workers)/native 4 threads optimistic": 1.6,
		"vplayer (4 workers)/vplayer (1 worker)":          0.96,
		"vplayer (8 workers)/vplayer (1 worker)":          0.8,
	}
	if len(r.Ratios) != len(want) {
		t.Errorf("Ratios=%v, want %v", r.Ratios, want)
	}
	for k, v := range want {
		if got := r.Ratios[k]; got != v {
			t.Errorf("Ratios[%q]=%v, want %v", k, got, v)
		}
	}
	var b bytes.Buffer
	r.print(&b)
	out := b.String()
	var squeezed []string // the table's lines with single spaces
	for line := range strings.Lines(out) {
		squeezed = append(squeezed, strings.Join(strings.Fields(line), " "))
	}
	for _, want := range []string{
		"applier seconds txn/s rows/s vs native 1 vs native 4 peak RSS CPU vplayer/target/source target",
		"vplayer (1 worker) 0.10 10000 10000 4.00x 2.00x 20.0 MiB -/0.0/0.0 s equal",
		"vplayer (4 workers) 0.10 9615 9615 3.85x 1.92x 30.0 MiB -/0.0/0.0 s equal",
		"native 1 thread 0.40 2500 2500 - - - -/0.0/0.0 s equal",
	} {
		if !slices.Contains(squeezed, want) {
			t.Errorf("table lacks the line %q:\n%s", want, out)
		}
	}
	for _, want := range []string{
		"vplayer (4 workers) / vplayer (1 worker): 0.96x txn/s (-3.8%), peak RSS 30.0 MiB vs 20.0 MiB; target at most 5% slower: met",
		"vplayer (8 workers) / vplayer (1 worker): 0.80x txn/s (-20.0%), peak RSS 40.0 MiB vs 20.0 MiB; target at most 5% slower: MISSED",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"name":"vplayer (4 workers)","apply_workers":4`) {
		t.Errorf("JSON lacks the worker count: %s", js)
	}

	// Outside the hotrow mode, the same line without the verdict; without a 1-worker row, none.
	r.Mode = ModeCatchup
	if got := r.workersLines(); len(got) != 2 || strings.Contains(got[0], "target") {
		t.Errorf("catchup workersLines()=%q", got)
	}
	r.Appliers = r.Appliers[1:]
	if got := r.workersLines(); got != nil {
		t.Errorf("workersLines() without a 1-worker row = %q", got)
	}
}

func TestResult_printLagFull(t *testing.T) {
	r := &Result{Mode: ModeLagFull, Server: "10.11", CPUs: 2, Workload: Workload{
		Description: "mix", Generator: "built-in, 8 sessions (sysbench is not used)", Tables: 4, RowsPerTable: 100, Clients: 8, Seconds: 60,
	}}
	r.Appliers = []Applier{
		{Name: vplayerName(4), ApplyWorkers: 4, SourceRate: 5000, Stamps: 600, LagP50Ms: 12, LagP99Ms: 80, LagMaxMs: 120, PeakRSSBytes: 30 << 20, TargetEqual: true},
		{Name: nameSingle, SourceRate: 5100, Stamps: 500, LagP50Ms: 900, LagP99Ms: 4000, LagMaxMs: 4100, TargetEqual: true},
	}
	var b bytes.Buffer
	r.print(&b)
	for _, want := range []string{
		"LAGFULL", "source unpaced, as fast as 8 sessions can, for 60s per applier", "built-in, 8 sessions (sysbench is not used)",
		"lag p99", "80 ms", "4000 ms", "30.0 MiB",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestResult_ratiosAndPrint(t *testing.T) {
	r := &Result{Mode: ModeCatchup, Server: "10.11", CPUs: 2, Workload: Workload{Transactions: 1000, RowChanges: 4000}}
	st := genStats{Transactions: 1000, Rows: 4000}
	r.add(Applier{Name: nameVplayer, PeakRSSBytes: 20 << 20}, timing{took: 250 * time.Millisecond, applierCPU: 0.2, targetCPU: 0.3, sourceCPU: 0.05}, st)
	r.add(Applier{Name: nameSingle}, timing{took: time.Second, targetCPU: 0.5}, st)
	r.add(Applier{Name: nameParallel}, timing{took: 500 * time.Millisecond}, st)
	r.ratios()
	r.setEqual(map[string]bool{nameVplayer: true, nameSingle: true})
	if got, want := r.Ratios[nameVplayer+"/"+nameSingle], 4.0; got != want {
		t.Errorf("ratio over single=%v, want %v", got, want)
	}
	if got, want := r.Ratios[nameVplayer+"/"+nameParallel], 2.0; got != want {
		t.Errorf("ratio over parallel=%v, want %v", got, want)
	}
	var b bytes.Buffer
	r.print(&b)
	for _, want := range []string{"4000", "4.00x", "2.00x", "20.0 MiB", "DIFFERS", "0.2/0.3/0.1 s", "-/0.5/0.0 s"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestResult_compare(t *testing.T) {
	r := &Result{Mode: ModeInsert, Server: "10.11", CPUs: 2, Workload: Workload{Transactions: 1000, RowChanges: 3000}, CompareFirst: true}
	st := genStats{Transactions: 1000, Rows: 3000}
	base := compareName([]string{"/tmp/vplayer-base"})
	r.add(Applier{Name: nameVplayer, PeakRSSBytes: 20 << 20}, timing{took: 500 * time.Millisecond}, st)
	r.add(Applier{Name: base, PeakRSSBytes: 18 << 20}, timing{took: 400 * time.Millisecond}, st)
	r.add(Applier{Name: nameSingle}, timing{took: 2 * time.Second}, st)
	r.ratios()
	r.setEqual(map[string]bool{nameVplayer: true, base: true, nameSingle: true})
	if got, want := r.Ratios[nameVplayer+"/"+base], 0.8; got != want {
		t.Errorf("ratio over the comparison build=%v, want %v", got, want)
	}
	if got, want := r.Ratios[nameVplayer+"/"+nameSingle], 4.0; got != want {
		t.Errorf("ratio over single=%v, want %v", got, want)
	}
	var b bytes.Buffer
	r.print(&b)
	for _, want := range []string{
		"vplayer (compare: /tmp/vplayer-base)", "0.80x", "4.00x",
		"vplayer / vplayer (compare: /tmp/vplayer-base): 0.80x txn/s (-20.0%), peak RSS 20.0 MiB vs 18.0 MiB; comparison build timed first",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"vplayer/vplayer (compare: /tmp/vplayer-base)":0.8`, `"compare_first":true`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("JSON lacks %s: %s", want, js)
		}
	}

	// Without a comparison build, no summary line.
	r = &Result{Mode: ModeCatchup}
	r.add(Applier{Name: nameVplayer}, timing{took: time.Second}, st)
	r.add(Applier{Name: nameSingle}, timing{took: time.Second}, st)
	if line := r.compareLine(); line != "" {
		t.Errorf("compareLine() without a comparison build = %q", line)
	}
}

func TestResult_fileName(t *testing.T) {
	if got, want := (&Result{Mode: ModeLag}).fileName(), "lag.json"; got != want {
		t.Errorf("fileName()=%q, want %q", got, want)
	}
	if got, want := (&Result{Mode: ModeInsert, Quick: true}).fileName(), "insert-quick.json"; got != want {
		t.Errorf("fileName()=%q, want %q", got, want)
	}
	if got, want := profilePath("/tmp/cpu.pprof", ModeCatchup), "/tmp/cpu-catchup.pprof"; got != want {
		t.Errorf("profilePath()=%q, want %q", got, want)
	}
}

func TestParseStatCPU(t *testing.T) {
	stat := "4242 (vplayer run (x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 9 0 1000 1000 100\n"
	got, err := parseStatCPU([]byte(stat))
	if want := 3250 * time.Millisecond; err != nil || got != want {
		t.Errorf("parseStatCPU()=%v, %v; want %v", got, err, want)
	}
	if _, err := parseStatCPU([]byte("4242 (x) S 1")); err == nil {
		t.Error("parseStatCPU(short line) succeeded")
	}
}
