package stream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vplayer/vplayer/workflow"
)

// ownershipCheckTimeout bounds a look at the record to learn whether the lease is still ours.
const ownershipCheckTimeout = 2 * time.Second

// holdsLease checks, before an attempt opens its binlog connection, that the lease is still this
// process's: a process that lost the workflow never talks to the source as the workflow (with
// its server id) again, so it cannot knock the new owner's binlog connection off. An error
// reading the record is returned as it is, and the attempt is retried: the connection is opened
// only after a check that succeeded.
func (s *Stream) holdsLease(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, ownershipCheckTimeout)
	defer cancel()
	if err := s.lease.Check(cctx); err != nil {
		return err
	}
	if err := s.lease.Err(); err != nil {
		return err
	}
	return nil
}

// watchLease ends the attempt when the keepalive found the lease taken over, or when it has not
// renewed the lease for longer than its ttl (the target does not answer it, or the record row
// stays locked): a standby may take over at any moment, and the retry's holdsLease says whether
// the workflow is still ours.
func (s *Stream) watchLease(ctx context.Context) error {
	t := time.NewTicker(s.lease.TTL() / 3)
	defer t.Stop()
	for {
		select {
		case <-s.lease.Lost():
			return s.lease.Err()
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			if err := s.lease.Overdue(now); err != nil {
				return err
			}
		}
	}
}

// lostBeforeReport is asked before a terminal error is reported: an error a process meets after
// losing its lease (a doomed batch's duplicate key, the new owner having committed that row) says
// nothing about the workflow, and must read as the lost ownership it is, not as target
// divergence. It returns the loss, or nil when the lease is still ours or the record cannot be
// read (the error is then reported as it is).
func (s *Stream) lostBeforeReport() error {
	ctx, cancel := context.WithTimeout(context.Background(), ownershipCheckTimeout)
	defer cancel()
	if err := s.lease.Check(ctx); errors.Is(err, workflow.ErrLostOwnership) {
		return err
	}
	return nil
}

// logEnded logs the previous owner's target sessions that taking the lease over ended.
func (s *Stream) logEnded(lease *workflow.Lease) {
	ended, err := lease.Ended()
	if len(ended) > 0 {
		s.log.Info("ended the previous owner's target sessions", "connection_ids", fmt.Sprint(ended))
	}
	if err != nil {
		s.log.Warn("could not end the previous owner's target sessions; its open transaction may hold locks until it ends", "error", err)
	}
}

// endPreviousSource ends, on the source, the binlog connection of the owner this process took
// the workflow over from: a frozen owner's dump thread, blocked writing to a client that reads
// nothing, keeps the workflow's server id until the source's net_write_timeout, and the new
// owner's own binlog connection waits behind it that long.
func (s *Stream) endPreviousSource(ctx context.Context, lease *workflow.Lease) {
	prev := lease.PreviousSourceSession()
	if prev == "" {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, ownershipCheckTimeout)
	defer cancel()
	ended, err := workflow.KillSessions(cctx, s.cfg.Source.Pool, prev, workflow.BinlogDumps)
	if len(ended) > 0 {
		s.log.Info("ended the previous owner's binlog connection on the source", "connection_ids", fmt.Sprint(ended))
	}
	if err != nil {
		s.log.Warn("could not end the previous owner's binlog connection on the source", "error", err)
	}
}

// recordSourceSession records the binlog connection an attempt just opened, before it registers
// as a replica: the write is fenced, so a process that lost the workflow fails here and never
// talks to the source as the workflow.
func (s *Stream) recordSourceSession(connID uint32) error {
	ctx, cancel := context.WithTimeout(context.Background(), ownershipCheckTimeout)
	defer cancel()
	if s.flavor != "mariadb" {
		// Only MariaDB sources are known to keep a frozen replica's dump thread and to end it
		// cleanly on KILL; a Dolt source's binary log broke for later replicas when its
		// replication connection was killed. Elsewhere the lease is still checked before the
		// replica registers, and the connection is not recorded.
		return s.lease.Check(ctx)
	}
	boot, err := workflow.BootTime(ctx, s.cfg.Source.Pool)
	if err != nil {
		// A source that does not tell its uptime (Dolt): its connection cannot be named safely
		// for the next owner, but the lease is still checked before the replica registers.
		return s.lease.Check(ctx)
	}
	return s.lease.RecordSourceSession(ctx, boot, int64(connID))
}
