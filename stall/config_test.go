package stall

import (
	"strings"
	"testing"
	"time"
)

func TestConfig_Validate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string // substrings of the error; none means valid
	}{
		{name: "defaults", cfg: Config{ProgressDeadline: DefaultProgressDeadline, HeartbeatInterval: DefaultHeartbeatInterval}},
		{name: "deadline off", cfg: Config{ProgressDeadline: 0, HeartbeatInterval: time.Second}},
		{name: "largest interval", cfg: Config{ProgressDeadline: time.Minute, HeartbeatInterval: MaxHeartbeatInterval}},
		{
			name: "negative deadline",
			cfg:  Config{ProgressDeadline: -time.Second, HeartbeatInterval: time.Second},
			want: []string{"invalid --vplayer-progress-deadline -1s: must be 0 (off) or a positive duration"},
		},
		{
			name: "zero interval",
			cfg:  Config{ProgressDeadline: time.Minute},
			want: []string{"invalid --heartbeat-update-interval 0s: must be a positive duration"},
		},
		{
			name: "interval too long",
			cfg:  Config{ProgressDeadline: time.Minute, HeartbeatInterval: MaxHeartbeatInterval + time.Nanosecond},
			want: []string{"invalid --heartbeat-update-interval 1m0.000000001s: must be at most 1m0s"},
		},
		{
			name: "both wrong",
			cfg:  Config{ProgressDeadline: -time.Minute, HeartbeatInterval: -time.Second},
			want: []string{"--vplayer-progress-deadline -1m0s", "--heartbeat-update-interval -1s"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Errorf("Validate()=%v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate()=nil, want an error containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate()=%q, want it to contain %q", err, w)
				}
			}
		})
	}
}
