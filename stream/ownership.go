package stream

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/stream/preflight"
	"github.com/vplayer/vplayer/workflow"
)

// ownershipCheckTimeout bounds a look at the record to learn whether the lease is still ours.
const ownershipCheckTimeout = 2 * time.Second

// owner holds the workflow's lease for a stream: it takes it (waiting as a standby while another
// live process holds it) and ends the previous owner's sessions, keeps it renewed until released,
// checks it before each binlog connection and when one is replaced or killed, watches it during
// an attempt, and tells a loss from the errors it explains. Made by prepare, once the record and
// the source's flavor are known; lease is set by acquire, lastReplaced only by the reader.
type owner struct {
	store            *workflow.Store
	source           *sql.DB // the source pool, where the previous owner's binlog connection is ended
	workflow         string
	id               int64  // the record's id
	flavor           string // go-mysql flavor of the source
	name             string // this process in the lease
	ttl              time.Duration
	waitWhileStopped bool // --wait-while-stopped: a stopped workflow is taken over, not ended
	log              *slog.Logger
	// waitUnreachable waits out an unreachable target while acquiring (retrier.wait);
	// notifyState tells the stream's state (Config.OnState). Neither blocks past ctx.
	waitUnreachable func(context.Context, error) error
	notifyState     func(string)

	lease *workflow.Lease
	// lastReplaced is when a binlog connection was last replaced by another with the workflow's
	// server id while this process held the lease (see binlogEnded).
	lastReplaced time.Time
}

// newOwner returns the stream's owner, once prepare knows the record and the source's flavor.
func (s *Stream) newOwner() *owner {
	ttl := s.cfg.LeaseTTL
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	name := s.cfg.Owner
	if name == "" {
		name = DefaultOwner()
	}
	return &owner{store: s.store, source: s.cfg.Source.Pool, workflow: s.cfg.Workflow, id: s.id, flavor: s.flavor,
		name: name, ttl: ttl, waitWhileStopped: s.cfg.WaitWhileStopped, log: s.log,
		waitUnreachable: s.retry.wait, notifyState: s.rep.notifyState}
}

// holds checks, before an attempt opens its binlog connection, that the lease is still this
// process's: a process that lost the workflow never talks to the source as the workflow (with
// its server id) again, so it cannot knock the new owner's binlog connection off. An error
// reading the record is returned as it is, and the attempt is retried: the connection is opened
// only after a check that succeeded.
func (o *owner) holds(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, ownershipCheckTimeout)
	defer cancel()
	if err := o.lease.Check(cctx); err != nil {
		return err
	}
	if err := o.lease.Err(); err != nil {
		return err
	}
	return nil
}

// errReconnectNow ends an attempt whose binlog connection another connection with the
// workflow's server id replaced while this process holds the lease: the next attempt starts at
// once, without the retry delay, and its registration ends the other connection (the source
// keeps the newest replica of a server id).
var errReconnectNow = errors.New("binlog connection replaced by another with the workflow's server id")

// binlogEnded is told the error that ended the attempt's binlog connection. Whoever else talks
// to the source as the workflow must be a process that lost the lease (its check came before a
// takeover, or its clock jumped), and it is that process's connection that must end, never the
// holder's: when the connection was replaced by another with the workflow's server id, or broke
// (killed on the source: a new owner ends the previous owner's), the lease is checked. Lost, the
// stream stops with the loss. Still held after a replacement, the previous owner's recorded binlog
// connection is killed on the source and the attempt ends with errReconnectNow, so the holder
// takes the source back at once instead of backing off; a replacement again within a ttl (a
// replica of the same server id that keeps coming back, which no lease keeps off) is retried
// after the retry delay, as before. Anything else, or a lease that cannot be read, is returned as
// it is.
func (o *owner) binlogEnded(err error) error {
	replaced := binlog.IsReplaced(err)
	if !replaced && !binlog.IsConnectionLost(err) {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), ownershipCheckTimeout)
	defer cancel()
	switch lerr := o.lease.Check(ctx); {
	case errors.Is(lerr, workflow.ErrLostOwnership):
		return lerr
	case lerr != nil || !replaced:
		return err
	}
	if prev := o.lease.PreviousSourceSession(); prev != "" {
		ended, kerr := workflow.KillSessions(ctx, o.source, prev, workflow.BinlogDumps)
		if len(ended) > 0 {
			o.log.Warn("ended the binlog connection of the previous owner, which lost the workflow", "connection_ids", fmt.Sprint(ended))
		}
		if kerr != nil {
			o.log.Warn("could not end the previous owner's binlog connection on the source", "error", kerr)
		}
	}
	now := time.Now()
	if !o.lastReplaced.IsZero() && now.Sub(o.lastReplaced) < o.lease.TTL() {
		return err
	}
	o.lastReplaced = now
	o.log.Warn("another connection with the workflow's server id replaced the binlog connection, and this process holds the lease: reconnecting at once, which ends the other", "error", err.Error())
	return fmt.Errorf("%w: %w", errReconnectNow, err)
}

// watch ends the attempt when the keepalive found the lease taken over, or when it has not
// renewed the lease for longer than its ttl (the target does not answer it, or the record row
// stays locked): a standby may take over at any moment, and the retry's holds says whether
// the workflow is still ours.
func (o *owner) watch(ctx context.Context) error {
	t := time.NewTicker(o.lease.TTL() / 3)
	defer t.Stop()
	for {
		select {
		case <-o.lease.Lost():
			return o.lease.Err()
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			if err := o.lease.Overdue(now); err != nil {
				return err
			}
		}
	}
}

// lostNow returns the loss when the record says the lease is no longer this process's, nil when
// it is still ours or the record cannot be read; the look has its own deadline, within ctx. It is
// asked before a terminal error is reported (an error a process meets after losing its lease, a
// doomed batch's duplicate key, the new owner having committed that row, says nothing about the
// workflow, and must read as the lost ownership it is, not as target divergence) and before a
// Stopped record is taken for a vplayer stop.
func (o *owner) lostNow(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ownershipCheckTimeout)
	defer cancel()
	if err := o.lease.Check(ctx); errors.Is(err, workflow.ErrLostOwnership) {
		return err
	}
	return nil
}

// stopRequested is what a Stopped record means to this process: a vplayer stop (errStopRequested)
// while it holds the workflow's lease; otherwise the loss of the lease, which it reports as such.
// A process cut off from the target while its successor was stopped reads that successor's
// Stopped when it heals: it must say that it lost the workflow, never blame a stop nobody ran.
func (o *owner) stopRequested(ctx context.Context) error {
	if err := o.lostNow(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	return errStopRequested
}

// keep starts the lease's keepalive, which lasts until release or the lease's loss, never a
// caller's context.
func (o *owner) keep() {
	o.lease.Keep()
}

// release ends the keepalive and gives the lease up, so a standby takes over at once.
func (o *owner) release() {
	if err := o.lease.Release(); err != nil {
		o.log.Warn("could not release the workflow lease; it expires by itself", "error", err)
	}
}

// logEnded logs the previous owner's target sessions that taking the lease over ended.
func (o *owner) logEnded(lease *workflow.Lease) {
	ended, err := lease.Ended()
	if len(ended) > 0 {
		o.log.Info("ended the previous owner's target sessions", "connection_ids", fmt.Sprint(ended))
	}
	if err != nil {
		o.log.Warn("could not end the previous owner's target sessions; its open transaction may hold locks until it ends", "error", err)
	}
}

// endPreviousSource ends, on the source, the binlog connection of the owner this process took
// the workflow over from: a frozen owner's dump thread, blocked writing to a client that reads
// nothing, keeps the workflow's server id until the source's net_write_timeout, and the new
// owner's own binlog connection waits behind it that long.
func (o *owner) endPreviousSource(ctx context.Context, lease *workflow.Lease) {
	prev := lease.PreviousSourceSession()
	if prev == "" {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, ownershipCheckTimeout)
	defer cancel()
	ended, err := workflow.KillSessions(cctx, o.source, prev, workflow.BinlogDumps)
	if len(ended) > 0 {
		o.log.Info("ended the previous owner's binlog connection on the source", "connection_ids", fmt.Sprint(ended))
	}
	if err != nil {
		o.log.Warn("could not end the previous owner's binlog connection on the source", "error", err)
	}
}

// recordSourceSession records the binlog connection an attempt just opened, before it registers
// as a replica: the write is fenced, so a process that lost the workflow fails here and never
// talks to the source as the workflow.
func (o *owner) recordSourceSession(connID uint32) error {
	ctx, cancel := context.WithTimeout(context.Background(), ownershipCheckTimeout)
	defer cancel()
	if o.flavor != "mariadb" {
		// Only MariaDB sources are known to keep a frozen replica's dump thread and to end it
		// cleanly on KILL; a Dolt source's binary log broke for later replicas when its
		// replication connection was killed. Elsewhere the lease is still checked before the
		// replica registers, and the connection is not recorded.
		return o.lease.Check(ctx)
	}
	boot, err := workflow.BootTime(ctx, o.source)
	if err != nil {
		// A source that does not tell its uptime (Dolt): its connection cannot be named safely
		// for the next owner, but the lease is still checked before the replica registers.
		return o.lease.Check(ctx)
	}
	return o.lease.RecordSourceSession(ctx, boot, int64(connID))
}

// acquire takes the workflow's lease, waiting as a standby while another live process owns it,
// and logging who owns it and until when each time that changes. It returns nil, nil when ctx
// ends while waiting.
func (o *owner) acquire(ctx context.Context) (*workflow.Lease, error) {
	ttl, owner := o.ttl, o.name
	var last workflow.Holder
	waited, retried := false, false
	for {
		lease, h, err := o.store.Acquire(ctx, o.id, o.workflow, owner, ttl)
		switch {
		case err == nil && waited && o.deliberatelyEnded(ctx):
			// The owner this standby waited on ended the workflow on purpose (vplayer stop, the
			// stop position, a DDL under --on-ddl stop) or on a terminal error: that ends the
			// workflow, not just one process of it. Only an owner that went away (a signal, a
			// crash, a lost lease) is taken over.
			o.log.Info("the workflow was stopped or failed while this process waited as a standby; not taking over")
			if err := lease.Release(); err != nil {
				o.log.Warn("could not release the workflow lease; it expires by itself", "error", err)
			}
			return nil, nil
		case err == nil:
			o.log.Info("workflow lease acquired", "owner", owner, "epoch", lease.Epoch(), "ttl", ttl)
			o.logEnded(lease)
			o.endPreviousSource(ctx, lease)
			o.lease = lease
			return lease, nil
		case ctx.Err() != nil:
			return nil, nil
		case preflight.IsUnreachable(err):
			// The target went away (or was not there yet): wait for it, as a standby would.
			if err := o.waitUnreachable(ctx, err); err != nil {
				return nil, nil
			}
			retried = true
			continue
		case !errors.Is(err, workflow.ErrLeaseHeld):
			return nil, err
		}
		if retried {
			o.notifyState(workflow.StateInit)
			retried = false
		}
		waited = true
		if h.Owner != last.Owner || h.Epoch != last.Epoch {
			o.log.Info("workflow owned by another process; waiting as a standby", "owner", h.Owner, "until", h.Until.UTC().Format(time.RFC3339Nano))
			last = h
		}
		t := time.NewTimer(min(ttl/2, time.Second))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil
		case <-t.C:
		}
	}
}

// deliberatelyEnded reports whether the record says the workflow was stopped with a reason (a
// signal stops a process with an empty message) or ended in a terminal error. With
// --wait-while-stopped a stopped workflow is not ended: the standby takes the lease and waits for
// vplayer start, as its owner did.
func (o *owner) deliberatelyEnded(ctx context.Context) bool {
	rec, err := o.store.Get(ctx, o.workflow)
	return err == nil && (rec.State == workflow.StateError || rec.State == workflow.StateStopped && rec.Message != "" && !o.waitWhileStopped)
}

// lost ends the stream after its lease was taken over: it logs who owns the workflow now and
// writes nothing more (every write would be fenced).
func (o *owner) lost(cause error) error {
	err := cause
	if !errors.Is(err, workflow.ErrLostOwnership) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if lerr := o.lease.Check(ctx); lerr != nil {
			err = lerr
		} else {
			err = fmt.Errorf("%w: %w", workflow.ErrLostOwnership, cause)
		}
	}
	o.log.Error(err.Error())
	return err
}

// DefaultLeaseTTL is the workflow lease's default time to live.
const DefaultLeaseTTL = 10 * time.Second

// DefaultOwner identifies this process as a lease owner: host, pid and a random id.
func DefaultOwner() string {
	host, _ := os.Hostname()
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}
