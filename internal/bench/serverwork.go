package bench

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// workCounters are the target's global status counters that say how much work an applier's
// SQL gave it: statements, commits, rows read and written, bytes received; and what its commits
// cost: InnoDB's fsyncs (the redo log's among them), the binary log's group commits (one fsync
// each with sync_binlog=1), the redo log and the pages written.
var workCounters = []string{"Questions", "Com_commit", "Com_select", "Com_set_option",
	"Com_insert", "Com_update", "Com_delete", "Com_replace", "Handler_read_key", "Innodb_rows_read",
	"Innodb_rows_updated", "Innodb_rows_inserted", "Innodb_rows_deleted", "Bytes_received",
	"Innodb_data_fsyncs", "Binlog_group_commits", "Innodb_os_log_written", "Innodb_pages_written"}

// serverWork is a snapshot of a server's workCounters.
type serverWork map[string]int64

func readWork(ctx context.Context, db *sql.DB) (serverWork, error) {
	q := "SHOW GLOBAL STATUS WHERE Variable_name IN ('" + strings.Join(workCounters, "','") + "')"
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("read the target's status counters: %w", err)
	}
	defer rows.Close()
	w := serverWork{}
	for rows.Next() {
		var name string
		var v int64
		if err := rows.Scan(&name, &v); err != nil {
			return nil, err
		}
		w[name] = v
	}
	return w, rows.Err()
}

// perTxn describes what the server did between before and w, per source transaction: the
// counters that moved, in workCounters' order.
func (w serverWork) perTxn(before serverWork, txns int64) string {
	if txns <= 0 {
		return ""
	}
	var b strings.Builder
	for _, name := range workCounters {
		d := w[name] - before[name]
		if d == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %.2f", name, float64(d)/float64(txns))
	}
	return b.String()
}
