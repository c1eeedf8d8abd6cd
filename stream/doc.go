// Package stream runs one workflow: it creates or resumes the workflow's record, takes its
// lease, and runs attempts of the pipeline (binlog reader, relay log, gate, applier, watched by
// the stall watchdog) until a stop or a terminal error, retrying from the committed position
// after a retryable one. The gate in front of the applier is stream/gate; the checks before the
// first attempt and at each attempt's start are stream/preflight.
//
// # Who does what
//
// Stream keeps the orchestration: Run, an attempt's steps and the retry loop between attempts.
// The rest belongs to the nouns it holds. The owner (ownership.go) takes, keeps and checks the
// lease, whose fence every record write goes through, and tells a loss from the errors it
// explains. The reporter (report.go) tells the states and errors (Config.OnState and OnError,
// the ERROR lines, the record's state, the workflow's log rows, the record's message through
// the messenger) and decides each error's fate with the clock of --max-time-to-retry-on-error.
// The retrier (reachable.go) waits out a server that cannot be reached before anything runs.
// The controls (stop.go, pause.go, hold.go) follow the record's control fields (a stop or a
// start, the diff pause, the manual throttle) during an attempt and between attempts, and report
// the gate's holds. A copyPhase (copy.go) is one attempt's copy.
//
// # Run
//
// Run first prepares: the source's flavor, the record created or resumed, the start and stop
// positions, and the owner of the lease (an unreachable server is waited for). It then takes the
// lease (owner.acquire: waiting as a standby while another live process holds it, then ending the
// previous owner's target sessions and binlog connection), starts the lease's keepalive, writes
// the settings in force into the record, starts the messenger (the record's message, written from
// one goroutine) and, with --wait-while-stopped, waits while the workflow is stopped on purpose.
// Then it runs attempts. The keepalive and the messenger last for Run's life; the lease is
// released when Run returns.
//
// # An attempt
//
// An attempt (attempt) runs the pipeline once, from the position the record says is committed,
// in four steps:
//
//  1. Setup (setup), its round trips under one deadline (setupTimeout): the record read (a
//     Stopped record, once this process set the workflow Running, is a vplayer stop); the checks
//     no retry fixes (the source's history still has the position, no trigger on a replicated
//     target table, no stop position while copying); a stop position already reached, recorded
//     as Stopped; the copy phase, planned under its own deadline when the workflow copies; the
//     state set Copying or Running; the pause, the manual throttle, the DDL mark and the reader's
//     online schema change state read from the record.
//  2. Build (build): the relay log, the throttler, the heartbeat recorder, the copy's gate when
//     copying, the gate of the pause and the holds, the binlog reader, the applier and the stall
//     watchdog. Nothing connects yet; Config.OnStart receives the pipeline.
//  3. The lease checked (owner.holds): a process that lost the workflow opens no binlog
//     connection with its server id.
//  4. The pipeline run (runPipeline) under one errgroup: the reader, the applier, the watchdog,
//     the throttler's check loop, the stop poller (controls.watchStop: the record's state, pause
//     and throttle, and the holds' reports), the lease-loss watcher (owner.watch) and, when
//     copying, the copier. The first real error is reported at once (reporter.report: log line,
//     log row, message), before errgroup cancels the others; a fenced write's failure is left to
//     the retry loop, which asks the record. Once all have returned the relay log is closed.
//
// An attempt ends with an error, nil only when ctx ended: a stop (the stop position or a stop DDL
// reached, vplayer stop), the copy done, the binlog connection replaced by another of the
// workflow's server id while the lease is still held, the lease lost, or a stream error.
//
// # Between attempts
//
// The retry loop (attempts, afterError) decides what follows. A stop records Stopped and ends
// Run, or with --wait-while-stopped waits for vplayer start (controls.waitWhileStopped) and goes
// on. The copy done or a replaced binlog connection starts the next attempt at once. A lost lease
// ends Run with the loss, logged, and nothing more is written; so does a fenced write's failure,
// unless the record says the lease is still held, when it is the replicated data's error. An
// error is terminal when no retry can fix it or when the same kind has lasted
// --max-time-to-retry-on-error (an attempt that made progress starts that clock afresh): the
// workflow is set Error and Run returns it. Any other error is retried after --retry-delay
// (controls.waitRetry), during which a vplayer stop or the end of ctx is still noticed within a
// second; the next attempt's setup and lease check find a loss.
package stream
