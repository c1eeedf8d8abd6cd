package binlog

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

const (
	uuidA = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	uuidB = "8a94f357-aab4-11df-86ab-c80aa9429562"
)

// mustParse parses s with ParsePosition and fails the test on error.
func mustParse(t *testing.T, s, serverFlavor string) Position {
	t.Helper()
	p, err := ParsePosition(s, serverFlavor)
	if err != nil {
		t.Fatalf("ParsePosition(%q, %q): %v", s, serverFlavor, err)
	}
	return p
}

func TestParsePosition(t *testing.T) {
	tests := []struct {
		name         string
		in           string
		serverFlavor string
		wantFlavor   string
		wantString   string
		wantFile     string
		wantOffset   uint32
	}{
		{
			name:       "mariadb one domain",
			in:         "MariaDB/0-1-100",
			wantFlavor: FlavorMariaDB,
			wantString: "MariaDB/0-1-100",
		},
		{
			name:       "mariadb two domains",
			in:         "MariaDB/0-1-100,1-2-5",
			wantFlavor: FlavorMariaDB,
			wantString: "MariaDB/0-1-100,1-2-5",
		},
		{
			name:       "mariadb domains sorted",
			in:         "MariaDB/1-2-5,0-1-100",
			wantFlavor: FlavorMariaDB,
			wantString: "MariaDB/0-1-100,1-2-5",
		},
		{
			name:       "mariadb spaces after commas",
			in:         "MariaDB/0-1-100, 1-2-5,  7-3-1",
			wantFlavor: FlavorMariaDB,
			wantString: "MariaDB/0-1-100,1-2-5,7-3-1",
		},
		{
			name:       "mariadb spaces around commas and new lines",
			in:         "MariaDB/0-1-100 ,\n1-2-5",
			wantFlavor: FlavorMariaDB,
			wantString: "MariaDB/0-1-100,1-2-5",
		},
		{
			name:         "bare mariadb spaces after commas, server flavor mariadb",
			in:           "0-1-100, 1-2-5",
			serverFlavor: mysql.MariaDBFlavor,
			wantFlavor:   FlavorMariaDB,
			wantString:   "MariaDB/0-1-100,1-2-5",
		},
		{
			name:       "bare mariadb spaces after commas, flavor guessed",
			in:         "0-1-100, 1-2-5",
			wantFlavor: FlavorMariaDB,
			wantString: "MariaDB/0-1-100,1-2-5",
		},
		{
			name:       "mariadb empty set",
			in:         "MariaDB/",
			wantFlavor: FlavorMariaDB,
			wantString: "MariaDB/",
		},
		{
			name:         "bare mariadb, server flavor mariadb",
			in:           "0-1-100",
			serverFlavor: mysql.MariaDBFlavor,
			wantFlavor:   FlavorMariaDB,
			wantString:   "MariaDB/0-1-100",
		},
		{
			name:       "bare mariadb two domains, flavor guessed",
			in:         "0-1-100,1-2-5",
			wantFlavor: FlavorMariaDB,
			wantString: "MariaDB/0-1-100,1-2-5",
		},
		{
			name:       "surrounding space trimmed",
			in:         "  MariaDB/0-1-100\n",
			wantFlavor: FlavorMariaDB,
			wantString: "MariaDB/0-1-100",
		},
		{
			name:       "mysql one uuid",
			in:         "MySQL56/" + uuidA + ":1-100",
			wantFlavor: FlavorMySQL,
			wantString: "MySQL56/" + uuidA + ":1-100",
		},
		{
			name:       "mysql two uuids",
			in:         "MySQL56/" + uuidB + ":1-5," + uuidA + ":1-100",
			wantFlavor: FlavorMySQL,
			wantString: "MySQL56/" + uuidA + ":1-100," + uuidB + ":1-5",
		},
		{
			name:       "mysql several intervals",
			in:         "MySQL56/" + uuidA + ":1-10:20-30",
			wantFlavor: FlavorMySQL,
			wantString: "MySQL56/" + uuidA + ":1-10:20-30",
		},
		{
			name:       "mysql empty set",
			in:         "MySQL56/",
			wantFlavor: FlavorMySQL,
			wantString: "MySQL56/",
		},
		{
			name:       "bare mysql, flavor guessed",
			in:         uuidA + ":1-100",
			wantFlavor: FlavorMySQL,
			wantString: "MySQL56/" + uuidA + ":1-100",
		},
		{
			name:         "bare mysql, server flavor mysql",
			in:           uuidA + ":1-100",
			serverFlavor: mysql.MySQLFlavor,
			wantFlavor:   FlavorMySQL,
			wantString:   "MySQL56/" + uuidA + ":1-100",
		},
		{
			name:       "bare mysql, as gtid_executed prints it over lines",
			in:         uuidA + ":1-100,\n" + uuidB + ":1-5",
			wantFlavor: FlavorMySQL,
			wantString: "MySQL56/" + uuidA + ":1-100," + uuidB + ":1-5",
		},
		{
			name:       "file position",
			in:         "FilePos/binlog.000003:1234",
			wantFlavor: FlavorFilePos,
			wantString: "FilePos/binlog.000003:1234",
			wantFile:   "binlog.000003",
			wantOffset: 1234,
		},
		{
			name:       "bare file position",
			in:         "binlog.000003:1234",
			wantFlavor: FlavorFilePos,
			wantString: "FilePos/binlog.000003:1234",
			wantFile:   "binlog.000003",
			wantOffset: 1234,
		},
		{
			name:         "bare file position, server flavor mysql",
			in:           "mysql-bin.000001:4",
			serverFlavor: mysql.MySQLFlavor,
			wantFlavor:   FlavorFilePos,
			wantString:   "FilePos/mysql-bin.000001:4",
			wantFile:     "mysql-bin.000001",
			wantOffset:   4,
		},
		{
			name:         "bare file position, server flavor mariadb",
			in:           "mariadb-bin.000002:4294967295",
			serverFlavor: mysql.MariaDBFlavor,
			wantFlavor:   FlavorFilePos,
			wantString:   "FilePos/mariadb-bin.000002:4294967295",
			wantFile:     "mariadb-bin.000002",
			wantOffset:   4294967295,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePosition(tt.in, tt.serverFlavor)
			if err != nil {
				t.Fatalf("ParsePosition(%q, %q): %v", tt.in, tt.serverFlavor, err)
			}
			if got, want := p.Flavor, tt.wantFlavor; got != want {
				t.Errorf("Flavor = %q, want %q", got, want)
			}
			if got, want := p.String(), tt.wantString; got != want {
				t.Errorf("String() = %q, want %q", got, want)
			}
			if got, want := p.File, tt.wantFile; got != want {
				t.Errorf("File = %q, want %q", got, want)
			}
			if got, want := p.Offset, tt.wantOffset; got != want {
				t.Errorf("Offset = %d, want %d", got, want)
			}
			if got, want := p.IsZero(), false; got != want {
				t.Errorf("IsZero() = %v, want %v", got, want)
			}
			if tt.wantFlavor == FlavorFilePos {
				if p.GTID != nil {
					t.Errorf("GTID = %v, want nil for a file position", p.GTID)
				}
			} else if p.GTID == nil {
				t.Errorf("GTID = nil, want a set")
			}
		})
	}
}

func TestParsePosition_Errors(t *testing.T) {
	tests := []struct {
		name         string
		in           string
		serverFlavor string
		// wantInMsg are substrings the error message must contain: what is wrong, and where.
		wantInMsg []string
	}{
		{name: "empty", in: "", wantInMsg: []string{"empty"}},
		{name: "blank", in: " \t\n", wantInMsg: []string{"empty"}},
		{
			name:      "unknown flavor",
			in:        "Oracle/0-1-100",
			wantInMsg: []string{`unknown flavor "Oracle"`, FlavorMySQL, FlavorMariaDB, FlavorFilePos},
		},
		{
			name:      "flavor in wrong case",
			in:        "mariadb/0-1-100",
			wantInMsg: []string{`unknown flavor "mariadb"`},
		},
		{
			name:      "offset not a number",
			in:        "FilePos/binlog.000003:abc",
			wantInMsg: []string{"binlog.000003:abc", "offset"},
		},
		{
			name:      "offset negative",
			in:        "binlog.000003:-1",
			wantInMsg: []string{"binlog.000003:-1", "offset"},
		},
		{
			name:      "offset before the file header",
			in:        "FilePos/binlog.000003:3",
			wantInMsg: []string{"binlog.000003:3", "at least 4"},
		},
		{
			name:      "offset beyond 32 bits",
			in:        "FilePos/binlog.000003:4294967296",
			wantInMsg: []string{"binlog.000003:4294967296", "offset"},
		},
		{
			name:      "offset missing",
			in:        "binlog.000003:",
			wantInMsg: []string{"binlog.000003:", "offset"},
		},
		{
			name:      "file missing",
			in:        "FilePos/:1234",
			wantInMsg: []string{":1234", "file:offset"},
		},
		{
			name:      "file position without offset",
			in:        "FilePos/binlog.000003",
			wantInMsg: []string{"binlog.000003", "file:offset"},
		},
		{
			name:      "garbage mariadb gtid",
			in:        "MariaDB/0-1-x",
			wantInMsg: []string{"0-1-x", "not a MariaDB GTID set"},
		},
		{
			name:      "mariadb gtid with two parts",
			in:        "MariaDB/0-1",
			wantInMsg: []string{"0-1", "not a MariaDB GTID set"},
		},
		{
			name:      "bare garbage",
			in:        "garbage",
			wantInMsg: []string{"garbage", "GTID set"},
		},
		{
			name:      "garbage mysql gtid",
			in:        "MySQL56/" + uuidA,
			wantInMsg: []string{uuidA, "not a MySQL56 GTID set"},
		},
		{
			name:      "mysql interval backwards",
			in:        "MySQL56/" + uuidA + ":5-1",
			wantInMsg: []string{uuidA + ":5-1", "not a MySQL56 GTID set"},
		},
		{
			name:      "mysql set under mariadb prefix",
			in:        "MariaDB/" + uuidA + ":1-100",
			wantInMsg: []string{"not a MariaDB GTID set"},
		},
		{
			name:      "mariadb set under mysql prefix",
			in:        "MySQL56/0-1-100",
			wantInMsg: []string{"0-1-100", "not a MySQL56 GTID set"},
		},
		{
			name:         "bare mariadb set on a mysql server",
			in:           "0-1-100",
			serverFlavor: mysql.MySQLFlavor,
			wantInMsg:    []string{"0-1-100", "not a MySQL56 GTID set"},
		},
		{
			name:         "bare mysql set on a mariadb server",
			in:           uuidA + ":1-100",
			serverFlavor: mysql.MariaDBFlavor,
			wantInMsg:    []string{"not a MariaDB GTID set"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePosition(tt.in, tt.serverFlavor)
			if err == nil {
				t.Fatalf("ParsePosition(%q, %q) = %q, want an error", tt.in, tt.serverFlavor, p)
			}
			if !errors.Is(err, ErrBadPosition) {
				t.Errorf("ParsePosition(%q) error %q does not wrap ErrBadPosition", tt.in, err)
			}
			for _, want := range tt.wantInMsg {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("ParsePosition(%q) error %q does not contain %q", tt.in, err, want)
				}
			}
			if got, want := p.IsZero(), true; got != want {
				t.Errorf("position returned with the error: IsZero() = %v, want %v", got, want)
			}
		})
	}
}

func TestPosition_String(t *testing.T) {
	emptyMaria, err := mysql.ParseMariadbGTIDSet("")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		p    Position
		want string
	}{
		{name: "zero", p: Position{}, want: ""},
		{name: "gtid flavor without set", p: Position{Flavor: FlavorMariaDB}, want: "MariaDB/"},
		{name: "empty mariadb set", p: Position{Flavor: FlavorMariaDB, GTID: emptyMaria}, want: "MariaDB/"},
		{name: "file position", p: Position{Flavor: FlavorFilePos, File: "binlog.000001", Offset: 4}, want: "FilePos/binlog.000001:4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestPosition_StringRoundTrip checks that what String stores, ParsePosition reads back as the
// same position, whatever server flavor the reader assumes.
func TestPosition_StringRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{name: "mariadb", in: "MariaDB/0-1-100"},
		{name: "mariadb domains", in: "MariaDB/0-1-100,1-2-5,7-3-1"},
		{name: "mariadb empty", in: "MariaDB/"},
		{name: "mysql", in: "MySQL56/" + uuidA + ":1-100"},
		{name: "mysql uuids and intervals", in: "MySQL56/" + uuidA + ":1-10:12-100," + uuidB + ":7"},
		{name: "mysql empty", in: "MySQL56/"},
		{name: "file position", in: "FilePos/binlog.000003:1234"},
	}
	for _, tt := range tests {
		for _, serverFlavor := range []string{"", mysql.MySQLFlavor, mysql.MariaDBFlavor} {
			t.Run(tt.name+"/"+serverFlavor, func(t *testing.T) {
				p := mustParse(t, tt.in, serverFlavor)
				s := p.String()
				if got, want := s, tt.in; got != want {
					t.Errorf("ParsePosition(%q).String() = %q, want %q", tt.in, got, want)
				}
				q := mustParse(t, s, serverFlavor)
				if !q.Equal(p) {
					t.Errorf("ParsePosition(%q) = %q, not Equal to %q", s, q, p)
				}
				if got, want := q.String(), s; got != want {
					t.Errorf("second round trip String() = %q, want %q", got, want)
				}
			})
		}
	}
}

func TestPosition_Contains(t *testing.T) {
	tests := []struct {
		name string
		p, o string
		want bool
	}{
		// MariaDB.
		{name: "mariadb same", p: "MariaDB/0-1-100", o: "MariaDB/0-1-100", want: true},
		{name: "mariadb later contains earlier", p: "MariaDB/0-1-100", o: "MariaDB/0-1-99", want: true},
		{name: "mariadb earlier does not contain later", p: "MariaDB/0-1-99", o: "MariaDB/0-1-100", want: false},
		{name: "mariadb superset of domains", p: "MariaDB/0-1-100,1-2-5", o: "MariaDB/0-1-100", want: true},
		{name: "mariadb missing domain", p: "MariaDB/0-1-100", o: "MariaDB/0-1-100,1-2-5", want: false},
		{name: "mariadb one domain behind", p: "MariaDB/0-1-100,1-2-4", o: "MariaDB/0-1-50,1-2-5", want: false},
		{name: "mariadb every domain ahead", p: "MariaDB/0-1-100,1-2-6", o: "MariaDB/0-1-50,1-2-5", want: true},
		{name: "mariadb anything contains empty", p: "MariaDB/0-1-1", o: "MariaDB/", want: true},
		{name: "mariadb empty contains empty", p: "MariaDB/", o: "MariaDB/", want: true},
		{name: "mariadb empty does not contain any", p: "MariaDB/", o: "MariaDB/0-1-1", want: false},
		// MariaDB orders a domain by sequence number, whichever server wrote it: a failover
		// changes the server id, not the order.
		{name: "mariadb later position written by another server", p: "MariaDB/0-2-200", o: "MariaDB/0-1-100", want: true},
		{name: "mariadb earlier position written by another server", p: "MariaDB/0-1-100", o: "MariaDB/0-2-200", want: false},
		{name: "mariadb same sequence number, another server", p: "MariaDB/0-2-100", o: "MariaDB/0-1-100", want: true},
		{name: "mariadb after a start listing two servers in a domain", p: "MariaDB/0-1-9", o: "MariaDB/0-1-8,0-2-3", want: true},
		{name: "mariadb behind the highest of two servers in a domain", p: "MariaDB/0-1-7", o: "MariaDB/0-1-8,0-2-3", want: false},
		{name: "mariadb two servers in a domain, the highest counts", p: "MariaDB/0-1-8,0-2-3", o: "MariaDB/0-2-5", want: true},
		{name: "mariadb domains compared separately", p: "MariaDB/0-2-200,1-1-5", o: "MariaDB/0-1-100,1-3-6", want: false},
		{name: "mariadb failover in one domain, another domain ahead", p: "MariaDB/0-2-200,1-1-7", o: "MariaDB/0-1-100,1-3-6", want: true},
		// MySQL.
		{name: "mysql same", p: "MySQL56/" + uuidA + ":1-100", o: "MySQL56/" + uuidA + ":1-100", want: true},
		{name: "mysql superset", p: "MySQL56/" + uuidA + ":1-100", o: "MySQL56/" + uuidA + ":1-50", want: true},
		{name: "mysql subset", p: "MySQL56/" + uuidA + ":1-50", o: "MySQL56/" + uuidA + ":1-100", want: false},
		{name: "mysql gap", p: "MySQL56/" + uuidA + ":1-10:12-100", o: "MySQL56/" + uuidA + ":1-20", want: false},
		{name: "mysql other uuid", p: "MySQL56/" + uuidA + ":1-100", o: "MySQL56/" + uuidB + ":1", want: false},
		{name: "mysql two uuids", p: "MySQL56/" + uuidA + ":1-100," + uuidB + ":1-5", o: "MySQL56/" + uuidB + ":1-5", want: true},
		{name: "mysql anything contains empty", p: "MySQL56/" + uuidA + ":1", o: "MySQL56/", want: true},
		{name: "mysql empty does not contain any", p: "MySQL56/", o: "MySQL56/" + uuidA + ":1", want: false},
		// File positions.
		{name: "filepos same", p: "FilePos/binlog.000003:1234", o: "FilePos/binlog.000003:1234", want: true},
		{name: "filepos later offset", p: "FilePos/binlog.000003:1234", o: "FilePos/binlog.000003:1000", want: true},
		{name: "filepos earlier offset", p: "FilePos/binlog.000003:1000", o: "FilePos/binlog.000003:1234", want: false},
		{name: "filepos later file, smaller offset", p: "FilePos/binlog.000004:4", o: "FilePos/binlog.000003:99999", want: true},
		{name: "filepos earlier file, larger offset", p: "FilePos/binlog.000003:99999", o: "FilePos/binlog.000004:4", want: false},
		// After binlog.999999 the server writes binlog.1000000: the number orders, not the name.
		{name: "filepos file numbers beyond six digits", p: "FilePos/binlog.1000000:4", o: "FilePos/binlog.999999:4", want: true},
		{name: "filepos file numbers beyond six digits, reversed", p: "FilePos/binlog.999999:99999", o: "FilePos/binlog.1000000:4", want: false},
		{name: "filepos file numbers, dots in the base name", p: "FilePos/my.host-bin.000010:4", o: "FilePos/my.host-bin.000009:99999", want: true},
		{name: "filepos other base names compare by name", p: "FilePos/b-bin.000001:4", o: "FilePos/a-bin.000009:4", want: true},
		{name: "filepos other base names compare by name, reversed", p: "FilePos/a-bin.000009:4", o: "FilePos/b-bin.000001:4", want: false},
		{name: "filepos names without a number compare by name", p: "FilePos/binlog.b:4", o: "FilePos/binlog.a:99999", want: true},
		// Different flavors never contain one another.
		{name: "mariadb and mysql", p: "MariaDB/0-1-100", o: "MySQL56/" + uuidA + ":1", want: false},
		{name: "mysql and mariadb", p: "MySQL56/" + uuidA + ":1-100", o: "MariaDB/0-1-1", want: false},
		{name: "mariadb and filepos", p: "MariaDB/0-1-100", o: "FilePos/binlog.000001:4", want: false},
		{name: "filepos and mariadb", p: "FilePos/binlog.000009:99999", o: "MariaDB/0-1-1", want: false},
		{name: "mysql and filepos", p: "MySQL56/" + uuidA + ":1-100", o: "FilePos/binlog.000001:4", want: false},
		{name: "filepos and mysql", p: "FilePos/binlog.000009:99999", o: "MySQL56/" + uuidA + ":1", want: false},
		{name: "empty mariadb and empty mysql", p: "MariaDB/", o: "MySQL56/", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, o := mustParse(t, tt.p, ""), mustParse(t, tt.o, "")
			if got := p.Contains(o); got != tt.want {
				t.Errorf("%q.Contains(%q) = %v, want %v", p, o, got, tt.want)
			}
		})
	}
}

func TestPosition_ContainsZero(t *testing.T) {
	pos := mustParse(t, "MariaDB/0-1-1", "")
	if got, want := pos.Contains(Position{}), false; got != want {
		t.Errorf("%q.Contains(zero) = %v, want %v", pos, got, want)
	}
	if got, want := (Position{}).Contains(pos), false; got != want {
		t.Errorf("zero.Contains(%q) = %v, want %v", pos, got, want)
	}
	// A GTID flavor without a set is the empty set.
	bare := Position{Flavor: FlavorMariaDB}
	if got, want := pos.Contains(bare), true; got != want {
		t.Errorf("%q.Contains(MariaDB without set) = %v, want %v", pos, got, want)
	}
	if got, want := bare.Contains(pos), false; got != want {
		t.Errorf("MariaDB without set.Contains(%q) = %v, want %v", pos, got, want)
	}
}

func TestPosition_Equal(t *testing.T) {
	tests := []struct {
		name string
		p, o string
		want bool
	}{
		{name: "mariadb same", p: "MariaDB/0-1-100,1-2-5", o: "MariaDB/0-1-100,1-2-5", want: true},
		{name: "mariadb same, other order", p: "MariaDB/1-2-5,0-1-100", o: "MariaDB/0-1-100,1-2-5", want: true},
		{name: "mariadb prefix and bare", p: "MariaDB/0-1-100", o: "0-1-100", want: true},
		{name: "mariadb differs", p: "MariaDB/0-1-100", o: "MariaDB/0-1-101", want: false},
		{name: "mariadb extra domain", p: "MariaDB/0-1-100", o: "MariaDB/0-1-100,1-2-5", want: false},
		// Compared per domain by sequence number, the server id aside (see TestPosition_Contains).
		{name: "mariadb same sequence number, another server", p: "MariaDB/0-1-100", o: "MariaDB/0-2-100", want: true},
		{name: "mariadb spaces after commas", p: "MariaDB/0-1-100, 1-2-5", o: "MariaDB/0-1-100,1-2-5", want: true},
		{name: "mysql same", p: "MySQL56/" + uuidA + ":1-100", o: "MySQL56/" + uuidA + ":1-100", want: true},
		{name: "mysql split intervals", p: "MySQL56/" + uuidA + ":1-50:51-100", o: "MySQL56/" + uuidA + ":1-100", want: true},
		{name: "mysql prefix and bare", p: "MySQL56/" + uuidA + ":1-100", o: uuidA + ":1-100", want: true},
		{name: "mysql differs", p: "MySQL56/" + uuidA + ":1-100", o: "MySQL56/" + uuidA + ":1-99", want: false},
		{name: "filepos same", p: "FilePos/binlog.000003:1234", o: "binlog.000003:1234", want: true},
		{name: "filepos other offset", p: "FilePos/binlog.000003:1234", o: "FilePos/binlog.000003:1235", want: false},
		{name: "filepos other file", p: "FilePos/binlog.000003:1234", o: "FilePos/binlog.000004:1234", want: false},
		{name: "filepos file numbers beyond six digits", p: "FilePos/binlog.1000000:4", o: "FilePos/binlog.999999:4", want: false},
		{name: "empty mariadb and empty mysql", p: "MariaDB/", o: "MySQL56/", want: false},
		{name: "mariadb and filepos", p: "MariaDB/0-1-100", o: "FilePos/binlog.000003:1234", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, o := mustParse(t, tt.p, ""), mustParse(t, tt.o, "")
			if got := p.Equal(o); got != tt.want {
				t.Errorf("%q.Equal(%q) = %v, want %v", p, o, got, tt.want)
			}
			if got := o.Equal(p); got != tt.want {
				t.Errorf("%q.Equal(%q) = %v, want %v (not symmetric)", o, p, got, tt.want)
			}
		})
	}
}

func TestPosition_IsZero(t *testing.T) {
	if got, want := (Position{}).IsZero(), true; got != want {
		t.Errorf("Position{}.IsZero() = %v, want %v", got, want)
	}
	if got, want := (Position{Flavor: FlavorFilePos}).IsZero(), false; got != want {
		t.Errorf("Position{Flavor: FilePos}.IsZero() = %v, want %v", got, want)
	}
}
