package mysqld

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/vplayer/vplayer/internal/eventually"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// needBinary skips the test when no server binary is installed, unless VPLAYER_REQUIRE_MYSQL=1
// (as in CI): then it fails. (mysqltest has the same rule; it cannot be imported from here.)
func needBinary(t *testing.T) {
	t.Helper()
	_, err := Find()
	switch {
	case err == nil:
	case errors.Is(err, ErrNotFound) && os.Getenv("VPLAYER_REQUIRE_MYSQL") != "1":
		t.Skipf("%v (set VPLAYER_REQUIRE_MYSQL=1 to fail instead)", err)
	default:
		t.Fatalf("%v", err)
	}
}

// startServer starts a server stopped at the test's end.
func startServer(t *testing.T, opts Options) *Server {
	t.Helper()
	needBinary(t)
	begin := time.Now()
	s, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("Start(%+v): %v", opts, err)
	}
	t.Logf("%s (%s) started on %s in %v", s.Name(), s.Version(), s.Addr(), time.Since(begin).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("Stop(): %v", err)
		}
	})
	return s
}

func openDB(t *testing.T, s *Server, db string) *sql.DB {
	t.Helper()
	d, err := s.DB(db)
	if err != nil {
		t.Fatalf("DB(%q): %v", db, err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func queryString(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	var v sql.NullString
	if err := db.QueryRowContext(t.Context(), q).Scan(&v); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v.String
}

func mustExec(t *testing.T, db *sql.DB, qs ...string) {
	t.Helper()
	for _, q := range qs {
		if _, err := db.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func TestStart_source(t *testing.T) {
	s := startServer(t, Options{Name: "source", Binlog: true})
	db := openDB(t, s, "")

	if got, want := s.Addr(), "127.0.0.1:"+strconv.Itoa(s.Port()); got != want {
		t.Errorf("Addr()=%q, want %q", got, want)
	}
	if got, want := s.DSN("d"), "root@tcp("+s.Addr()+")/d?parseTime=false"; got != want {
		t.Errorf("DSN(d)=%q, want %q", got, want)
	}
	for _, tt := range []struct{ query, want string }{
		{"SELECT @@log_bin", "1"},
		{"SELECT @@binlog_format", "ROW"},
		{"SELECT @@binlog_row_image", "FULL"},
		{"SELECT @@binlog_row_metadata", "FULL"},
		{"SELECT @@server_id", "1"},
		{"SELECT @@port", strconv.Itoa(s.Port())},
		{"SELECT @@performance_schema", "0"},
		{"SELECT @@innodb_flush_log_at_trx_commit", "2"},
		{"SELECT @@character_set_server", "utf8mb4"},
		{"SELECT @@max_connections", "200"},
		{"SELECT CURRENT_USER()", "root@127.0.0.1"},
	} {
		if got := queryString(t, db, tt.query); got != tt.want {
			t.Errorf("%s=%q, want %q", tt.query, got, tt.want)
		}
	}
	if got := queryString(t, db, "SHOW GRANTS FOR 'root'@'%'"); !strings.Contains(got, "ALL PRIVILEGES ON *.* TO") || !strings.Contains(got, "WITH GRANT OPTION") {
		t.Errorf("SHOW GRANTS FOR root@%%=%q, want ALL PRIVILEGES ... WITH GRANT OPTION", got)
	}

	// The init file's account statements stay out of the binlog: it starts empty.
	before, err := s.GTIDPos(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := before, ""; got != want {
		t.Errorf("GTIDPos() before any write=%q, want %q", got, want)
	}
	mustExec(t, db, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)", "INSERT INTO d.t VALUES (1)")
	after, err := s.GTIDPos(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if after == "" {
		t.Errorf("GTIDPos() after a write is empty")
	}
	if s.Flavor() == FlavorMariaDB {
		if got, want := queryString(t, db, "SELECT @@gtid_binlog_pos"), "0-1-3"; got != want {
			t.Errorf("@@gtid_binlog_pos after three writes=%q, want %q", got, want)
		}
	}

	root := filepath.Dir(s.DataDir())
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop()=%v", err)
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Stop, stat %s: %v, want not exist", root, err)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("second Stop()=%v, want nil", err)
	}
}

func TestStart_target(t *testing.T) {
	s := startServer(t, Options{Name: "target", ServerID: 2, Durable: true})
	db := openDB(t, s, "")
	for _, tt := range []struct{ query, want string }{
		{"SELECT @@log_bin", "0"},
		{"SELECT @@server_id", "2"},
		{"SELECT @@innodb_flush_log_at_trx_commit", "1"},
		{"SELECT @@sync_binlog", "1"},
	} {
		if got := queryString(t, db, tt.query); got != tt.want {
			t.Errorf("%s=%q, want %q", tt.query, got, tt.want)
		}
	}
}

func TestServer_Kill(t *testing.T) {
	s := startServer(t, Options{Name: "killed"})
	pid := s.proc.pid
	s.Kill()
	if got, want := processGone(pid), true; got != want {
		t.Errorf("after Kill, process %d gone=%v, want %v", pid, got, want)
	}
	if _, err := os.Stat(filepath.Dir(s.DataDir())); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Kill, stat temp dir: %v, want not exist", err)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("Stop() after Kill=%v, want nil", err)
	}
}

func TestServer_ReplicateFrom(t *testing.T) {
	needBinary(t)
	type result struct {
		s   *Server
		err error
	}
	// Start both at once, as the benchmark does.
	ch := make(chan result, 2)
	for _, o := range []Options{{Name: "src", Binlog: true}, {Name: "replica", ServerID: 2}} {
		go func() {
			s, err := Start(t.Context(), o)
			ch <- result{s, err}
		}()
	}
	var servers []*Server
	for range 2 {
		r := <-ch
		if r.err != nil {
			t.Error(r.err)
			continue
		}
		servers = append(servers, r.s)
		t.Cleanup(func() { r.s.Stop() })
	}
	if t.Failed() {
		t.FailNow()
	}
	src, replica := servers[0], servers[1]
	if src.Name() != "src" {
		src, replica = replica, src
	}
	if src.Flavor() != FlavorMariaDB {
		t.Skipf("replica methods are MariaDB only; server is %s", src.Flavor())
	}
	srcDB := openDB(t, src, "")
	mustExec(t, srcDB, "CREATE DATABASE skipped") // before the position: not replicated
	pos, err := src.GTIDPos(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, srcDB, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)", "INSERT INTO d.t VALUES (1), (2)")

	if err := replica.ReplicateFrom(t.Context(), src, pos); err != nil {
		t.Fatalf("ReplicateFrom(%q)=%v", pos, err)
	}
	if err := replica.StartReplica(t.Context()); err != nil {
		t.Fatalf("StartReplica()=%v", err)
	}
	replicaDB := openDB(t, replica, "")
	want, err := src.GTIDPos(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	eventually.Must(t, 30*time.Second, 20*time.Millisecond, "the replica's @@gtid_slave_pos to reach "+want, func() error {
		if got := queryString(t, replicaDB, "SELECT @@gtid_slave_pos"); got != want {
			return fmt.Errorf("@@gtid_slave_pos %q", got)
		}
		return nil
	})
	if got, want := queryString(t, replicaDB, "SELECT COUNT(*) FROM d.t"), "2"; got != want {
		t.Errorf("replicated rows=%s, want %s", got, want)
	}
	if got, want := queryString(t, replicaDB, "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = 'skipped'"), "0"; got != want {
		t.Errorf("databases created before the position on the replica=%s, want %s", got, want)
	}
	if err := replica.StopReplica(t.Context()); err != nil {
		t.Errorf("StopReplica()=%v", err)
	}
	if err := replica.ReplicateFrom(t.Context(), src, "0-1-1'; DROP"); err == nil {
		t.Errorf("ReplicateFrom with a malformed position: got nil error")
	}
}

// helperEnv makes the test binary, run by TestStart_diesWithParent, start a server, print its
// pid and temp dir, and wait to be killed.
const helperEnv = "VPLAYER_MYSQLD_TEST_HELPER"

func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	s, err := Start(context.Background(), Options{Name: "orphan"})
	if err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("started %d %s\n", s.proc.pid, filepath.Dir(s.DataDir()))
	time.Sleep(time.Minute)
	os.Exit(1)
}

func TestStart_diesWithParent(t *testing.T) {
	needBinary(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read helper output: %v", err)
	}
	var pid int
	var dir string
	if _, err := fmt.Sscanf(line, "started %d %s", &pid, &dir); err != nil {
		t.Fatalf("helper said %q: %v", line, err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })

	if !processAlive(pid) {
		t.Fatalf("server %d not running while its parent is", pid)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if got, want := processGone(pid), true; got != want {
		t.Errorf("server %d gone after its parent was SIGKILLed=%v, want %v", pid, got, want)
	}
}

// processGone waits up to 10s for pid to stop running (a zombie no longer runs).
func processGone(pid int) bool {
	return eventually.Wait(10*time.Second, 20*time.Millisecond, func() error {
		if processAlive(pid) {
			return errors.New("running")
		}
		return nil
	}) == nil
}

// processAlive reports whether pid exists and is not a zombie.
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(s[i+1:], " Z") && !strings.HasPrefix(s[i+1:], " X")
}

func TestStart_serverFails(t *testing.T) {
	needBinary(t)
	_, err := Start(t.Context(), Options{Name: "broken", ExtraArgs: []string{"--no-such-option=1"}})
	if err == nil {
		t.Fatal("Start with an unknown option: got nil error")
	}
	// The error carries the tail of the server's error log.
	if !strings.Contains(err.Error(), "no-such-option") {
		t.Errorf("Start error %q does not quote the error log", err)
	}
	if testing.Verbose() {
		t.Logf("error: %v", err)
	}
	left, err := filepath.Glob(filepath.Join(tempBase(), tempPrefix+"broken-*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("temporary directories left after a failed start: %v", left)
	}
}

// TestServer_Restart: a restart keeps the data directory, the port and committed rows, and the
// old process is gone.
func TestServer_Restart(t *testing.T) {
	s := startServer(t, Options{Name: "restarted", Binlog: true})
	db := openDB(t, s, "")
	ctx := t.Context()
	for _, q := range []string{"CREATE DATABASE r", "CREATE TABLE r.t (id INT PRIMARY KEY)", "INSERT INTO r.t VALUES (1), (2)"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	pid, port := s.proc.pid, s.Port()
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if !processGone(pid) {
		t.Errorf("after Restart, old process %d still running", pid)
	}
	if got := s.Port(); got != port {
		t.Errorf("after Restart, port %d, want %d", got, port)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM r.t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("after Restart, %d rows, want 2", n)
	}
}
