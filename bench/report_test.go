package bench

import (
	"bytes"
	"encoding/json"
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
		{"no binary", func(o *Options) { o.Vplayer = nil }, "vplayer binary"},
		{"trace without the profiler", func(o *Options) { o.Trace = "t.out" }, "--cpuprofile"},
		{"memprofile without the profiler", func(o *Options) { o.MemProfile = "m.pprof" }, "--cpuprofile"},
		{"profiles", func(o *Options) { o.CPUProfile, o.MemProfile, o.Trace = "c", "m", "t" }, ""},
		{"comparison build", func(o *Options) { o.CompareVplayer, o.CompareFirst = []string{"/tmp/vplayer-base"}, true }, ""},
		{"comparison build, catchup", func(o *Options) { o.Mode, o.CompareVplayer = ModeInsert, []string{"/tmp/b"} }, ""},
		{"empty comparison build", func(o *Options) { o.CompareVplayer = []string{""} }, "--compare-vplayer"},
		{"comparison build in the lag mode", func(o *Options) { o.Mode, o.CompareVplayer = ModeLag, []string{"/tmp/b"} }, "--mode"},
		{"compare first without a build", func(o *Options) { o.CompareFirst = true }, "--compare-vplayer"},
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
	if full.Transactions != DefaultTransactions || full.RowsPerTable != DefaultRowsPerTable || full.Duration != DefaultDuration || full.Mode != ModeAll {
		t.Errorf("full defaults: %+v", full)
	}
	quick := Options{Quick: true, Rate: 50}.withDefaults()
	if quick.Transactions != DefaultQuickTransactions || quick.Duration != DefaultQuickDuration || quick.Rate != 50 {
		t.Errorf("quick defaults: %+v", quick)
	}
	if got := (Options{Mode: ModeAll}).modes(); strings.Join(got, ",") != "catchup,insert,lag" {
		t.Errorf("modes()=%v", got)
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
