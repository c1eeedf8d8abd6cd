package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vplayer/vplayer/binlog"
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

// setState and addLog write the record over the pool with a bounded wait: the record
// row may be locked, and the error path must not hang behind it.
func (s *Stream) setState(state, msg string) {
	s.notifyState(state)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.lease.SetState(ctx, state, msg); err != nil {
		s.log.Warn("could not record the workflow state", "state", state, "error", err)
	}
}

func (s *Stream) addLog(typ, state, msg string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.lease.AddLog(ctx, typ, state, msg); errors.Is(err, workflow.ErrLostOwnership) {
		return // fenced: a process that lost the workflow writes nothing in its history
	} else if err != nil {
		s.log.Warn("could not add to the workflow log", "error", err)
	}
}

func (s *Stream) notifyState(state string) {
	if s.cfg.OnState != nil {
		s.cfg.OnState(state)
	}
}
