package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/vplayer/vplayer/workflow"
)

func TestGTIDBehind(t *testing.T) {
	tests := []struct {
		name     string
		src, rec string
		want     int64
		wantErr  bool
	}{
		{"mariadb caught up", "MariaDB/0-1-100", "MariaDB/0-1-100", 0, false},
		{"mariadb behind", "MariaDB/0-1-100", "MariaDB/0-1-58", 42, false},
		{"mariadb ahead of the source", "MariaDB/0-1-100", "MariaDB/0-1-120", 0, false},
		{"mariadb domains", "MariaDB/0-1-100,1-2-50,2-2-9", "MariaDB/0-1-90,1-2-50", 19, false},
		{"mariadb failover: another server id in the domain", "MariaDB/0-2-130", "MariaDB/0-1-100", 30, false},
		{"mariadb empty record", "MariaDB/0-1-5", "MariaDB/", 5, false},
		{"mysql caught up", "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-100", "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-100", 0, false},
		{"mysql behind", "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-100", "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-60", 40, false},
		{"mysql gaps and two servers",
			"MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-100:200-210,5f1c3a8e-0b7e-11ef-a3a5-0242ac120002:1-5",
			"MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-50:60-100:205", 9 + 10 + 5, false},
		{"flavors differ", "MariaDB/0-1-5", "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := gtidBehind(mustPos(t, tt.src), mustPos(t, tt.rec))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("gtidBehind(%s, %s)=%d, %v; want %d, error %v", tt.src, tt.rec, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestMysqlSet_tags(t *testing.T) {
	got, err := mysqlBehind("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-10:batch:1-4", "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-10:batch:1-2")
	if err != nil || got != 2 {
		t.Errorf("mysqlBehind with tags=%d, %v; want 2", got, err)
	}
	if _, err := mysqlSet("3e11fa47-71ca-11e1-9e33-c80aa9429562"); err == nil {
		t.Error("mysqlSet of a uuid without intervals: nil error, want one")
	}
}

func TestComputeBacklog(t *testing.T) {
	maria := &sourceState{Address: "s:3306", Flavor: "mariadb", GTID: mustPos(t, "MariaDB/0-1-100"),
		Logs: []binlogFile{{"binlog.000001", 1000}, {"binlog.000002", 300}}}
	noLogs := &sourceState{Address: "s:3306", Flavor: "mariadb", GTID: mustPos(t, "MariaDB/0-1-100"), LogsErr: errors.New("SHOW BINARY LOGS: denied")}
	noGTID := &sourceState{Address: "s:3306", Flavor: "mysql", Logs: []binlogFile{{"binlog.000001", 1000}}}
	tests := []struct {
		name      string
		pos       string
		src       *sourceState
		known     bool
		caughtUp  *bool
		trx       *int64
		bytes     *int64
		reasonHas string
	}{
		{name: "no source", pos: "MariaDB/0-1-5", reasonHas: "no --source given"},
		{name: "source error", pos: "MariaDB/0-1-5", src: &sourceState{Err: errors.New("connection refused")}, reasonHas: "connection refused"},
		{name: "gtid behind", pos: "MariaDB/0-1-58", src: maria, known: true, caughtUp: ptr(false), trx: ptr(int64(42)), reasonHas: "not counted for a GTID position"},
		{name: "gtid caught up", pos: "MariaDB/0-1-100", src: maria, known: true, caughtUp: ptr(true), trx: ptr(int64(0))},
		{name: "file position behind", pos: "FilePos/binlog.000001:400", src: maria, known: true, caughtUp: ptr(false), bytes: ptr(int64(600 + 300))},
		{name: "file position at the end", pos: "FilePos/binlog.000002:300", src: maria, known: true, caughtUp: ptr(true), bytes: ptr(int64(0))},
		{name: "file position purged", pos: "FilePos/binlog.000000:400", src: maria, known: true, caughtUp: ptr(false), reasonHas: "no longer have binlog.000000"},
		{name: "file position, logs unreadable", pos: "FilePos/binlog.000001:400", src: noLogs, reasonHas: "denied"},
		{name: "gtid, the source has none", pos: "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", src: noGTID, reasonHas: "no GTID position"},
		{name: "flavors differ", pos: "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", src: maria, reasonHas: "is --source the workflow's source?"},
		{name: "bad position", pos: "nonsense/1", src: maria, reasonHas: "cannot be read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := computeBacklog(tt.pos, tt.src)
			if b.Known != tt.known {
				t.Errorf("Known=%v, want %v (%+v)", b.Known, tt.known, b)
			}
			if deref(b.CaughtUp) != deref(tt.caughtUp) || deref(b.Transactions) != deref(tt.trx) || deref(b.Bytes) != deref(tt.bytes) {
				t.Errorf("caught up %v, transactions %v, bytes %v; want %v, %v, %v", deref(b.CaughtUp), deref(b.Transactions), deref(b.Bytes),
					deref(tt.caughtUp), deref(tt.trx), deref(tt.bytes))
			}
			reasons := b.Reason + "|" + b.TransactionsReason + "|" + b.BytesReason
			if tt.reasonHas != "" && !strings.Contains(reasons, tt.reasonHas) {
				t.Errorf("reasons %q lack %q", reasons, tt.reasonHas)
			}
		})
	}
}

func TestBacklogOf_sourceAddress(t *testing.T) {
	src := &sourceState{Address: "source.db:3306", Flavor: "mariadb", GTID: mustPos(t, "MariaDB/0-1-100")}
	rec := workflow.Record{Pos: "MariaDB/0-1-90", Source: `{"address":"other.db:3306"}`}
	if b := backlogOf(rec, src, false); b.Known || !strings.Contains(b.Reason, "other.db:3306") {
		t.Errorf("another source's workflow: %+v, want unknown naming its source", b)
	}
	if b := backlogOf(rec, src, true); !b.Known || deref(b.Transactions) != int64(10) {
		t.Errorf("the workflow --workflow named: %+v, want 10 transactions behind", b)
	}
	rec.Source = `{"address":"SOURCE.db:3306"}`
	if b := backlogOf(rec, src, false); !b.Known {
		t.Errorf("the same address in another case: %+v, want it compared", b)
	}
}

func TestFormatBytes(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"}, {5 << 20, "5.0 MiB"}, {3 << 30, "3.0 GiB"}, {5 << 40, "5.0 TiB"}} {
		if got := formatBytes(tt.n); got != tt.want {
			t.Errorf("formatBytes(%d)=%q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestStatusReport_exitCode(t *testing.T) {
	rep := func(states ...string) *statusReport {
		r := &statusReport{}
		for _, s := range states {
			r.Workflows = append(r.Workflows, workflowStatus{Rec: workflow.Record{State: s}})
		}
		return r
	}
	tests := []struct {
		states []string
		want   int
	}{
		{nil, ExitOK},
		{[]string{workflow.StateRunning, workflow.StateCopying, workflow.StateInit}, ExitOK},
		{[]string{workflow.StateRunning, workflow.StateStopped}, ExitStatusStopped},
		{[]string{workflow.StateStopped, workflow.StateError, workflow.StateRunning}, ExitStatusError},
		{[]string{"Frozen"}, ExitError},
		{[]string{"Frozen", workflow.StateStopped}, ExitStatusStopped},
	}
	for _, tt := range tests {
		if got := rep(tt.states...).exitCode(); got != tt.want {
			t.Errorf("exit code of %v=%d, want %d", tt.states, got, tt.want)
		}
	}
	if ExitStatusError == ExitStatusStopped || ExitStatusStopped == ExitStatusNotFound || ExitStatusError == ExitError || ExitStatusNotFound == ExitUsage {
		t.Error("status's exit codes are not distinct")
	}
}
