package bench

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"
)

// gtidWaitSeconds is the timeout of one MASTER_GTID_WAIT call; between calls the replica's
// threads are checked for errors.
const gtidWaitSeconds = 1

// configure sets the replica's parallel threads (0: single-threaded) and the optimistic mode.
// The replica must be stopped.
func (n native) configure(ctx context.Context) error {
	for _, q := range []string{
		"SET GLOBAL slave_parallel_threads = " + strconv.Itoa(n.threads),
		"SET GLOBAL slave_parallel_mode = 'optimistic'",
	} {
		if _, err := n.db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %s: %w", n.name, q, err)
		}
	}
	return nil
}

// start runs START SLAVE.
func (n native) start(ctx context.Context) error { return n.server.StartReplica(ctx) }

// stop runs STOP SLAVE, which waits for the replica's threads to stop.
func (n native) stop(ctx context.Context) error { return n.server.StopReplica(ctx) }

// catchUp starts the replica, waits until it has applied the source's position want, and stops
// it. The time is from START SLAVE to the moment MASTER_GTID_WAIT returned; CPU time is that of
// the replica and of the source (sourcePID) over the same span.
func (n native) catchUp(ctx context.Context, want string, sourcePID int) (timing, error) {
	var tm timing
	if err := n.configure(ctx); err != nil {
		return tm, err
	}
	cpu := startCPU(n.pid, sourcePID)
	began := time.Now()
	if err := n.start(ctx); err != nil {
		return tm, err
	}
	err := n.waitFor(ctx, want)
	tm.took = time.Since(began)
	used := cpu.stop()
	tm.targetCPU, tm.sourceCPU = used[0], used[1]
	if serr := n.stop(context.WithoutCancel(ctx)); err == nil {
		err = serr
	}
	return tm, err
}

// waitFor blocks until the replica has applied want (a MariaDB GTID position), failing when a
// replication thread stops with an error.
func (n native) waitFor(ctx context.Context, want string) error {
	conn, err := n.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for {
		var res sql.NullInt64
		if err := conn.QueryRowContext(ctx, "SELECT MASTER_GTID_WAIT(?, ?)", want, gtidWaitSeconds).Scan(&res); err != nil {
			return fmt.Errorf("%s: wait for %s: %w", n.name, want, err)
		}
		if res.Valid && res.Int64 == 0 {
			return nil
		}
		if err := replicaError(ctx, conn); err != nil {
			return fmt.Errorf("%s: %w", n.name, err)
		}
	}
}

// replicaError returns the error a stopped replication thread reports, if any.
func replicaError(ctx context.Context, conn *sql.Conn) error {
	rows, err := conn.QueryContext(ctx, "SHOW SLAVE STATUS")
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	if !rows.Next() {
		return fmt.Errorf("not a replica: SHOW SLAVE STATUS is empty")
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return err
	}
	st := map[string]string{}
	for i, c := range cols {
		st[c] = vals[i].String
	}
	if st["Slave_SQL_Running"] == "No" && st["Last_SQL_Error"] != "" {
		return fmt.Errorf("replica SQL thread stopped: %s", st["Last_SQL_Error"])
	}
	if st["Slave_IO_Running"] == "No" && st["Last_IO_Error"] != "" {
		return fmt.Errorf("replica I/O thread stopped: %s", st["Last_IO_Error"])
	}
	return rows.Err()
}
