package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/vplayer/vplayer/internal/tlsconfig"
	"github.com/vplayer/vplayer/workflow"
)

// targetStore opens the record store of the --target DSN, with the --target-tls-* flags.
func targetStore(fs *pflag.FlagSet, tf *tlsFlags, target, sidecar string) (*workflow.Store, func(), error) {
	tgt, err := parseDSN("target", target, "VPLAYER_TARGET_PASSWORD")
	if err != nil {
		return nil, nil, err
	}
	st, err := tf.settings(fs, tgt)
	if err != nil {
		return nil, nil, err
	}
	if err := tgt.configureTLS(st); err != nil {
		return nil, nil, err
	}
	pool, err := tgt.pool()
	if err != nil {
		return nil, nil, usagef("--target: %v", err)
	}
	return workflow.New(pool, sidecar), func() { pool.Close() }, nil
}

// watchInterval is how often status --watch refreshes.
const watchInterval = time.Second

func statusCmd(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("vplayer status", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("target", "", "target DSN (required); VPLAYER_TARGET_PASSWORD overrides the password")
	wf := fs.String("workflow", "", "show only this workflow")
	asJSON := fs.Bool("json", false, "print JSON")
	watchIt := fs.Bool("watch", false, "refresh every second until interrupted")
	sidecar := fs.String("sidecar-db", "_vt", "target database holding the vreplication record tables")
	var tf tlsFlags
	tf.register(fs, "target")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return errHelp
		}
		return usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if _, err := tlsconfig.ParseMode(tf.mode); err != nil {
		return usagef("--target-tls-mode: %v", err)
	}
	store, done, err := targetStore(fs, &tf, *target, *sidecar)
	if err != nil {
		return err
	}
	defer done()
	show := func(ctx context.Context, w io.Writer) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		recs, err := readRecords(ctx, store, *wf)
		if err != nil {
			return err
		}
		copies := readCopies(ctx, store, recs)
		now := time.Now()
		if *asJSON {
			return renderStatusJSONCopies(w, recs, copies, now)
		}
		return renderStatusTableCopies(w, recs, copies, now)
	}
	if !*watchIt {
		return show(context.Background(), stdout)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return watch(ctx, stdout, isTerminal(stdout), watchInterval, show)
}

// readRecords reads one workflow's record, or all of them when name is empty.
func readRecords(ctx context.Context, store *workflow.Store, name string) ([]workflow.Record, error) {
	if name == "" {
		return store.List(ctx)
	}
	rec, err := store.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	return []workflow.Record{rec}, nil
}

func stopCmd(args []string, stdout, stderr io.Writer) error {
	c := newRecordCommand("vplayer stop", "workflow to stop", stderr)
	store, done, err := c.parse(args)
	if err != nil {
		return err
	}
	defer done()
	wf := c.workflow
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec, err := store.Get(ctx, *wf)
	if err != nil {
		return err
	}
	if err := store.SetState(ctx, rec.ID, workflow.StateStopped, workflow.StopRequestedMessage); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "workflow %s: state set to Stopped (was %s); a running vplayer stops within a second\n", *wf, rec.State)
	return nil
}
