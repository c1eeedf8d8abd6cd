package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/stream/gate"
	"github.com/vplayer/vplayer/workflow"
)

// checkStartPos compares --start-pos with an existing record: the record wins; "current" is
// ignored; any other value that differs is an error.
func (s *Stream) checkStartPos(rec workflow.Record) error {
	sp := strings.TrimSpace(s.cfg.StartPos)
	switch sp {
	case "":
		return nil
	case "current":
		s.log.Info("--start-pos current ignored: the workflow has a record, resuming from its position", "pos", rec.Pos)
		return nil
	}
	want, err := binlog.ParsePosition(sp, s.flavor)
	if err != nil {
		return fmt.Errorf("--start-pos: %w", err)
	}
	have, err := binlog.ParsePosition(rec.Pos, s.flavor)
	if err != nil || !have.Equal(want) {
		return fmt.Errorf("%w: --start-pos %s differs from workflow %s's recorded position %s: drop --start-pos to resume, or delete the record to start over", ErrTerminal, want, s.cfg.Workflow, rec.Pos)
	}
	return nil
}

// startPosition resolves --start-pos for a new workflow.
func (s *Stream) startPosition(ctx context.Context) (binlog.Position, error) {
	sp := strings.TrimSpace(s.cfg.StartPos)
	if sp != "" && sp != "current" {
		p, err := binlog.ParsePosition(sp, s.flavor)
		if err != nil {
			return p, fmt.Errorf("--start-pos: %w", err)
		}
		return p, nil
	}
	return CurrentPosition(ctx, s.cfg.Source.Pool, s.flavor)
}

func (s *Stream) sourceJSON() string {
	return workflow.Source{
		Address:  fmt.Sprintf("%s:%d", s.cfg.Source.Host, s.cfg.Source.Port),
		User:     s.cfg.Source.User,
		Flavor:   s.flavor,
		Database: s.cfg.Source.DB,
		Tables:   s.cfg.Source.Tables,
	}.JSON()
}

// prepare resolves the source flavor, creates or resumes the record and settles the start
// position.
func (s *Stream) prepare(ctx context.Context) error {
	flavor, err := SourceFlavor(ctx, s.cfg.Source.Pool)
	if err != nil {
		return err
	}
	s.flavor = flavor
	if s.cfg.StopPos != "" {
		if s.stop, err = binlog.ParsePosition(s.cfg.StopPos, flavor); err != nil {
			return fmt.Errorf("--stop-pos: %w", err)
		}
	}
	if err := s.store.Init(ctx); err != nil {
		return err
	}
	rec, err := s.store.Get(ctx, s.cfg.Workflow)
	switch {
	case errors.Is(err, workflow.ErrNotFound):
		if !s.stop.IsZero() && newState(s.cfg.StartPos) == workflow.StateCopying {
			return errStopPosWhileCopying // refused before anything is written
		}
		pos, err := s.startPosition(ctx)
		if err != nil {
			return err
		}
		rec, _, err = s.store.Create(ctx, workflow.Record{
			Workflow: s.cfg.Workflow, Source: s.sourceJSON(), Pos: pos.String(), StopPos: s.stopString(),
			DBName: s.cfg.TargetDB, Options: s.cfg.Options, State: newState(s.cfg.StartPos),
		})
		if err != nil {
			return err
		}
		s.log.Info("workflow created", "pos", rec.Pos, "state", rec.State)
	case err != nil:
		return err
	default:
		s.log.Info("resuming workflow", "previous_state", rec.State, "previous_message", rec.Message, "pos", rec.Pos)
		if err := s.checkStartPos(rec); err != nil {
			return err
		}
		// Refused before the record is written to; the attempt checks again, under the lease.
		if err := checkStopWhileCopying(ctx, s.store, s.stop, rec); err != nil {
			return err
		}
	}
	s.id = rec.ID
	s.own = s.newOwner()
	s.rep.own = s.own
	s.ctl = &controls{store: s.store, id: s.id, flavor: s.flavor, own: s.own, rep: s.rep, log: s.log,
		retryDelay: s.cfg.RetryDelay, pause: gate.NewRequest()}
	return nil
}

func (s *Stream) stopString() string {
	if s.stop.IsZero() {
		return ""
	}
	return s.stop.String()
}
