// Package cli implements vplayer's subcommands: flag parsing and validation, signals, logging
// setup and exit codes. It wires the other packages together and holds no replication logic.
package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/vplayer/vplayer/workflow"
)

// Exit codes.
const (
	ExitOK    = 0 // requested stop
	ExitError = 1 // terminal error or failed preflight
	ExitUsage = 2 // bad usage or configuration, reported before any connection
	// ExitLostLease: run lost the workflow's lease to another process. Unlike 1, a restart
	// helps: the process comes back as a standby, so supervisors restart it.
	ExitLostLease = 3
)

// usageError is bad usage or configuration: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

const topUsage = `vplayer replicates a MySQL or MariaDB source's row-based binary log into a target database,
exactly once, through a bounded relay log.

Usage:
  vplayer run    --workflow W --source DSN --target DSN [flags]   start or resume a workflow
  vplayer check  --workflow W --source DSN --target DSN [flags]   run run's preflight checks, writing nothing
  vplayer status --target DSN [--source DSN] [--workflow W] [--log N] [--json] [--watch]
                                                                   show workflows: state, backlog, lag, owner, holds, copy
  vplayer stop   --target DSN --workflow W                         ask a running workflow to stop
  vplayer start  --target DSN --workflow W                         make a Stopped workflow runnable again
  vplayer delete --target DSN --workflow W [--force]               remove a workflow's record, log and copy state
  vplayer throttle --target DSN --workflow W [--for D] [--reason T] hold a workflow back (held, not stalled)
  vplayer unthrottle --target DSN --workflow W                     end a manual throttle
  vplayer diff   --workflow W --source DSN --target DSN [flags]   compare source and target at one position
  vplayer demo                                                     replicate a live workload locally
  vplayer version                                                  print the version, VCS revision and Go version (also --version)

DSNs use the go-sql-driver form user:pass@tcp(host:port)/db. VPLAYER_SOURCE_PASSWORD and
VPLAYER_TARGET_PASSWORD override the DSN passwords so they stay out of ps.

Run 'vplayer <command> --help' for a command's flags.
`

// Main runs the command line args and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, topUsage)
		return ExitUsage
	}
	var err error
	switch args[0] {
	case "run":
		err = runCmd(args[1:], stdout, stderr)
	case "status":
		err = statusCmd(args[1:], stdout, stderr)
	case "stop":
		err = stopCmd(args[1:], stdout, stderr)
	case "start":
		err = startCmd(args[1:], stdout, stderr)
	case "delete":
		err = deleteCmd(args[1:], stdout, stderr)
	case "check":
		err = checkCmd(args[1:], stdout, stderr)
	case "throttle":
		err = throttleCmd(args[1:], stdout, stderr)
	case "unthrottle":
		err = unthrottleCmd(args[1:], stdout, stderr)
	case "diff":
		err = diffCmd(args[1:], stdout, stderr)
	case "demo":
		err = demoCmd(args[1:], stdout, stderr)
	case "version", "--version":
		err = versionCmd(args[1:], stdout)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, topUsage)
		return ExitOK
	default:
		fmt.Fprintf(stderr, "vplayer: unknown command %q\n\n%s", args[0], topUsage)
		return ExitUsage
	}
	return exitCode(err, stderr)
}

func exitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, errHelp) {
		return ExitOK
	}
	if errors.Is(err, workflow.ErrLostOwnership) {
		fmt.Fprintf(stderr, "vplayer: %v\n", err)
		return ExitLostLease
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "vplayer: %s\n", strings.TrimSpace(ue.msg))
		return ExitUsage
	}
	var ce *codedError
	if errors.As(err, &ce) {
		if ce.msg != "" {
			fmt.Fprintf(stderr, "vplayer: %s\n", ce.msg)
		}
		return ce.code
	}
	fmt.Fprintf(stderr, "vplayer: %v\n", err)
	return ExitError
}
