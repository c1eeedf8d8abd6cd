// Package binlog reads a MySQL or MariaDB source's row-based binary log and turns it into
// vplayer's own events. It owns the go-mysql syncer: one per Run, its retry turned off, each event
// handed to the caller's sink before the next is read, so that backpressure comes from the sink.
package binlog

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/vplayer/vplayer/event"
)

// eventCacheCount is the capacity of go-mysql's event channel, which the synchronous handler
// leaves unused: small, so that the syncer allocates little for it.
const eventCacheCount = 1

// Config says where to read from and what to keep.
type Config struct {
	// Flavor is the source's flavor as go-mysql names it: "mysql" or "mariadb".
	Flavor   string
	Host     string
	Port     uint16
	User     string
	Password string
	// TLS, when not nil, encrypts the replication connection.
	TLS *tls.Config
	// ServerID is the replica server id vplayer registers with; it must be unique among the
	// source's replicas and not zero.
	ServerID uint32
	// HeartbeatPeriod is how often the idle source is asked to send a heartbeat event. The read
	// timeout is three periods plus a second; a source that sends heartbeats less often than
	// asked gets three of its own periods (see pace), up to MaxHeartbeatPeriod.
	HeartbeatPeriod time.Duration
	// Filter selects the replicated tables.
	Filter *Filter
	// KeepFilePos keeps a file:pos start position file:pos even once the source logs GTIDs
	// (set when the stop position is a file:pos one, which only compares with those).
	KeepFilePos bool
	// Logger receives go-mysql's warnings and errors. Nil means slog.Default().
	Logger *slog.Logger
	// OnConnect, when set, is told the source connection id of the replication connection once
	// it is open and before it registers as a replica; an error fails the connection. The
	// stream records the id so that the workflow's next owner can end this connection.
	OnConnect func(connID uint32) error
	// OnlineDDLState is the online schema change state the last SaveOnlineDDL saved (the
	// record's online_ddl), empty for none: what the reader knows of the shadow tables met
	// before the start position (see onlineState).
	OnlineDDLState string
	// SaveOnlineDDL, when set, saves the online schema change state each time a statement on a
	// shadow table or a cut-over changes it, before the statement's event goes into the sink: a
	// restart reads the binlog from a position up to that event, so the state saved is never
	// behind it. An error ends the stream.
	SaveOnlineDDL func(ctx context.Context, state string) error
}

// Sink receives the events in binlog order. Put blocks while the sink is full and returns an
// error when ctx ends.
type Sink interface {
	Put(ctx context.Context, e *event.Event) error
}

// Reader streams one source's binlog into a Sink.
type Reader struct {
	cfg   Config
	stats Stats
}

// NewReader returns a reader for cfg. It connects nothing until Run.
func NewReader(cfg Config) *Reader {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Reader{cfg: cfg}
}

// Run reads the binlog from start (exclusive: the first event delivered is the one after it) and
// puts every event that matters into sink until ctx ends or an error occurs. It never reconnects:
// a broken connection is an error, and the caller restarts from the applied position with a new
// Run, which starts a new syncer.
//
// The syncer's reading goroutine translates each event and puts it into sink itself, before it
// reads the next (go-mysql's synchronous event handler): no event waits in go-mysql's cache, and
// none crosses a channel to another goroutine. Run waits for the stream's end.
func (r *Reader) Run(ctx context.Context, start Position, sink Sink) error {
	t, err := r.translatorFor(start)
	if err != nil {
		return err
	}
	w := newPaceWatch(r.cfg.HeartbeatPeriod, r.cfg.Logger)
	rctx, stopWatch := w.start(ctx)
	defer stopWatch()
	h := &handler{ctx: ctx, rctx: rctx, start: start, t: t, w: w, sink: sink, logger: r.cfg.Logger, saveOnline: r.cfg.SaveOnlineDDL}
	h.dec = newEventDecoder(r.cfg.Flavor, t)
	defer h.dec.close() // after syncer.Close, deferred later: once the handler has returned
	syncer := replication.NewBinlogSyncer(r.syncerConfig(start, h))
	// Close waits for the handler: after stopWatch (deferred later, so run first) has ended the
	// Put it may be blocked in.
	defer syncer.Close()
	streamer, err := startSync(syncer, start)
	if err != nil {
		return err
	}
	return h.waitEnd(streamer)
}

// translatorFor returns the translator of a stream from start, with the online schema change
// state the reader was given.
func (r *Reader) translatorFor(start Position) (*translator, error) {
	t := newTranslator(start, r.cfg.Filter)
	online, err := parseOnlineState(r.cfg.OnlineDDLState)
	if err != nil {
		return nil, err
	}
	online.prune(start)
	t.online = online
	t.keepFilePos = r.cfg.KeepFilePos
	t.skip.stats = &r.stats
	t.metaFlavor = r.cfg.Flavor // the reader's parser skips the table maps' metadata: see tablemap.go
	return t, nil
}

// syncerConfig returns the configuration of the syncer of a stream from start, whose events go to h.
func (r *Reader) syncerConfig(start Position, h *handler) replication.BinlogSyncerConfig {
	return replication.BinlogSyncerConfig{
		Option:          r.connectOption(start),
		ServerID:        r.cfg.ServerID,
		Flavor:          r.cfg.Flavor,
		Host:            r.cfg.Host,
		Port:            r.cfg.Port,
		User:            r.cfg.User,
		Password:        r.cfg.Password,
		TLSConfig:       r.cfg.TLS,
		HeartbeatPeriod: r.cfg.HeartbeatPeriod,
		// The read timeout in force is the pace's, enforced by paceWatch; go-mysql's is only the
		// last resort, a little longer than the longest the pace allows.
		ReadTimeout:          readTimeout(max(r.cfg.HeartbeatPeriod, MaxHeartbeatPeriod)) + 5*time.Second,
		DisableRetrySync:     true,
		MaxReconnectAttempts: 1,
		// The syncer decodes no event but the format description and rotations: the handler
		// decodes the others (newParser's settings), so that a compressed transaction payload is
		// decoded as a stream (see payload.go), which go-mysql's parser cannot do.
		RawModeEnabled:  true,
		EventCacheCount: eventCacheCount,
		// The translator tracks GTIDs itself: the set go-mysql would copy into every commit's
		// event is never read.
		DiscardGTIDSet:          true,
		SynchronousEventHandler: h,
		Logger:                  slog.New(warnOnly{r.cfg.Logger.Handler()}),
	}
}

// connectOption returns what the syncer does to its connection once open, before the binlog
// dump: coarse deadlines, Config.OnConnect, and the session state a dump from start needs.
func (r *Reader) connectOption(start Position) func(c *client.Conn) error {
	return func(c *client.Conn) error {
		c.Conn.Conn = newCoarseDeadlineConn(c.Conn.Conn)
		if r.cfg.OnConnect != nil {
			if err := r.cfg.OnConnect(c.GetConnectionID()); err != nil {
				return err
			}
		}
		switch start.Flavor {
		case FlavorMySQL:
			return throughGTID(c)
		case FlavorMariaDB:
			return mariaConnectState(c, start.GTID)
		}
		return nil
	}
}

// startSync starts syncer's binlog dump from start.
func startSync(syncer *replication.BinlogSyncer, start Position) (*replication.BinlogStreamer, error) {
	var streamer *replication.BinlogStreamer
	var err error
	switch start.Flavor {
	case FlavorFilePos:
		streamer, err = syncer.StartSync(mysql.Position{Name: start.File, Pos: start.Offset})
	case FlavorMariaDB:
		// The position is in the connection's state (see mariaConnectState).
		streamer, err = syncer.StartSync(mariaDumpStart)
	case FlavorMySQL:
		streamer, err = syncer.StartSyncGTID(start.GTID.Clone())
	default:
		return nil, fmt.Errorf("start binlog stream: no start position")
	}
	if err != nil {
		return nil, fmt.Errorf("start binlog stream at %s: %w", start, err)
	}
	return streamer, nil
}

// handler turns each event the syncer reads into vplayer's events and puts them into the sink,
// on the syncer's reading goroutine. Its first error ends the stream.
type handler struct {
	ctx, rctx context.Context // Run's, and the reads' (cancelled by the pace watch or Run)
	start     Position
	t         *translator
	dec       *eventDecoder // decodes the events the syncer passes undecoded
	w         *paceWatch
	sink      Sink
	logger    *slog.Logger
	// saveOnline is Config.SaveOnlineDDL.
	saveOnline func(ctx context.Context, state string) error

	mu  sync.Mutex
	err error
}

func (h *handler) HandleEvent(raw *replication.BinlogEvent) error {
	ev, err := h.dec.decode(raw)
	if err != nil {
		err = fmt.Errorf("read binlog event after %s: %w", h.t.posString(), err)
	} else {
		h.w.received(ev)
		err = h.handle(ev)
	}
	if err != nil {
		h.mu.Lock()
		h.err = err
		h.mu.Unlock()
		return err
	}
	h.w.wait()
	return nil
}

// waitEnd waits for the end of the stream whose events go to h and returns why it ended: Run's
// context, a silent source, the handler's error, or the syncer's.
func (h *handler) waitEnd(streamer *replication.BinlogStreamer) error {
	// Events go to the handler; the streamer only carries the stream's end.
	_, err := streamer.GetEvent(h.rctx)
	if err == nil {
		return errors.New("read binlog event: the syncer delivered an event past its handler")
	}
	if h.ctx.Err() != nil {
		return h.ctx.Err()
	}
	if cause := context.Cause(h.rctx); errors.Is(cause, ErrSourceSilent) {
		return fmt.Errorf("read binlog event: %w", cause)
	}
	if herr := h.failed(); herr != nil {
		return herr
	}
	return fmt.Errorf("read binlog event: %w", err)
}

// failed returns the error that ended the stream in the handler, if any.
func (h *handler) failed() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

func (h *handler) handle(ev *replication.BinlogEvent) error {
	if ev.Header.EventType == replication.TRANSACTION_PAYLOAD_EVENT {
		// Its events are decoded, translated and put one at a time (see payload.go).
		return h.t.translatePayload(ev, h.dec.payload, h.put)
	}
	ev, err := ownGTIDEvent(ev)
	if err != nil {
		return err
	}
	t := h.t
	out, err := t.translate(ev)
	if err != nil {
		return err
	}
	if t.movedToGTID {
		t.movedToGTID = false
		h.logger.Info("the source now logs GTIDs: the workflow's position moves from file:pos to its GTID position at the next commit",
			"from", h.start.String(), "gtid", t.gtid)
	}
	if t.onlineDirty {
		if err := h.saveOnlineState(); err != nil {
			return err
		}
	}
	return h.put(out)
}

// put puts the events one binlog event yields into the sink, in order.
func (h *handler) put(out []*event.Event) error {
	for _, e := range out {
		if err := h.sink.Put(h.rctx, e); err != nil {
			if cause := context.Cause(h.rctx); h.ctx.Err() == nil && cause != nil {
				return fmt.Errorf("read binlog event: %w", cause)
			}
			return err
		}
	}
	return nil
}

// warnOnly drops go-mysql's informational logging (it logs its configuration at Info).
type warnOnly struct{ slog.Handler }

func (w warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}

// ServerIDFor derives a stable, non-zero replica server id from a workflow name.
func ServerIDFor(workflow string) uint32 {
	var h uint32 = 2166136261
	for i := 0; i < len(workflow); i++ {
		h ^= uint32(workflow[i])
		h *= 16777619
	}
	// Keep clear of small ids that operators give their real servers.
	return 1000000 + h%1000000000
}

// anonymous reports whether a MySQL GTID event is an anonymous transaction's (gtid_mode
// OFF_PERMISSIVE or ON_PERMISSIVE): its all-zero server id is no GTID to record.
func anonymous(sid []byte) bool {
	for _, b := range sid {
		if b != 0 {
			return false
		}
	}
	return true
}

// saveOnlineState saves the translator's online schema change state, which the event just
// translated changed, before its events go into the sink.
func (h *handler) saveOnlineState() error {
	t := h.t
	state := t.online.String()
	if h.saveOnline != nil {
		if err := h.saveOnline(h.ctx, state); err != nil {
			return fmt.Errorf("save the online schema change state at %s: %w", t.posString(), err)
		}
	}
	t.onlineDirty = false
	h.logger.Info("online schema change: the reader recorded a shadow table's DDL or cut-over", "pos", t.posString(), "state", state)
	return nil
}
