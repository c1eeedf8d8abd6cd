package e2e

import (
	binenc "encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/stream"
)

// comBinlogDumpGTID and binlogThroughGTID are the replication protocol's command byte and flag.
const (
	comBinlogDumpGTID = 0x1e
	binlogThroughGTID = 0x04
)

// flaglessProxy forwards connections to a server, clearing BINLOG_THROUGH_GTID in every
// COM_BINLOG_DUMP_GTID the client sends: Dolt then ignores the GTID set and sends its whole
// binlog, as a source that re-sends history does. cleared counts the rewritten commands.
type flaglessProxy struct {
	ln      net.Listener
	target  string
	cleared atomic.Int64
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
}

func newFlaglessProxy(t *testing.T, target string) *flaglessProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &flaglessProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *flaglessProxy) port() uint16 { return uint16(p.ln.Addr().(*net.TCPAddr).Port) }

func (p *flaglessProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			io.Copy(c, u)
			c.Close()
		}()
		go func() {
			defer p.wg.Done()
			p.clientToServer(u, c)
			u.Close()
		}()
	}
}

// clientToServer forwards the client's packets one by one (the connection is not encrypted:
// the test disables TLS), rewriting the dump command.
func (p *flaglessProxy) clientToServer(dst, src net.Conn) {
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(src, hdr[:]); err != nil {
			return
		}
		n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
		payload := make([]byte, n)
		if _, err := io.ReadFull(src, payload); err != nil {
			return
		}
		if n >= 3 && payload[0] == comBinlogDumpGTID {
			flags := binenc.LittleEndian.Uint16(payload[1:3])
			if flags&binlogThroughGTID != 0 {
				binenc.LittleEndian.PutUint16(payload[1:3], flags&^binlogThroughGTID)
				p.cleared.Add(1)
			}
		}
		if _, err := dst.Write(append(hdr[:], payload...)); err != nil {
			return
		}
	}
}

func (p *flaglessProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// TestDolt_ResentHistoryIsSkipped: a source that sends its whole binlog again after a reconnect
// (Dolt when BINLOG_THROUGH_GTID is cleared on the way) doubles nothing: the restarted stream
// drops every transaction its recorded position contains, counts each one, and applies only the
// new ones; target == source.
func TestDolt_ResentHistoryIsSkipped(t *testing.T) {
	e := newDoltEnv(t)
	e.execBoth(`CREATE TABLE r (id int PRIMARY KEY, v varchar(20))`)
	proxy := newFlaglessProxy(t, e.source.Addr())

	var mu sync.Mutex
	var attempts []*stream.Attempt
	cfg := e.streamConfig()
	cfg.Source.Port = proxy.port()
	cfg.OnStart = func(a *stream.Attempt) {
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, a)
	}
	stop := e.runStream(cfg)
	e.waitRunning(30 * time.Second)
	for i := 1; i <= 5; i++ {
		e.execSource(fmt.Sprintf("INSERT INTO r VALUES (%d, 'first run')", i))
	}
	e.waitCaughtUp(60 * time.Second)
	if err := stop(); err != nil {
		t.Fatalf("first run: %v", err)
	}
	e.execSource(`INSERT INTO r VALUES (6, 'while stopped')`, `UPDATE r SET v = 'changed' WHERE id = 1`, `DELETE FROM r WHERE id = 2`)

	recorded := e.record().Pos
	pos, err := binlog.ParsePosition(recorded, "mysql")
	if err != nil {
		t.Fatal(err)
	}
	resent := gtidCount(t, pos.GTID.String())
	mu.Lock()
	attempts = nil
	mu.Unlock()
	cleared := proxy.cleared.Load()
	stop = e.runStream(cfg)
	e.waitCaughtUp(60 * time.Second)
	e.execSource(`INSERT INTO r VALUES (7, 'after')`)
	e.waitCaughtUp(60 * time.Second)
	e.assertTablesEqual("id", "r")

	if got := proxy.cleared.Load() - cleared; got < 1 {
		t.Fatalf("the proxy cleared BINLOG_THROUGH_GTID in %d dump commands of the second run, want at least 1: the test proves nothing", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(attempts) != 1 {
		t.Fatalf("second run made %d attempts, want 1 (the count below is per attempt)", len(attempts))
	}
	if got, want := attempts[0].Reader.Stats().SkippedExecuted.Load(), resent; got != want {
		t.Errorf("skipped %d re-sent transactions, want %d: every GTID of the recorded position %s", got, want, recorded)
	} else {
		t.Logf("skipped %d re-sent transactions (recorded position %s)", got, recorded)
	}
	if err := stop(); err != nil {
		t.Errorf("second run: %v", err)
	}
}
