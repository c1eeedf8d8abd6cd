package binlog

import (
	"bytes"
	"net"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// TestDumpFlagConn checks that BINLOG_THROUGH_GTID (0x04) is set in a COM_BINLOG_DUMP_GTID
// packet as go-mysql writes it, and that any other packet passes unchanged.
func TestDumpFlagConn(t *testing.T) {
	dump := func(flags byte) []byte {
		payload := []byte{mysql.COM_BINLOG_DUMP_GTID, flags, 0, 1, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		return append([]byte{byte(len(payload)), 0, 0, 0}, payload...)
	}
	query := append([]byte{5, 0, 0, 0, mysql.COM_QUERY}, "KILL"...)
	tests := []struct {
		name     string
		in, want []byte
	}{
		{name: "dump gtid", in: dump(0), want: dump(0x04)},
		{name: "dump gtid with other flags", in: dump(0x01), want: dump(0x05)},
		{name: "query", in: query, want: query},
		{name: "length that does not match", in: dump(0)[:10], want: dump(0)[:10]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, server := net.Pipe()
			defer client.Close()
			defer server.Close()
			in := append([]byte(nil), tt.in...)
			done := make(chan []byte)
			go func() {
				buf := make([]byte, len(tt.want))
				_, _ = server.Read(buf)
				done <- buf
			}()
			n, err := dumpFlagConn{Conn: client}.Write(in)
			if err != nil || n != len(tt.in) {
				t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(tt.in))
			}
			if got := <-done; !bytes.Equal(got, tt.want) {
				t.Errorf("server read % x, want % x", got, tt.want)
			}
			if !bytes.Equal(in, tt.in) {
				t.Errorf("caller's packet changed to % x", in)
			}
		})
	}
}
