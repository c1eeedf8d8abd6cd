package workflow

import (
	"reflect"
	"testing"
)

// TestRecordJSON: the source and options columns round-trip through their types, read the
// JSON earlier versions wrote (untyped maps with these keys), and refuse what is not JSON.
func TestRecordJSON(t *testing.T) {
	src := Source{Address: "db1:3306", User: "repl", Flavor: "mariadb", Database: "shop", Tables: []string{"orders", "/^t/"}}
	if got, err := ParseSource(src.JSON()); err != nil || !reflect.DeepEqual(got, src) {
		t.Errorf("source round trip: %+v, %v; want %+v", got, err, src)
	}
	opts := Options{TargetDB: "shop2", RetryDelay: "5s", OnDDL: "exec", ExecMode: "idempotent", ServerID: 7, AllowTargetTriggers: true}
	if got, err := ParseOptions(opts.JSON()); err != nil || !reflect.DeepEqual(got, opts) {
		t.Errorf("options round trip: %+v, %v; want %+v", got, err, opts)
	}
	old := `{"allow_target_triggers":false,"exec_mode":"strict","on_ddl":"stop","relay_log_max_size":250000,"server_id":42,"tables":null,"target_db":"x"}`
	got, err := ParseOptions(old)
	if err != nil || got.OnDDL != "stop" || got.ServerID != 42 || got.RelayLogMaxSize != 250000 || got.TargetDB != "x" {
		t.Errorf("options an earlier version wrote: %+v, %v", got, err)
	}
	if got, err := ParseOptions("{}"); err != nil || !reflect.DeepEqual(got, Options{}) {
		t.Errorf("{}: %+v, %v", got, err)
	}
	if _, err := ParseSource("not json"); err == nil {
		t.Error("ParseSource accepted text that is not JSON")
	}
}
