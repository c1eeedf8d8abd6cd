package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/vplayer/vplayer/workflow"
)

func targetStore(flagSet *pflag.FlagSet, target, sidecar string) (*workflow.Store, func(), error) {
	tgt, err := parseDSN("target", target, "VPLAYER_TARGET_PASSWORD")
	if err != nil {
		return nil, nil, err
	}
	pool, err := tgt.pool()
	if err != nil {
		return nil, nil, usagef("--target: %v", err)
	}
	return workflow.New(pool, sidecar), func() { pool.Close() }, nil
}

func statusCmd(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("vplayer status", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("target", "", "target DSN (required); VPLAYER_TARGET_PASSWORD overrides the password")
	wf := fs.String("workflow", "", "show only this workflow")
	asJSON := fs.Bool("json", false, "print JSON")
	sidecar := fs.String("sidecar-db", "_vt", "target database holding the vreplication record tables")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return errHelp
		}
		return usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	store, done, err := targetStore(fs, *target, *sidecar)
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var recs []workflow.Record
	if *wf != "" {
		rec, err := store.Get(ctx, *wf)
		if err != nil {
			return err
		}
		recs = []workflow.Record{rec}
	} else if recs, err = store.List(ctx); err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		out := make([]statusJSON, len(recs))
		for i, r := range recs {
			out[i] = toStatusJSON(r)
		}
		return enc.Encode(out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tWORKFLOW\tSTATE\tPOS\tLAG\tHEARTBEAT\tMESSAGE")
	now := time.Now().Unix()
	for _, r := range recs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Workflow, r.State, r.Pos, ago(now, r.TransactionTimestamp), ago(now, r.TimeHeartbeat), strings.ReplaceAll(r.Message, "\n", " "))
	}
	return tw.Flush()
}

func ago(now, t int64) string {
	if t == 0 {
		return "-"
	}
	return (time.Duration(now-t) * time.Second).String() + " ago"
}

type statusJSON struct {
	ID                   int64           `json:"id"`
	Workflow             string          `json:"workflow"`
	State                string          `json:"state"`
	Message              string          `json:"message"`
	Pos                  string          `json:"pos"`
	StopPos              string          `json:"stop_pos,omitempty"`
	DBName               string          `json:"db_name"`
	TimeUpdated          int64           `json:"time_updated"`
	TransactionTimestamp int64           `json:"transaction_timestamp"`
	TimeHeartbeat        int64           `json:"time_heartbeat"`
	Source               json.RawMessage `json:"source,omitempty"`
	Options              json.RawMessage `json:"options,omitempty"`
}

func toStatusJSON(r workflow.Record) statusJSON {
	s := statusJSON{ID: r.ID, Workflow: r.Workflow, State: r.State, Message: r.Message, Pos: r.Pos, StopPos: r.StopPos,
		DBName: r.DBName, TimeUpdated: r.TimeUpdated, TransactionTimestamp: r.TransactionTimestamp, TimeHeartbeat: r.TimeHeartbeat}
	if json.Valid([]byte(r.Source)) {
		s.Source = json.RawMessage(r.Source)
	}
	if json.Valid([]byte(r.Options)) {
		s.Options = json.RawMessage(r.Options)
	}
	return s
}

func stopCmd(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("vplayer stop", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("target", "", "target DSN (required); VPLAYER_TARGET_PASSWORD overrides the password")
	wf := fs.String("workflow", "", "workflow to stop (required)")
	sidecar := fs.String("sidecar-db", "_vt", "target database holding the vreplication record tables")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return errHelp
		}
		return usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if *wf == "" {
		return usagef("--workflow is required")
	}
	store, done, err := targetStore(fs, *target, *sidecar)
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec, err := store.Get(ctx, *wf)
	if err != nil {
		return err
	}
	if err := store.SetState(ctx, rec.ID, workflow.StateStopped, "Stopped by vplayer stop"); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "workflow %s: state set to Stopped (was %s); a running vplayer stops within a second\n", *wf, rec.State)
	return nil
}
