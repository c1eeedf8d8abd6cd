package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/vplayer/vplayer/internal/tlsconfig"
	"github.com/vplayer/vplayer/workflow"
)

// recordCommand is a command that changes one workflow's record on the target: stop, throttle,
// unthrottle. It owns their shared flags.
type recordCommand struct {
	fs       *pflag.FlagSet
	target   *string
	workflow *string
	sidecar  *string
	tls      tlsFlags
}

func newRecordCommand(name, workflowHelp string, stderr io.Writer) *recordCommand {
	c := &recordCommand{fs: pflag.NewFlagSet(name, pflag.ContinueOnError)}
	c.fs.SetOutput(stderr)
	c.target = c.fs.String("target", "", "target DSN (required); VPLAYER_TARGET_PASSWORD overrides the password")
	c.workflow = c.fs.String("workflow", "", workflowHelp+" (required)")
	c.sidecar = c.fs.String("sidecar-db", "_vt", "target database holding the vreplication record tables")
	c.tls.register(c.fs, "target")
	return c
}

// parse parses args and opens the record store; done closes it.
func (c *recordCommand) parse(args []string) (store *workflow.Store, done func(), err error) {
	if err := parseArgs(c.fs, args); err != nil {
		return nil, nil, err
	}
	if *c.workflow == "" {
		return nil, nil, usagef("--workflow is required")
	}
	if _, err := tlsconfig.ParseMode(c.tls.mode); err != nil {
		return nil, nil, usagef("--target-tls-mode: %v", err)
	}
	return targetStore(c.fs, &c.tls, *c.target, *c.sidecar)
}

// throttleCmd holds a workflow back: vplayer throttle --workflow W [--for D] [--reason T].
func throttleCmd(args []string, stdout, stderr io.Writer) error {
	c := newRecordCommand("vplayer throttle", "workflow to hold back", stderr)
	d := c.fs.Duration("for", 0, "how long the throttle holds (0: until vplayer unthrottle)")
	reason := c.fs.String("reason", "", "why, shown in the record's message and vplayer status (at most 255 bytes)")
	store, done, err := c.parse(args)
	if err != nil {
		return err
	}
	defer done()
	if *d < 0 {
		return usagef("--for is %v: it must not be negative (0: until vplayer unthrottle)", *d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := store.Throttle(ctx, *c.workflow, *d, *reason); err != nil {
		return err
	}
	until := "until vplayer unthrottle"
	if *d > 0 {
		until = "for " + d.String()
	}
	fmt.Fprintf(stdout, "workflow %s: throttled %s; the process that owns it holds at its next transaction boundary within a second\n", *c.workflow, until)
	return nil
}

// unthrottleCmd ends a workflow's manual throttle.
func unthrottleCmd(args []string, stdout, stderr io.Writer) error {
	c := newRecordCommand("vplayer unthrottle", "workflow whose manual throttle ends", stderr)
	store, done, err := c.parse(args)
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := store.Unthrottle(ctx, *c.workflow); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "workflow %s: manual throttle ended; the process that owns it goes on within a second (other throttles still apply)\n", *c.workflow)
	return nil
}

// parseArgs parses args into fs: --help is errHelp, a bad flag or a stray argument a usage error.
func parseArgs(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return errHelp
		}
		return usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	return nil
}
