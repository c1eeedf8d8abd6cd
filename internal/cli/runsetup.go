package cli

import (
	"log/slog"

	"github.com/spf13/pflag"

	"github.com/vplayer/vplayer/binlog"
	"github.com/vplayer/vplayer/stream"
)

// runSetup is what run and check make of run's flags before anything connects: the two DSNs with
// their TLS settled, the databases and the replica server id.
type runSetup struct {
	src, tgt           *endpoint
	sourceDB, targetDB string
	serverID           uint32
}

// setup turns run's parsed and validated flags into a runSetup. Every error is bad usage, found
// before any connection.
func (f *runFlags) setup(fs *pflag.FlagSet) (*runSetup, error) {
	src, err := parseDSN("source", f.source, "VPLAYER_SOURCE_PASSWORD")
	if err != nil {
		return nil, err
	}
	tgt, err := parseDSN("target", f.target, "VPLAYER_TARGET_PASSWORD")
	if err != nil {
		return nil, err
	}
	if err := configureBothTLS(fs, &f.sourceTLS, &f.targetTLS, src, tgt); err != nil {
		return nil, err
	}
	rs := &runSetup{src: src, tgt: tgt, sourceDB: f.sourceDB, targetDB: f.targetDB, serverID: f.serverID}
	if rs.sourceDB == "" {
		rs.sourceDB = src.cfg.DBName
	}
	if rs.sourceDB == "" {
		return nil, usagef("no source database: set --source-db or name it in the --source DSN (.../db)")
	}
	if rs.targetDB == "" {
		rs.targetDB = tgt.cfg.DBName
	}
	if rs.targetDB == "" {
		rs.targetDB = rs.sourceDB
	}
	if rs.serverID == 0 {
		rs.serverID = binlog.ServerIDFor(f.workflow)
	}
	return rs, nil
}

// streamConfig returns the stream's settings for rs, with a pool for each server and the holds'
// replicas; closeAll closes them all, and is to be called whatever the error.
func (f *runFlags) streamConfig(rs *runSetup, logger *slog.Logger) (cfg stream.Config, closeAll func(), err error) {
	var closers []func()
	closeAll = func() {
		for _, c := range closers {
			c()
		}
	}
	srcPool, err := rs.src.pool()
	if err != nil {
		return cfg, closeAll, usagef("--source: %v", err)
	}
	closers = append(closers, func() { srcPool.Close() })
	tgtPool, err := rs.tgt.pool()
	if err != nil {
		return cfg, closeAll, usagef("--target: %v", err)
	}
	closers = append(closers, func() { tgtPool.Close() })
	cfg = f.settings()
	cfg.Source = stream.Source{
		Host: rs.src.host, Port: rs.src.port, User: rs.src.cfg.User, Password: rs.src.cfg.Passwd,
		TLS: rs.src.cfg.TLS, DB: rs.sourceDB, Tables: f.tables, Pool: srcPool,
	}
	cfg.Target, cfg.TargetDB, cfg.ServerID = tgtPool, rs.targetDB, rs.serverID
	cfg.Options = f.optionsJSON(rs.targetDB, rs.serverID)
	cfg.Logger = logger
	closeReplicas, err := f.hold.apply(&cfg)
	closers = append(closers, closeReplicas)
	return cfg, closeAll, err
}
