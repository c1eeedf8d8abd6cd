package bench

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestStampDelays(t *testing.T) {
	tests := []struct {
		name    string
		stamps  []int64
		samples []sample
		want    []time.Duration
	}{
		{
			name:    "each stamp seen",
			stamps:  []int64{1000, 2000},
			samples: []sample{{at: 1500, seen: 1000}, {at: 2100, seen: 2000}},
			want:    []time.Duration{500 * time.Microsecond, 100 * time.Microsecond},
		},
		{
			name:    "a later stamp shows an earlier one applied",
			stamps:  []int64{1000, 2000, 3000},
			samples: []sample{{at: 3500, seen: 3000}},
			want:    []time.Duration{2500 * time.Microsecond, 1500 * time.Microsecond, 500 * time.Microsecond},
		},
		{
			name:    "an older value first is skipped",
			stamps:  []int64{1000},
			samples: []sample{{at: 900, seen: 10}, {at: 1200, seen: 1000}},
			want:    []time.Duration{200 * time.Microsecond},
		},
		{
			name:    "a stamp never seen is left out",
			stamps:  []int64{1000, 2000},
			samples: []sample{{at: 1100, seen: 1000}},
			want:    []time.Duration{100 * time.Microsecond},
		},
		{
			name:   "no samples",
			stamps: []int64{1000},
			want:   []time.Duration{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stampDelays(tt.stamps, tt.samples); !slices.Equal(got, tt.want) {
				t.Errorf("stampDelays()=%v, want %v", got, tt.want)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	var hundred []time.Duration
	for i := 1; i <= 100; i++ {
		hundred = append(hundred, time.Duration(i)*time.Millisecond)
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one", []time.Duration{7}, 99, 7},
		{"p50 of 100", hundred, 50, 50 * time.Millisecond},
		{"p99 of 100", hundred, 99, 99 * time.Millisecond},
		{"max", hundred, 100, 100 * time.Millisecond},
		{"p99 of 3 is the max", []time.Duration{1, 2, 3}, 99, 3},
		{"p50 of 3 is the middle", []time.Duration{1, 2, 3}, 50, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("percentile(%v)=%v, want %v", tt.p, got, tt.want)
			}
		})
	}
}

func TestRowGen_hotRow(t *testing.T) {
	g := newRowGen(1, 0, 1000)
	seen := map[string]bool{}
	for range 500 {
		stmts := g.hotRow()
		if len(stmts) != 1 {
			t.Fatalf("hotRow() gave %d statements, want one", len(stmts))
		}
		q := stmts[0]
		_, id, ok := strings.Cut(q, " WHERE id = ")
		if !ok || !strings.HasPrefix(q, "UPDATE `bench`.`sbtest1` SET c = '") {
			t.Fatalf("hotRow()=%q, want an UPDATE of c in sbtest1 by id", q)
		}
		seen[id] = true
	}
	if len(seen) != hotRows {
		t.Errorf("hotRow() updated ids %v, want each of 1..%d", seen, hotRows)
	}
	for id := range seen {
		if n, err := strconv.Atoi(id); err != nil || n < 1 || n > hotRows {
			t.Errorf("hotRow() updated id %q, want 1..%d", id, hotRows)
		}
	}
	if small := newRowGen(1, 0, 3); small.hotRow()[0] == "" {
		t.Error("hotRow() on 3 rows")
	}
}
