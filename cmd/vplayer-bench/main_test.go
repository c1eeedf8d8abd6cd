package main

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/vplayer/vplayer/internal/bench"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFlags_compare(t *testing.T) {
	fs, o := newFlags(io.Discard, io.Discard)
	if err := fs.Parse([]string{"--mode", "catchup", "--compare-vplayer", "/tmp/vplayer-base", "--compare-first"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"/tmp/vplayer-base"}; !slices.Equal(o.CompareVplayer, want) || !o.CompareFirst {
		t.Errorf("CompareVplayer=%q, CompareFirst=%v; want %q, true", o.CompareVplayer, o.CompareFirst, want)
	}

	fs, o = newFlags(io.Discard, io.Discard)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if o.CompareVplayer != nil || o.CompareFirst {
		t.Errorf("without the flags: CompareVplayer=%q, CompareFirst=%v; want none", o.CompareVplayer, o.CompareFirst)
	}

	fs, _ = newFlags(io.Discard, io.Discard)
	if err := fs.Parse([]string{"--compare-vplayer="}); err == nil {
		t.Error("an empty --compare-vplayer was accepted")
	}
}

func TestFlags_workers(t *testing.T) {
	fs, o := newFlags(io.Discard, io.Discard)
	if err := fs.Parse([]string{"--mode", "lagfull", "--apply-workers", "1,4", "--clients", "6", "--vplayer", "/tmp/vp"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.ApplyWorkers, []int{1, 4}) || o.Clients != 6 || !slices.Equal(o.Vplayer, []string{"/tmp/vp"}) {
		t.Errorf("ApplyWorkers=%v, Clients=%d, Vplayer %q; want [1 4], 6, [/tmp/vp]", o.ApplyWorkers, o.Clients, o.Vplayer)
	}
	if got, want := fs.Lookup("apply-workers").Value.String(), "1,4"; got != want {
		t.Errorf("--apply-workers reads back %q, want %q", got, want)
	}

	fs, o = newFlags(io.Discard, io.Discard)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if o.ApplyWorkers != nil || o.Clients != 8 || o.Vplayer != nil || o.ResultsDir != "bench/results" {
		t.Errorf("defaults: ApplyWorkers=%v, Clients=%d, Vplayer %q, ResultsDir %q; want none, 8, none (built), bench/results",
			o.ApplyWorkers, o.Clients, o.Vplayer, o.ResultsDir)
	}

	for _, bad := range []string{"--apply-workers=0", "--apply-workers=1,1", "--apply-workers=", "--apply-workers=x", "--vplayer="} {
		fs, _ = newFlags(io.Discard, io.Discard)
		if err := fs.Parse([]string{bad}); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}

// TestRun_help checks that --help lists every mode the benchmark has, and every flag.
func TestRun_help(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if got, want := run([]string{"--help"}, &stdout, &stderr), exitOK; got != want {
		t.Fatalf("--help exited %d, want %d; stderr %q", got, want, stderr.String())
	}
	help := stdout.String()
	modes := bench.Modes()
	if got, want := len(modes), 7; got != want {
		t.Errorf("bench.Modes() has %d modes, want %d: update this test and docs/benchmarks.md's table", got, want)
	}
	for _, m := range modes {
		if !strings.Contains(help, "\n  "+m.Name+" ") {
			t.Errorf("--help does not list mode %q:\n%s", m.Name, help)
		}
		if err := (bench.Options{Mode: m.Name}).Validate(); err != nil {
			t.Errorf("mode %q, listed by --help, is refused: %v", m.Name, err)
		}
	}
	fs, _ := newFlags(io.Discard, io.Discard)
	for _, name := range []string{"mode", "apply-workers", "quick", "vplayer", "results-dir", "compare-vplayer", "cpuprofile"} {
		if fs.Lookup(name) == nil || !strings.Contains(help, "--"+name) {
			t.Errorf("--help does not list --%s", name)
		}
	}
}

// TestRun_usage checks that bad flags exit with the usage code before anything starts.
func TestRun_usage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"unknown mode", []string{"--mode", "fast"}, `--mode is "fast"`},
		{"unknown flag", []string{"--fast"}, "unknown flag: --fast"},
		{"argument", []string{"catchup"}, "unexpected arguments: catchup"},
		{"zero rate", []string{"--rate", "0"}, "--rate is 0"},
		{"zero clients", []string{"--clients", "0"}, "--clients is 0"},
		{"workers with copy", []string{"--mode", "copy", "--apply-workers", "1,2"}, "--apply-workers is for"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got, want := run(tt.args, &stdout, &stderr), exitUsage; got != want {
				t.Fatalf("exited %d, want %d; stderr %q", got, want, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr %q, want it to contain %q", stderr.String(), tt.want)
			}
		})
	}
}
