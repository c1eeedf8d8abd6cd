package bench

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ServerSettings are the variables that decide what a commit costs, as a server reports them.
type ServerSettings struct {
	LogBin                    bool   `json:"log_bin"`
	LogSlaveUpdates           bool   `json:"log_slave_updates"`
	SyncBinlog                int    `json:"sync_binlog"`
	BinlogFormat              string `json:"binlog_format"`
	BinlogRowMetadata         string `json:"binlog_row_metadata"`
	InnodbFlushLogAtTrxCommit int    `json:"innodb_flush_log_at_trx_commit"`
	InnodbLogFileSize         int64  `json:"innodb_log_file_size"`
	InnodbBufferPoolSize      int64  `json:"innodb_buffer_pool_size"`
}

// mariadbDefaults are MariaDB 10.11's defaults of ServerSettings.
var mariadbDefaults = ServerSettings{
	SyncBinlog:                0,
	BinlogFormat:              "MIXED",
	BinlogRowMetadata:         "NO_LOG",
	InnodbFlushLogAtTrxCommit: 1,
	InnodbLogFileSize:         96 << 20,
	InnodbBufferPoolSize:      128 << 20,
}

// stockLogFileSize is MariaDB's default innodb_log_file_size, which every server of the catchup,
// insert and lag modes runs with (internal/mysqld's own default is half of it, for tests).
const stockLogFileSize = "96M"

// readSettings reads s's ServerSettings from the server.
func readSettings(ctx context.Context, db *sql.DB) (ServerSettings, error) {
	var s ServerSettings
	err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.log_bin, @@GLOBAL.log_slave_updates, @@GLOBAL.sync_binlog, "+
		"@@GLOBAL.binlog_format, @@GLOBAL.binlog_row_metadata, @@GLOBAL.innodb_flush_log_at_trx_commit, "+
		"@@GLOBAL.innodb_log_file_size, @@GLOBAL.innodb_buffer_pool_size").Scan(
		&s.LogBin, &s.LogSlaveUpdates, &s.SyncBinlog, &s.BinlogFormat, &s.BinlogRowMetadata,
		&s.InnodbFlushLogAtTrxCommit, &s.InnodbLogFileSize, &s.InnodbBufferPoolSize)
	if err != nil {
		return s, fmt.Errorf("read server settings: %w", err)
	}
	return s, nil
}

// notDefault lists, as name=value, the settings of s that differ from MariaDB's defaults. The
// binary log's settings are left out when the binary log is off: they then do nothing.
func (s ServerSettings) notDefault() []string {
	d := mariadbDefaults
	var out []string
	add := func(differs bool, name, value string) {
		if differs {
			out = append(out, name+"="+value)
		}
	}
	onOff := func(b bool) string {
		if b {
			return "ON"
		}
		return "OFF"
	}
	add(s.LogBin != d.LogBin, "log_bin", onOff(s.LogBin))
	if s.LogBin {
		add(s.LogSlaveUpdates != d.LogSlaveUpdates, "log_slave_updates", onOff(s.LogSlaveUpdates))
		add(s.SyncBinlog != d.SyncBinlog, "sync_binlog", strconv.Itoa(s.SyncBinlog))
		add(s.BinlogFormat != d.BinlogFormat, "binlog_format", s.BinlogFormat)
		add(s.BinlogRowMetadata != d.BinlogRowMetadata, "binlog_row_metadata", s.BinlogRowMetadata)
	}
	add(s.InnodbFlushLogAtTrxCommit != d.InnodbFlushLogAtTrxCommit, "innodb_flush_log_at_trx_commit", strconv.Itoa(s.InnodbFlushLogAtTrxCommit))
	add(s.InnodbLogFileSize != d.InnodbLogFileSize, "innodb_log_file_size", size(s.InnodbLogFileSize))
	add(s.InnodbBufferPoolSize != d.InnodbBufferPoolSize, "innodb_buffer_pool_size", size(s.InnodbBufferPoolSize))
	return out
}

// size writes a byte count as the server's options do ("96M").
func size(b int64) string {
	if b%(1<<20) == 0 {
		return strconv.FormatInt(b>>20, 10) + "M"
	}
	return strconv.FormatInt(b, 10)
}

// describe says what the settings are: the binary log, the redo log's flushing, and what else
// is not MariaDB's default.
func (s ServerSettings) describe() string {
	var b strings.Builder
	var binlog []string
	if s.LogBin {
		binlog = []string{"sync_binlog=" + strconv.Itoa(s.SyncBinlog), "binlog_format=" + s.BinlogFormat,
			"binlog_row_metadata=" + s.BinlogRowMetadata}
		if s.LogSlaveUpdates {
			binlog = append(binlog, "log_slave_updates=ON")
		}
		fmt.Fprintf(&b, "binary log on (%s)", strings.Join(binlog, ", "))
	} else {
		b.WriteString("no binary log")
	}
	fmt.Fprintf(&b, ", innodb_flush_log_at_trx_commit=%d", s.InnodbFlushLogAtTrxCommit)
	var rest []string
	for _, nd := range s.notDefault() {
		if name, _, _ := strings.Cut(nd, "="); name != "innodb_flush_log_at_trx_commit" && name != "log_bin" && !slices.Contains(binlog, nd) {
			rest = append(rest, nd)
		}
	}
	if len(rest) == 0 {
		b.WriteString(", otherwise MariaDB's defaults")
	} else {
		b.WriteString(", otherwise MariaDB's defaults but " + strings.Join(rest, ", "))
	}
	return b.String()
}

// settingsOf reads the settings of the source and of every target, which must all be the same.
func settingsOf(ctx context.Context, src *sql.DB, targets map[string]*sql.DB) (Settings, error) {
	var st Settings
	var err error
	if st.Source, err = readSettings(ctx, src); err != nil {
		return st, err
	}
	first := ""
	for name, db := range targets {
		t, err := readSettings(ctx, db)
		if err != nil {
			return st, fmt.Errorf("%s's target: %w", name, err)
		}
		if first != "" && t != st.Targets {
			return st, fmt.Errorf("the targets' settings differ: %s's %+v, %s's %+v", first, st.Targets, name, t)
		}
		first, st.Targets = name, t
	}
	st.SourceNotDefault, st.TargetsNotDefault = st.Source.notDefault(), st.Targets.notDefault()
	return st, nil
}

// line says what the servers ran with, for the tables' headers.
func (s Settings) line() string {
	return "source: " + s.Source.describe() + "; every target: " + s.Targets.describe()
}
