package cli

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/vplayer/vplayer/metrics"
)

func TestBuildOf(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	tests := []struct {
		name     string
		info     *debug.BuildInfo
		ok       bool
		want     metrics.Build
		wantLine string
	}{
		{
			name: "release",
			info: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/vplayer/vplayer", Version: "v1.4.0"},
				Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0a1b2c3d"}, {Key: "vcs.time", Value: "2026-12-04T10:00:00Z"}, {Key: "vcs.modified", Value: "false"}}},
			ok:       true,
			want:     metrics.Build{Version: "v1.4.0", Revision: "0a1b2c3d", GoVersion: "go1.26.8"},
			wantLine: "vplayer v1.4.0 (revision 0a1b2c3d, 2026-12-04T10:00:00Z) go1.26.8 " + platform,
		},
		{
			name: "modified tree",
			info: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261204100000-0a1b2c3d4e5f+dirty"},
				Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0a1b2c3d4e5f"}, {Key: "vcs.modified", Value: "true"}}},
			ok:       true,
			want:     metrics.Build{Version: "v0.0.0-20261204100000-0a1b2c3d4e5f+dirty", Revision: "0a1b2c3d4e5f", GoVersion: "go1.26.8"},
			wantLine: "vplayer v0.0.0-20261204100000-0a1b2c3d4e5f+dirty (revision 0a1b2c3d4e5f, modified) go1.26.8 " + platform,
		},
		{
			name:     "no VCS stamp",
			info:     &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			ok:       true,
			want:     metrics.Build{Version: "(devel)", Revision: "unknown", GoVersion: "go1.26.8"},
			wantLine: "vplayer (devel) (revision unknown) go1.26.8 " + platform,
		},
		{
			name:     "no build info",
			ok:       false,
			want:     metrics.Build{Version: "unknown", Revision: "unknown", GoVersion: runtime.Version()},
			wantLine: "vplayer unknown (revision unknown) " + runtime.Version() + " " + platform,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := buildOf(tt.info, tt.ok)
			if got := b.Build; got != tt.want {
				t.Errorf("buildOf().Build=%+v, want %+v", got, tt.want)
			}
			if got := b.String(); got != tt.wantLine {
				t.Errorf("buildOf().String()=%q, want %q", got, tt.wantLine)
			}
		})
	}
}
