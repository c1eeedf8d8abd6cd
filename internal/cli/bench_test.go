package cli

import (
	"io"
	"slices"
	"testing"
)

func TestBenchFlags_compare(t *testing.T) {
	fs, o := newBenchFlags(io.Discard)
	if err := fs.Parse([]string{"--mode", "catchup", "--compare-vplayer", "/tmp/vplayer-base", "--compare-first"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"/tmp/vplayer-base"}; !slices.Equal(o.CompareVplayer, want) || !o.CompareFirst {
		t.Errorf("CompareVplayer=%q, CompareFirst=%v; want %q, true", o.CompareVplayer, o.CompareFirst, want)
	}

	fs, o = newBenchFlags(io.Discard)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if o.CompareVplayer != nil || o.CompareFirst {
		t.Errorf("without the flags: CompareVplayer=%q, CompareFirst=%v; want none", o.CompareVplayer, o.CompareFirst)
	}

	fs, _ = newBenchFlags(io.Discard)
	if err := fs.Parse([]string{"--compare-vplayer="}); err == nil {
		t.Error("an empty --compare-vplayer was accepted")
	}
}
