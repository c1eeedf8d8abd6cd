package stream

import (
	"strings"
	"testing"
)

// TestDefaultConfig_valid: the defaults pass Validate once a workflow is named.
func TestDefaultConfig_valid(t *testing.T) {
	c := DefaultConfig()
	c.Workflow = "orders"
	if err := c.Validate(); err != nil {
		t.Fatalf("DefaultConfig with a workflow: %v", err)
	}
}

// TestConfig_Validate: each bad setting is reported, naming its flag, all in one error; New
// refuses what Validate refuses instead of panicking further down (a zero relay log bound).
func TestConfig_Validate(t *testing.T) {
	c := DefaultConfig()
	c.Workflow = "orders"
	c.RelayLogMaxBytes = 0
	c.RelayLogMaxItems = -1
	c.OnDDL = "drop"
	c.ExecMode = "loose"
	c.SourceHeartbeatPeriod = 0
	c.StopPos = "not a position"
	c.Source.Tables = []string{"/(/"}
	c.OnlineDDLPatterns = "shadow=_t_new"
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate accepted bad settings")
	}
	for _, want := range []string{"--relay-log-max-size is 0", "--relay-log-max-items is -1", `--on-ddl is "drop"`,
		`--exec-mode is "loose"`, "--source-heartbeat-period is 0s", "--stop-pos", "/(/", `--online-ddl-patterns entry "shadow=_t_new"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate's error does not say %q:\n%v", want, err)
		}
	}
	if _, err := New(c); err == nil {
		t.Error("New accepted a config that Validate refuses")
	}
	var empty Config
	if err := empty.Validate(); err == nil || !strings.Contains(err.Error(), "--workflow is required") {
		t.Errorf("the zero Config: %v, want --workflow is required", err)
	}
}
