package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestExecModeFlag: vplayer run's --exec-mode reaches the applier and the record's options. A row
// deleted on the target by mistake and then updated on the source ends the default (strict) run
// with exit 1 and a row mismatch; with --exec-mode idempotent the update is written through and
// target == source.
func TestExecModeFlag(t *testing.T) {
	tests := []struct {
		name  string
		flags []string
		mode  string
	}{
		{"default strict", nil, "strict"},
		{"idempotent", []string{"--exec-mode", "idempotent"}, "idempotent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.execBoth("CREATE TABLE t (id INT NOT NULL PRIMARY KEY, v INT NOT NULL)", "INSERT INTO t VALUES (1, 1), (2, 2), (3, 3)")
			p := e.startVplayer(tt.flags...)
			e.waitRunning(30 * time.Second)
			var opts map[string]any
			if err := json.Unmarshal([]byte(e.record().Options), &opts); err != nil {
				t.Fatal(err)
			}
			if opts["exec_mode"] != tt.mode {
				t.Errorf("options exec_mode = %v, want %s", opts["exec_mode"], tt.mode)
			}
			e.execOn(e.dst, "DELETE FROM t WHERE id = 2")
			e.execOn(e.src, "UPDATE t SET v = 20 WHERE id = 2")
			if tt.mode == "strict" {
				if code := p.wait(30 * time.Second); code != 1 {
					t.Fatalf("vplayer exited with %d on a row mismatch in strict mode, want 1", code)
				}
				if r := e.record(); r.State != "Error" || !strings.Contains(r.Message, "row mismatch") {
					t.Errorf("record: state %q message %q, want Error and a row mismatch", r.State, r.Message)
				}
				return
			}
			e.waitCaughtUp(30 * time.Second)
			e.assertEqual([]string{"t"})
		})
	}
}
