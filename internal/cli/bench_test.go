package cli

import (
	"io"
	"slices"
	"testing"
)

func TestBenchFlags_compare(t *testing.T) {
	fs, o, _ := newBenchFlags(io.Discard)
	if err := fs.Parse([]string{"--mode", "catchup", "--compare-vplayer", "/tmp/vplayer-base", "--compare-first"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"/tmp/vplayer-base"}; !slices.Equal(o.CompareVplayer, want) || !o.CompareFirst {
		t.Errorf("CompareVplayer=%q, CompareFirst=%v; want %q, true", o.CompareVplayer, o.CompareFirst, want)
	}

	fs, o, _ = newBenchFlags(io.Discard)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if o.CompareVplayer != nil || o.CompareFirst {
		t.Errorf("without the flags: CompareVplayer=%q, CompareFirst=%v; want none", o.CompareVplayer, o.CompareFirst)
	}

	fs, _, _ = newBenchFlags(io.Discard)
	if err := fs.Parse([]string{"--compare-vplayer="}); err == nil {
		t.Error("an empty --compare-vplayer was accepted")
	}
}

func TestBenchFlags_workers(t *testing.T) {
	fs, o, vp := newBenchFlags(io.Discard)
	if err := fs.Parse([]string{"--mode", "lagfull", "--apply-workers", "1,4", "--clients", "6", "--vplayer", "/tmp/vp"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.ApplyWorkers, []int{1, 4}) || o.Clients != 6 || *vp != "/tmp/vp" {
		t.Errorf("ApplyWorkers=%v, Clients=%d, --vplayer %q; want [1 4], 6, /tmp/vp", o.ApplyWorkers, o.Clients, *vp)
	}
	if got, want := fs.Lookup("apply-workers").Value.String(), "1,4"; got != want {
		t.Errorf("--apply-workers reads back %q, want %q", got, want)
	}

	fs, o, vp = newBenchFlags(io.Discard)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if o.ApplyWorkers != nil || o.Clients != 8 || *vp != "" {
		t.Errorf("defaults: ApplyWorkers=%v, Clients=%d, --vplayer %q; want none, 8, none", o.ApplyWorkers, o.Clients, *vp)
	}

	for _, bad := range []string{"--apply-workers=0", "--apply-workers=1,1", "--apply-workers=", "--apply-workers=x"} {
		fs, _, _ = newBenchFlags(io.Discard)
		if err := fs.Parse([]string{bad}); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}
