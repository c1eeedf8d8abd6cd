// Package stall decides when a replication stream has stopped making
// progress and says where the time goes.
//
// It has three detectors (SPEC section 4):
//
//   - [RelayLog]: the binlog reader has been blocked in Put on a full relay
//     log for the progress deadline;
//   - [Applier]: the applier has held work (an open target transaction or
//     fetched, unapplied items) for the progress deadline without committing;
//   - [Heartbeat]: one heartbeat write has been in flight for the heartbeat
//     interval.
//
// The decision is the pure function [Check] of a [Config], a [Snapshot] of
// start times and the current instant: no clock, no goroutines, no locks.
// The driver [Watchdog] turns exactly one timer into calls of Check on
// snapshots read from a [Probe]; its Run is the one watchdog goroutine of a
// stream. Per transaction or event, the rest of vplayer does nothing beyond
// storing start times where the Probe can read them and, optionally, an O(1)
// non-blocking [Watchdog.Poke].
//
// The package imports nothing from MySQL, go-mysql or the rest of vplayer.
package stall
