package stream

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/workflow"
)

// CatchUp runs workflow rec in this process up to and including pos, with the settings its
// record holds, as `vplayer run --stop-pos pos` would, and leaves it Stopped at pos. src says how
// to reach the source (its database and tables come from the record); target is the target pool
// and sidecar the record's database. `vplayer diff` runs it when no process holds the workflow.
func CatchUp(ctx context.Context, rec workflow.Record, pos string, src Source, target *sql.DB, sidecar string, log *slog.Logger) error {
	source, err := workflow.ParseSource(rec.Source)
	if err != nil {
		return fmt.Errorf("workflow %s: %w", rec.Workflow, err)
	}
	// Settings a record lacks take their defaults.
	opts, _ := workflow.ParseOptions(rec.Options)
	cfg := DefaultConfig()
	cfg.Workflow = rec.Workflow
	src.DB, src.Tables = source.Database, source.Tables
	cfg.Source = src
	cfg.Target, cfg.TargetDB, cfg.Sidecar = target, rec.DBName, sidecar
	cfg.StopPos = pos
	cfg.RetryDelay = time.Second
	if opts.OnDDL != "" {
		cfg.OnDDL = opts.OnDDL
	}
	if opts.ExecMode != "" {
		cfg.ExecMode = opts.ExecMode
	}
	if opts.OnlineDDLPatterns != "" {
		cfg.OnlineDDLPatterns = opts.OnlineDDLPatterns
	}
	if opts.ApplyWorkers > 0 {
		cfg.ApplyWorkers = opts.ApplyWorkers
	}
	cfg.AllowTargetTriggers = opts.AllowTargetTriggers
	cfg.ServerID = opts.ServerID
	if cfg.ServerID == 0 {
		cfg.ServerID = binlog.ServerIDFor(rec.Workflow)
	}
	cfg.Options, cfg.Logger = rec.Options, log
	s, err := New(cfg)
	if err != nil {
		return err
	}
	return s.Run(ctx)
}
