package bench

import (
	"slices"
	"testing"
)

func TestServerSettings_notDefault(t *testing.T) {
	source := mariadbDefaults
	source.LogBin, source.LogSlaveUpdates, source.SyncBinlog = true, true, 1
	source.BinlogFormat, source.BinlogRowMetadata = "ROW", "FULL"
	source.InnodbBufferPoolSize = 256 << 20
	target := mariadbDefaults
	target.InnodbBufferPoolSize = 256 << 20
	target.SyncBinlog = 1 // inert without the binary log
	tests := []struct {
		name     string
		s        ServerSettings
		want     []string
		describe string
	}{
		{"defaults", mariadbDefaults, nil,
			"no binary log, innodb_flush_log_at_trx_commit=1, otherwise MariaDB's defaults"},
		{"source", source,
			[]string{"log_bin=ON", "log_slave_updates=ON", "sync_binlog=1", "binlog_format=ROW", "binlog_row_metadata=FULL", "innodb_buffer_pool_size=256M"},
			"binary log on (sync_binlog=1, binlog_format=ROW, binlog_row_metadata=FULL, log_slave_updates=ON), innodb_flush_log_at_trx_commit=1, otherwise MariaDB's defaults but innodb_buffer_pool_size=256M"},
		{"target", target, []string{"innodb_buffer_pool_size=256M"},
			"no binary log, innodb_flush_log_at_trx_commit=1, otherwise MariaDB's defaults but innodb_buffer_pool_size=256M"},
		{"small redo log, lazy flush", ServerSettings{BinlogFormat: "MIXED", BinlogRowMetadata: "NO_LOG", InnodbFlushLogAtTrxCommit: 2, InnodbLogFileSize: 48 << 20, InnodbBufferPoolSize: 128 << 20},
			[]string{"innodb_flush_log_at_trx_commit=2", "innodb_log_file_size=48M"},
			"no binary log, innodb_flush_log_at_trx_commit=2, otherwise MariaDB's defaults but innodb_log_file_size=48M"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.notDefault(); !slices.Equal(got, tt.want) {
				t.Errorf("notDefault()=%q, want %q", got, tt.want)
			}
			if got := tt.s.describe(); got != tt.describe {
				t.Errorf("describe()=%q\nwant        %q", got, tt.describe)
			}
		})
	}
}
