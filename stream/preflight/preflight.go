// Package preflight checks what a workflow needs of its servers before anything is written: that
// the source logs what vplayer needs, that the target is reachable and writable, that the
// replicated tables exist on the target (unless the workflow copies first) with the source's
// columns and without triggers, and, for a copy from MySQL, the RELOAD privilege. It also holds
// the checks each attempt repeats before its binlog connection (the source's history still has
// the position, no new trigger), and tells a server that cannot be reached now (IsUnreachable)
// from one that refuses. It needs no stream: every check is a function of pools and names.
package preflight

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/snapshot"
)

// ErrFailed wraps the failures of Check, one line each.
var ErrFailed = errors.New("preflight failed")

// Config is what Check looks at: a workflow's servers and what it replicates.
type Config struct {
	// Workflow names the workflow; Sidecar is its record's database (default _vt); StartPos is
	// --start-pos. A workflow that would copy first (a new one without StartPos, or one whose
	// copy is not done) may lack target tables: the copy creates them.
	Workflow, Sidecar, StartPos string
	// Source is a pool to the source; SourceDB its database; Tables the --tables entries (names
	// or /regex/), empty for all; OnlineDDLPatterns is --online-ddl-patterns.
	Source            *sql.DB
	SourceDB          string
	Tables            []string
	OnlineDDLPatterns string
	// Target is a pool to the target; TargetDB its database (default SourceDB).
	Target   *sql.DB
	TargetDB string
	// AllowTargetTriggers lets replicated target tables have triggers (a warning instead).
	AllowTargetTriggers bool
	// Logger, when set, receives the warnings (keyless tables, allowed triggers).
	Logger *slog.Logger
}

// Filter returns the filter of the replicated tables: SourceDB's tables that Tables selects,
// less the tables of online schema-change tools (OnlineDDLPatterns).
func (c Config) Filter() (*binlog.Filter, error) {
	f, err := binlog.NewFilter(c.SourceDB, c.Tables)
	if err != nil {
		return nil, err
	}
	o, err := binlog.ParseOnlineDDLPatterns(c.OnlineDDLPatterns)
	if err != nil {
		return nil, err
	}
	f.SetOnlineDDL(o)
	return f, nil
}

// targetDB is TargetDB, or SourceDB when it is empty.
func (c Config) targetDB() string {
	if c.TargetDB == "" {
		return c.SourceDB
	}
	return c.TargetDB
}

// Check checks cfg's servers before anything is written (see the package's doc). It returns
// every failure, one line each, wrapping ErrFailed: a configuration that a retry cannot fix. A
// server that cannot be reached is instead an error wrapping ErrUnreachable, and nothing else is
// checked: the caller retries.
func Check(ctx context.Context, cfg Config) error {
	var f findings
	err := checkSource(ctx, cfg.Source, &f)
	if err == nil {
		err = checkTarget(ctx, cfg.Target, &f)
	}
	if err == nil {
		err = checkTables(ctx, cfg, &f)
	}
	if err != nil && !errors.Is(err, errEnough) {
		return err
	}
	return f.err()
}

// findings are the failures found so far.
type findings struct{ lines []string }

func (f *findings) add(format string, args ...any) {
	f.lines = append(f.lines, fmt.Sprintf(format, args...))
}

// err is the findings as one error wrapping ErrFailed, nil when there are none.
func (f *findings) err() error {
	if len(f.lines) == 0 {
		return nil
	}
	return fmt.Errorf("%w:\n  %s", ErrFailed, strings.Join(f.lines, "\n  "))
}

// errEnough ends the checks early: what is left to check needs what failed. The findings so
// far are the result.
var errEnough = errors.New("no further checks")

// unreachable returns err as the side's server not reachable when it is one, else nil.
func unreachable(side string, err error) error {
	if !IsUnreachable(err) {
		return nil
	}
	return fmt.Errorf("%s %w: %w", side, ErrUnreachable, err)
}

// checkSource checks that the source logs rows as vplayer needs them and lets the user read its
// binary log position.
func checkSource(ctx context.Context, src *sql.DB, f *findings) error {
	if err := src.PingContext(ctx); err != nil {
		if uerr := unreachable("source", err); uerr != nil {
			return uerr
		}
		f.add("source: cannot connect: %v", err)
		return errEnough
	}
	var logBin, format, image string
	if err := src.QueryRowContext(ctx, "SELECT @@GLOBAL.log_bin, @@GLOBAL.binlog_format, @@GLOBAL.binlog_row_image").Scan(&logBin, &format, &image); err != nil {
		if uerr := unreachable("source", err); uerr != nil {
			return uerr
		}
		f.add("source: cannot read its binlog settings: %v", err)
	} else {
		checkBinlogSettings(ctx, src, logBin, format, image, f)
	}
	if _, _, err := snapshot.BinlogFile(ctx, src); err != nil {
		err = fmt.Errorf("read source binlog position: %w", err)
		if uerr := unreachable("source", err); uerr != nil {
			return uerr
		}
		f.add("source: %v: grant the user REPLICATION CLIENT (MariaDB: BINLOG MONITOR) and REPLICATION SLAVE", err)
	}
	return nil
}

// checkBinlogSettings checks the source's log_bin, binlog_format and binlog_row_image as read,
// and on MySQL its binlog_row_value_options.
func checkBinlogSettings(ctx context.Context, src *sql.DB, logBin, format, image string, f *findings) {
	if logBin != "1" && !strings.EqualFold(logBin, "ON") {
		f.add("source: log_bin is OFF: start the source with --log-bin")
	}
	if !strings.EqualFold(format, "ROW") {
		f.add("source: binlog_format is %s: set binlog_format=ROW (SET GLOBAL binlog_format='ROW' and in the server's configuration)", format)
	}
	// FULL, NOBLOB and MINIMAL images are applied exactly (SPEC 7); MySQL's PARTIAL_JSON is
	// checked below.
	if !strings.EqualFold(image, "FULL") && !strings.EqualFold(image, "NOBLOB") && !strings.EqualFold(image, "MINIMAL") {
		f.add("source: binlog_row_image is %s: set binlog_row_image=FULL", image)
	}
	// MySQL only (MariaDB has no such variable): a partial JSON update logs a diff, which
	// vplayer does not apply.
	var options string
	if err := src.QueryRowContext(ctx, "SELECT @@GLOBAL.binlog_row_value_options").Scan(&options); err == nil && strings.Contains(strings.ToUpper(options), "PARTIAL_JSON") {
		f.add("source: binlog_row_value_options is %s: vplayer does not apply partial JSON updates; set binlog_row_value_options='' (SET GLOBAL and in the server's configuration)", options)
	}
}

// checkTarget checks that the target can be reached and written to.
func checkTarget(ctx context.Context, tgt *sql.DB, f *findings) error {
	var readOnly string
	if err := tgt.QueryRowContext(ctx, "SELECT @@GLOBAL.read_only").Scan(&readOnly); err != nil {
		if uerr := unreachable("target", err); uerr != nil {
			return uerr
		}
		f.add("target: cannot connect: %v", err)
		return errEnough
	}
	if readOnly == "1" || strings.EqualFold(readOnly, "ON") {
		f.add("target: read_only is ON: vplayer must write to the target; point --target at a writable primary or SET GLOBAL read_only=OFF")
	}
	return nil
}
