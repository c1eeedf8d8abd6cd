package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/vplayer/vplayer/internal/bench"
	"github.com/vplayer/vplayer/internal/cli"
	"github.com/vplayer/vplayer/internal/mysqld"
)

// childEnv makes this test binary act as the vplayer binary, so that the benchmark can run
// vplayer as a separate process, as vplayer-bench does with the binary it builds or is given.
const childEnv = "VPLAYER_BENCH_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func requireServer(t *testing.T) {
	t.Helper()
	if _, err := mysqld.Find(); errors.Is(err, mysqld.ErrNotFound) {
		if os.Getenv("VPLAYER_REQUIRE_MYSQL") == "1" {
			t.Fatalf("VPLAYER_REQUIRE_MYSQL=1 but no server binary: %v", err)
		}
		t.Skipf("no mysqld/mariadbd (install mariadb-server or set VPLAYER_MYSQLD): %v", err)
	}
}

// TestRun_quick runs every mode of the benchmark on small backlogs, so that `make bench` cannot
// rot: it must complete, every target must equal the source, and every figure must be there. The
// figures themselves are not asserted: they are benchmark results, printed.
func TestRun_quick(t *testing.T) {
	requireServer(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	dir := t.TempDir()
	var out bytes.Buffer
	results, err := bench.Run(ctx, &out, bench.Options{
		Quick:        true,
		Transactions: 1000,
		RowsPerTable: 1000,
		Duration:     2 * time.Second,
		ResultsDir:   dir,
		Vplayer:      []string{exe},
		Env:          []string{childEnv + "=1"},
	})
	t.Logf("bench output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	var modes []string
	for _, r := range results {
		modes = append(modes, r.Mode)
		if got, want := len(r.Appliers), 3; got != want {
			t.Fatalf("%s: %d appliers, want %d", r.Mode, got, want)
		}
		for _, a := range r.Appliers {
			if !a.TargetEqual {
				t.Errorf("%s: %s's target is not equal to the source", r.Mode, a.Name)
			}
			if r.Mode == bench.ModeLag || r.Mode == bench.ModeLagFull {
				if a.Stamps == 0 || a.LagP99Ms < a.LagP50Ms {
					t.Errorf("%s: %s: %d stamps, p50 %v ms, p99 %v ms", r.Mode, a.Name, a.Stamps, a.LagP50Ms, a.LagP99Ms)
				}
			} else if a.TransactionsPerSec <= 0 || a.RowsPerSec < a.TransactionsPerSec {
				t.Errorf("%s: %s: %v txn/s, %v rows/s", r.Mode, a.Name, a.TransactionsPerSec, a.RowsPerSec)
			}
		}
		if v := r.Appliers[0]; v.Name != "vplayer" || v.PeakRSSBytes <= 0 {
			t.Errorf("%s: first applier %s with peak RSS %d, want vplayer's, measured", r.Mode, v.Name, v.PeakRSSBytes)
		}
		if lag := r.Mode == bench.ModeLag || r.Mode == bench.ModeLagFull; !lag && len(r.Ratios) != 2 {
			t.Errorf("%s: ratios %v, want one per native replica", r.Mode, r.Ratios)
		}
		b, err := os.ReadFile(filepath.Join(dir, r.Mode+"-quick.json"))
		if err != nil {
			t.Fatal(err)
		}
		var back bench.Result
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s-quick.json: %v", r.Mode, err)
		}
		if back.Workload.Transactions != r.Workload.Transactions || len(back.Appliers) != 3 {
			t.Errorf("%s-quick.json does not hold the printed result", r.Mode)
		}
	}
	if want := []string{"catchup", "insert", "hotrow", "lag", "lagfull"}; !slices.Equal(modes, want) {
		t.Errorf("modes run: %v, want %v", modes, want)
	}
}

// TestRun_copyQuick runs the copy mode on small tables: vplayer's copy and the dump loaders
// (mydumper's where installed) must each bring an empty target to the source's rows, with their
// figures, and vplayer's peak RSS.
func TestRun_copyQuick(t *testing.T) {
	requireServer(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var out bytes.Buffer
	results, err := bench.Run(ctx, &out, bench.Options{
		Mode: bench.ModeCopy, Quick: true, RowsPerTable: 2000,
		Vplayer: []string{exe}, Env: []string{childEnv + "=1"},
	})
	t.Logf("output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || len(results[0].Appliers) < 2 {
		t.Fatalf("results %+v, want one copy result with vplayer and at least mariadb-dump", results)
	}
	for _, a := range results[0].Appliers {
		if !a.TargetEqual || a.Seconds <= 0 || a.RowsPerSec <= 0 {
			t.Errorf("%s: equal %v, %v s, %v rows/s", a.Name, a.TargetEqual, a.Seconds, a.RowsPerSec)
		}
	}
	if !slices.ContainsFunc(results[0].Appliers, func(a bench.Applier) bool { return strings.HasPrefix(a.Name, "target alone") }) {
		t.Errorf("no target-alone load among %+v: the copy mode must time what the target needs by itself", results[0].Appliers)
	}
	if !strings.Contains(out.String(), "the target alone loads the rows from its own disk in") {
		t.Errorf("output does not compare the target alone with 3x mariadb-dump")
	}
	if v := results[0].Appliers[0]; v.PeakRSSBytes <= 0 {
		t.Errorf("first loader %s with peak RSS %d, want vplayer's, measured", v.Name, v.PeakRSSBytes)
	}
}

func TestParseApplyWorkers(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []int
		wantErr string // substring of the error; empty for none
	}{
		{"one", "4", []int{4}, ""},
		{"two, in the order given", "4,1", []int{4, 1}, ""},
		{"spaces", " 1, 2 ,8", []int{1, 2, 8}, ""},
		{"empty", "", nil, "empty"},
		{"empty entry", "1,,4", nil, "not a worker count"},
		{"not a number", "1,four", nil, `"four"`},
		{"zero", "0,4", nil, "at least 1"},
		{"negative", "-2", nil, "at least 1"},
		{"twice", "1,4,1", nil, "1 twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := bench.ParseApplyWorkers(tt.in)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("ParseApplyWorkers(%q) error %v, want one naming %q", tt.in, err, tt.wantErr)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("ParseApplyWorkers(%q)=%v, want %v", tt.in, got, tt.want)
			}
		})
	}
}
