package workflow_test

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/vplayer/vplayer/internal/mysqld/mysqltest"
	"github.com/vplayer/vplayer/workflow"
)

func TestMain(m *testing.M) {
	code := mysqltest.Run(m)
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// newStore returns an initialised store in a sidecar database of the test's own, and a pool on
// that database.
func newStore(t *testing.T) (*workflow.Store, *sql.DB) {
	t.Helper()
	_, target := mysqltest.Pair(t)
	sidecar := mysqltest.DBName(t) + "_vt"
	if len(sidecar) > 64 {
		t.Fatalf("sidecar name %q is longer than 64 characters: shorten the test name", sidecar)
	}
	db := mysqltest.DB(t, target, sidecar)
	s := workflow.New(db, sidecar)
	if err := s.Init(t.Context()); err != nil {
		t.Fatalf("Init: %v", err)
	}
	return s, db
}

func newRecord(name string) workflow.Record {
	return workflow.Record{
		Workflow: name,
		Source:   `{"address":"127.0.0.1:3306","user":"repl","flavor":"mariadb","database":"shop","tables":["orders"]}`,
		Pos:      "MariaDB/0-1-100",
		DBName:   "shop_copy",
		Options:  `{"on_ddl":"ignore"}`,
	}
}

func mustCreate(t *testing.T, s *workflow.Store, r workflow.Record) workflow.Record {
	t.Helper()
	got, created, err := s.Create(t.Context(), r)
	if err != nil {
		t.Fatalf("Create(%s): %v", r.Workflow, err)
	}
	if !created {
		t.Fatalf("Create(%s) created=false, want true", r.Workflow)
	}
	return got
}

func mustGet(t *testing.T, s *workflow.Store, name string) workflow.Record {
	t.Helper()
	r, err := s.Get(t.Context(), name)
	if err != nil {
		t.Fatalf("Get(%s): %v", name, err)
	}
	return r
}

func TestStore_Init(t *testing.T) {
	s, db := newStore(t)
	// Twice more, over existing tables and a record.
	mustCreate(t, s, newRecord("w"))
	for i := 0; i < 2; i++ {
		if err := s.Init(t.Context()); err != nil {
			t.Fatalf("Init again (%d): %v", i+1, err)
		}
	}
	var n int
	if err := db.QueryRowContext(t.Context(),
		"SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = ? AND table_name IN ('vreplication', 'vreplication_log')",
		s.Sidecar()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if got, want := n, 2; got != want {
		t.Errorf("sidecar tables=%d, want %d", got, want)
	}
	if got := mustGet(t, s, "w"); got.Workflow != "w" {
		t.Errorf("record after Init=%+v, want workflow w kept", got)
	}
}

// TestStore_InitQuotedSidecar uses a sidecar name that needs quoting.
func TestStore_InitQuotedSidecar(t *testing.T) {
	_, target := mysqltest.Pair(t)
	sidecar := mysqltest.DBName(t) + "-v`t"
	db := mysqltest.DB(t, target, sidecar)
	s := workflow.New(db, sidecar)
	for i := 0; i < 2; i++ {
		if err := s.Init(t.Context()); err != nil {
			t.Fatalf("Init (%d): %v", i+1, err)
		}
	}
	r := mustCreate(t, s, newRecord("w"))
	if err := s.SetState(t.Context(), r.ID, workflow.StateRunning, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.AddLog(t.Context(), r.ID, "State Changed", workflow.StateRunning, "started"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(t.Context(), s.PositionSQL(r.ID, "MariaDB/0-1-101", 10, 9)); err != nil {
		t.Fatal(err)
	}
	if got, want := mustGet(t, s, "w").Pos, "MariaDB/0-1-101"; got != want {
		t.Errorf("pos=%q, want %q", got, want)
	}
}

func TestStore_Create(t *testing.T) {
	s, _ := newStore(t)
	before := time.Now().Unix()
	in := newRecord("orders")
	in.StopPos = "MariaDB/0-1-200"
	first, created, err := s.Create(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !created {
		t.Errorf("first Create created=false, want true")
	}
	if first.ID <= 0 {
		t.Errorf("ID=%d, want > 0", first.ID)
	}
	want := in
	want.ID = first.ID
	want.State = workflow.StateInit
	want.TimeUpdated = first.TimeUpdated
	if first != want {
		t.Errorf("Create()=%+v, want %+v", first, want)
	}
	if first.TimeUpdated < before || first.TimeUpdated > time.Now().Unix() {
		t.Errorf("TimeUpdated=%d, want between %d and now", first.TimeUpdated, before)
	}

	// The same workflow again, with a different position: the record stands.
	again := in
	again.Pos = "MariaDB/0-1-999"
	again.Source = `{}`
	again.StopPos = ""
	second, created, err := s.Create(t.Context(), again)
	if err != nil {
		t.Fatal(err)
	}
	if created {
		t.Errorf("second Create created=true, want false")
	}
	if second != first {
		t.Errorf("second Create()=%+v, want the existing record %+v", second, first)
	}
	if got := mustGet(t, s, "orders"); got != first {
		t.Errorf("Get after second Create=%+v, want %+v", got, first)
	}

	// Another workflow gets its own record.
	other := mustCreate(t, s, newRecord("customers"))
	if other.ID == first.ID {
		t.Errorf("second workflow's ID=%d, same as the first's", other.ID)
	}
	if got, want := other.StopPos, ""; got != want {
		t.Errorf("StopPos without a stop position=%q, want %q", got, want)
	}
}

func TestStore_Get(t *testing.T) {
	s, _ := newStore(t)
	mustCreate(t, s, newRecord("known"))
	for _, tt := range []struct {
		name     string
		workflow string
	}{
		{"unknown", "unknown"},
		{"empty", ""},
		{"case differs", "KNOWN"},
		{"trailing space", "known "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Get(t.Context(), tt.workflow)
			if !errors.Is(err, workflow.ErrNotFound) {
				t.Fatalf("Get(%q) error=%v, want ErrNotFound", tt.workflow, err)
			}
			if tt.workflow != "" && !strings.Contains(err.Error(), tt.workflow) {
				t.Errorf("Get(%q) error=%q, want it to name the workflow", tt.workflow, err)
			}
		})
	}
}

func TestStore_GetWithoutInit(t *testing.T) {
	_, target := mysqltest.Pair(t)
	sidecar := mysqltest.DBName(t) + "_vt"
	db := mysqltest.DB(t, target, sidecar)
	_, err := workflow.New(db, sidecar).Get(t.Context(), "w")
	if err == nil || errors.Is(err, workflow.ErrNotFound) {
		t.Errorf("Get without tables error=%v, want a read error that is not ErrNotFound", err)
	}
}

func TestStore_SetState(t *testing.T) {
	s, db := newStore(t)
	r := mustCreate(t, s, newRecord("w"))
	other := mustCreate(t, s, newRecord("other"))
	if _, err := db.ExecContext(t.Context(), "UPDATE vreplication SET time_updated = 1 WHERE id = ?", r.ID); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Unix()
	if err := s.SetState(t.Context(), r.ID, workflow.StateRunning, "running\nnow"); err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, s, "w")
	if got.State != workflow.StateRunning || got.Message != "running\nnow" {
		t.Errorf("after SetState: state=%q message=%q, want %q %q", got.State, got.Message, workflow.StateRunning, "running\nnow")
	}
	if got.TimeUpdated < before {
		t.Errorf("after SetState: time_updated=%d, want at least %d", got.TimeUpdated, before)
	}
	state, err := s.StateOf(t.Context(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if state != workflow.StateRunning {
		t.Errorf("StateOf=%q, want %q", state, workflow.StateRunning)
	}

	if err := s.SetMessage(t.Context(), r.ID, "stalled"); err != nil {
		t.Fatal(err)
	}
	got = mustGet(t, s, "w")
	if got.State != workflow.StateRunning || got.Message != "stalled" {
		t.Errorf("after SetMessage: state=%q message=%q, want %q %q", got.State, got.Message, workflow.StateRunning, "stalled")
	}

	for _, state := range []string{workflow.StateStopped, workflow.StateError, workflow.StateInit} {
		if err := s.SetState(t.Context(), r.ID, state, ""); err != nil {
			t.Fatal(err)
		}
		if got, err := s.StateOf(t.Context(), r.ID); err != nil || got != state {
			t.Errorf("StateOf after SetState(%s)=%q, %v, want %q", state, got, err, state)
		}
	}
	if got := mustGet(t, s, "w").Message; got != "" {
		t.Errorf("message after SetState with an empty message=%q, want empty", got)
	}
	// The other record is untouched.
	if got := mustGet(t, s, "other"); got != other {
		t.Errorf("other record=%+v, want unchanged %+v", got, other)
	}
	if _, err := s.StateOf(t.Context(), 999999); err == nil {
		t.Errorf("StateOf(unknown id) error=nil, want an error")
	}
}

func TestStore_SetMessageLong(t *testing.T) {
	s, _ := newStore(t)
	r := mustCreate(t, s, newRecord("w"))
	msg := numbered(5000)
	for _, set := range []struct {
		name string
		fn   func() error
	}{
		{"SetMessage", func() error { return s.SetMessage(t.Context(), r.ID, msg) }},
		{"SetState", func() error { return s.SetState(t.Context(), r.ID, workflow.StateError, msg) }},
	} {
		t.Run(set.name, func(t *testing.T) {
			if err := set.fn(); err != nil {
				t.Fatalf("%s(5000 bytes): %v", set.name, err)
			}
			got := mustGet(t, s, "w").Message
			if len(got) > workflow.MaxMessageBytes {
				t.Errorf("stored message is %d bytes, want at most %d", len(got), workflow.MaxMessageBytes)
			}
			if tail := msg[len(msg)-200:]; !strings.HasSuffix(got, tail) {
				t.Errorf("stored message ends %q, want the tail %q", got[len(got)-50:], tail[150:])
			}
			if head := msg[:200]; !strings.HasPrefix(got, head) {
				t.Errorf("stored message starts %q, want the head %q", got[:50], head[:50])
			}
			if !strings.Contains(got, mark) {
				t.Errorf("stored message lacks %q", mark)
			}
		})
	}
}

func TestStore_Configure(t *testing.T) {
	s, _ := newStore(t)
	r := mustCreate(t, s, newRecord("w"))
	if err := s.Configure(t.Context(), r.ID, `{"database":"db2"}`, `{"x":1}`, "MariaDB/0-1-500"); err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, s, "w")
	if got.Source != `{"database":"db2"}` || got.Options != `{"x":1}` || got.StopPos != "MariaDB/0-1-500" {
		t.Errorf("after Configure: source=%q options=%q stop_pos=%q", got.Source, got.Options, got.StopPos)
	}
	if got.Pos != r.Pos || got.State != r.State {
		t.Errorf("Configure changed pos/state to %q/%q, want %q/%q", got.Pos, got.State, r.Pos, r.State)
	}
	if err := s.Configure(t.Context(), r.ID, `{}`, `{}`, ""); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, "w").StopPos; got != "" {
		t.Errorf("StopPos after Configure without one=%q, want empty", got)
	}
}

type logRow struct {
	typ, state, message string
	count               int
}

func logRows(t *testing.T, db *sql.DB, id int64) []logRow {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), "SELECT type, state, message, count FROM vreplication_log WHERE vrepl_id = ? ORDER BY id", id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []logRow
	for rows.Next() {
		var r logRow
		if err := rows.Scan(&r.typ, &r.state, &r.message, &r.count); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func equalRows(a, b []logRow) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestStore_AddLog(t *testing.T) {
	s, db := newStore(t)
	r := mustCreate(t, s, newRecord("w"))
	other := mustCreate(t, s, newRecord("other"))
	const typ = "Error"
	steps := []struct {
		name    string
		id      int64
		typ     string
		state   string
		message string
		want    []logRow // rows of r after the step
	}{
		{"first", r.ID, typ, workflow.StateRunning, "boom", []logRow{
			{typ, workflow.StateRunning, "boom", 1}}},
		{"repeat increments", r.ID, typ, workflow.StateRunning, "boom", []logRow{
			{typ, workflow.StateRunning, "boom", 2}}},
		{"another workflow's row does not count", other.ID, typ, workflow.StateRunning, "bang", []logRow{
			{typ, workflow.StateRunning, "boom", 2}}},
		{"repeat after another workflow's row still increments", r.ID, typ, workflow.StateRunning, "boom", []logRow{
			{typ, workflow.StateRunning, "boom", 3}}},
		{"different message adds a row", r.ID, typ, workflow.StateRunning, "bang", []logRow{
			{typ, workflow.StateRunning, "boom", 3},
			{typ, workflow.StateRunning, "bang", 1}}},
		{"first message again adds a row", r.ID, typ, workflow.StateRunning, "boom", []logRow{
			{typ, workflow.StateRunning, "boom", 3},
			{typ, workflow.StateRunning, "bang", 1},
			{typ, workflow.StateRunning, "boom", 1}}},
		{"different state adds a row", r.ID, typ, workflow.StateError, "boom", []logRow{
			{typ, workflow.StateRunning, "boom", 3},
			{typ, workflow.StateRunning, "bang", 1},
			{typ, workflow.StateRunning, "boom", 1},
			{typ, workflow.StateError, "boom", 1}}},
		{"different type adds a row", r.ID, "State Changed", workflow.StateError, "boom", []logRow{
			{typ, workflow.StateRunning, "boom", 3},
			{typ, workflow.StateRunning, "bang", 1},
			{typ, workflow.StateRunning, "boom", 1},
			{typ, workflow.StateError, "boom", 1},
			{"State Changed", workflow.StateError, "boom", 1}}},
	}
	for _, st := range steps {
		if err := s.AddLog(t.Context(), st.id, st.typ, st.state, st.message); err != nil {
			t.Fatalf("%s: AddLog: %v", st.name, err)
		}
		if got := logRows(t, db, r.ID); !equalRows(got, st.want) {
			t.Fatalf("%s: log rows=%+v, want %+v", st.name, got, st.want)
		}
	}
	if got, want := logRows(t, db, other.ID), []logRow{{typ, workflow.StateRunning, "bang", 1}}; !equalRows(got, want) {
		t.Errorf("other workflow's log rows=%+v, want %+v", got, want)
	}
}

// TestStore_AddLogExactMessage checks that only an exact repeat counts: messages that differ in
// case, accents or trailing spaces are different messages.
func TestStore_AddLogExactMessage(t *testing.T) {
	tests := []struct {
		name   string
		first  string
		second string
	}{
		{"case", "Unknown table Orders", "Unknown table orders"},
		{"trailing space", "lock wait timeout", "lock wait timeout "},
		{"accent", "table café", "table cafe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, db := newStore(t)
			r := mustCreate(t, s, newRecord("w"))
			for _, m := range []string{tt.first, tt.second} {
				if err := s.AddLog(t.Context(), r.ID, "Error", workflow.StateRunning, m); err != nil {
					t.Fatalf("AddLog(%q): %v", m, err)
				}
			}
			want := []logRow{{"Error", workflow.StateRunning, tt.first, 1}, {"Error", workflow.StateRunning, tt.second, 1}}
			if got := logRows(t, db, r.ID); !equalRows(got, want) {
				t.Errorf("log rows=%+v, want %+v", got, want)
			}
		})
	}
}

func TestStore_AddLogLong(t *testing.T) {
	tests := []struct {
		name string
		msg  string
	}{
		{"ascii", numbered(5000)},
		{"2-byte utf8", "error: " + strings.Repeat("é", 2500)},
		{"4-byte utf8", "error: " + strings.Repeat("😀", 1500)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, db := newStore(t)
			r := mustCreate(t, s, newRecord("w"))
			for i := 0; i < 2; i++ {
				if err := s.AddLog(t.Context(), r.ID, "Error", workflow.StateRunning, tt.msg); err != nil {
					t.Fatalf("AddLog(%d bytes) #%d: %v", len(tt.msg), i+1, err)
				}
			}
			rows := logRows(t, db, r.ID)
			if len(rows) != 1 {
				t.Fatalf("log rows=%d, want 1 (the repeat increments)", len(rows))
			}
			if got, want := rows[0].count, 2; got != want {
				t.Errorf("count=%d, want %d", got, want)
			}
			if got := rows[0].message; len(got) > workflow.MaxMessageBytes || !strings.HasSuffix(got, tt.msg[len(tt.msg)-100:]) {
				t.Errorf("logged message is %d bytes ending %q, want at most %d ending with the message's tail",
					len(got), got[max(0, len(got)-20):], workflow.MaxMessageBytes)
			}
		})
	}
}

func TestStore_PositionSQL(t *testing.T) {
	s, db := newStore(t)
	r := mustCreate(t, s, newRecord("w"))
	other := mustCreate(t, s, newRecord("other"))
	// A running workflow with the message of an error it got past: progress clears it.
	if err := s.SetState(t.Context(), r.ID, workflow.StateRunning, "relay log I/O stalled"); err != nil {
		t.Fatal(err)
	}
	r = mustGet(t, s, "w")
	steps := []struct {
		name   string
		pos    string
		now    int64
		txTime int64
		wantTx int64
	}{
		{"with a commit time", "MySQL56/3e11fa47-71ca-11e1-9e33-c80aa9429562:1-100", 1700000100, 1700000090, 1700000090},
		{"without a commit time keeps the previous one", "FilePos/binlog.000003:1234", 1700000200, 0, 1700000090},
		{"position needing escapes", `MariaDB/0-1-5'\` + "\x00", 1700000300, 1700000299, 1700000299},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			tx, err := db.BeginTx(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			q := s.PositionSQL(r.ID, st.pos, st.now, st.txTime)
			if _, err := tx.ExecContext(t.Context(), q); err != nil {
				tx.Rollback()
				t.Fatalf("%s: %v", q, err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			got := mustGet(t, s, "w")
			if got.Pos != st.pos || got.TimeUpdated != st.now || got.TransactionTimestamp != st.wantTx || got.Message != "" {
				t.Errorf("after PositionSQL: pos=%q time_updated=%d transaction_timestamp=%d message=%q, want %q %d %d %q",
					got.Pos, got.TimeUpdated, got.TransactionTimestamp, got.Message, st.pos, st.now, st.wantTx, "")
			}
			if got.State != r.State || got.TimeHeartbeat != r.TimeHeartbeat {
				t.Errorf("PositionSQL changed state/time_heartbeat to %q/%d", got.State, got.TimeHeartbeat)
			}
		})
	}
	if got := mustGet(t, s, "other"); got != other {
		t.Errorf("other record=%+v, want unchanged %+v", got, other)
	}

	// A rolled back transaction leaves the position alone.
	before := mustGet(t, s, "w")
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(t.Context(), s.PositionSQL(r.ID, "MariaDB/0-1-9999", 1800000000, 1800000000)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, "w"); got != before {
		t.Errorf("after rollback: %+v, want %+v", got, before)
	}
}

func TestStore_HeartbeatSQL(t *testing.T) {
	s, db := newStore(t)
	r := mustCreate(t, s, newRecord("w"))
	other := mustCreate(t, s, newRecord("other"))
	// A running workflow with the message of an error it got past: progress clears it.
	if err := s.SetState(t.Context(), r.ID, workflow.StateRunning, "failed to record heartbeat"); err != nil {
		t.Fatal(err)
	}
	r = mustGet(t, s, "w")
	const now = 1700000500
	if _, err := db.ExecContext(t.Context(), s.HeartbeatSQL(r.ID, now)); err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, s, "w")
	if got.TimeHeartbeat != now || got.TimeUpdated != now || got.Message != "" {
		t.Errorf("after HeartbeatSQL: time_heartbeat=%d time_updated=%d message=%q, want %d %d %q",
			got.TimeHeartbeat, got.TimeUpdated, got.Message, now, now, "")
	}
	if got.Pos != r.Pos || got.TransactionTimestamp != r.TransactionTimestamp || got.State != r.State {
		t.Errorf("HeartbeatSQL changed pos/transaction_timestamp/state to %q/%d/%q", got.Pos, got.TransactionTimestamp, got.State)
	}
	if got := mustGet(t, s, "other"); got != other {
		t.Errorf("other record=%+v, want unchanged %+v", got, other)
	}
}

func TestStore_List(t *testing.T) {
	s, _ := newStore(t)
	recs, err := s.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 0 {
		t.Errorf("List of an empty store=%+v, want none", recs)
	}
	var want []workflow.Record
	for _, name := range []string{"zeta", "alpha", "mu"} {
		want = append(want, mustCreate(t, s, newRecord(name)))
	}
	// Changing a record does not move it.
	if err := s.SetState(t.Context(), want[0].ID, workflow.StateRunning, ""); err != nil {
		t.Fatal(err)
	}
	want[0] = mustGet(t, s, "zeta")
	recs, err = s.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(want) {
		t.Fatalf("List()=%d records, want %d", len(recs), len(want))
	}
	for i := range want {
		if recs[i] != want[i] {
			t.Errorf("List()[%d]=%+v, want %+v", i, recs[i], want[i])
		}
		if i > 0 && recs[i].ID <= recs[i-1].ID {
			t.Errorf("List() ids %d then %d, want increasing", recs[i-1].ID, recs[i].ID)
		}
	}
}
