package mysqltest

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/vplayer/vplayer/internal/mysqld"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	code := Run(m)
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

func TestPair(t *testing.T) {
	src, dst := Pair(t)
	src2, dst2 := Pair(t)
	if src != src2 || dst != dst2 {
		t.Errorf("second Pair()=(%p, %p), want the same servers (%p, %p)", src2, dst2, src, dst)
	}
	if src.Port() == dst.Port() {
		t.Errorf("source and target share port %d", src.Port())
	}
	for _, tt := range []struct {
		name      string
		db        string
		query     string
		wantValue string
	}{
		{"source log_bin", "source", "SELECT @@log_bin", "1"},
		{"source binlog_format", "source", "SELECT @@binlog_format", "ROW"},
		{"source server_id", "source", "SELECT @@server_id", "1"},
		{"target log_bin", "target", "SELECT @@log_bin", "0"},
		{"target server_id", "target", "SELECT @@server_id", "2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := src
			if tt.db == "target" {
				s = dst
			}
			db, err := s.DB("")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var got string
			if err := db.QueryRowContext(t.Context(), tt.query).Scan(&got); err != nil {
				t.Fatalf("%s: %v", tt.query, err)
			}
			if got != tt.wantValue {
				t.Errorf("%s on %s=%q, want %q", tt.query, tt.db, got, tt.wantValue)
			}
		})
	}
}

func TestDB(t *testing.T) {
	src, _ := Pair(t)
	name := DBName(t)
	db := DB(t, src, name)
	if _, err := db.ExecContext(t.Context(), "CREATE TABLE t (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := db.QueryRowContext(t.Context(), "SELECT DATABASE()").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := name; got != want {
		t.Errorf("DATABASE()=%q, want %q", got, want)
	}

	// A second DB call starts from an empty database.
	db = DB(t, src, name)
	var n int
	if err := db.QueryRowContext(t.Context(),
		"SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = ?", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if got, want := n, 0; got != want {
		t.Errorf("tables after recreating %s=%d, want %d", name, got, want)
	}
}

// TestPair_noGoroutines checks that running servers own no goroutines, so that tests sharing
// them can check for leaks with goleak.
func TestPair_noGoroutines(t *testing.T) {
	src, dst := Pair(t)
	for _, s := range []*mysqld.Server{src, dst} {
		db, err := s.DB("")
		if err != nil {
			t.Fatal(err)
		}
		if err := db.PingContext(t.Context()); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	goleak.VerifyNone(t)
}

func TestDBName(t *testing.T) {
	long := "TestSomething/" + strings.Repeat("sub_test_with_a_long_name/", 4)
	tests := []struct {
		name     string
		testName string
		want     string
	}{
		{"plain", "TestApply", "t_testapply"},
		{"subtest", "TestApply/Insert_Row-2", "t_testapply_insert_row_2"},
		{"non-ascii", "TestÉtat", "t_test_tat"},
		{"exactly 64", strings.Repeat("a", 62), "t_" + strings.Repeat("a", 62)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := dbName(tt.testName); got != tt.want {
				t.Errorf("dbName(%q)=%q, want %q", tt.testName, got, tt.want)
			}
		})
	}

	got := dbName(long)
	if len(got) != maxIdent {
		t.Errorf("len(dbName(long))=%d, want %d", len(got), maxIdent)
	}
	if want := "t_testsomething_sub_test_with_a_long_name_sub_test_with_"; !strings.HasPrefix(got, want) {
		t.Errorf("dbName(long)=%q, want prefix %q", got, want)
	}
	if other := dbName(long + "x"); other == got {
		t.Errorf("dbName of two long names sharing a prefix are both %q", got)
	}
	if got, want := DBName(t), "t_testdbname"; got != want {
		t.Errorf("DBName(t)=%q, want %q", got, want)
	}
}
