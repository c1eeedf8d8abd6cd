package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/vplayer/vplayer/internal/demo"
)

func demoCmd(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("vplayer demo", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var o demo.Options
	fs.DurationVar(&o.WorkloadFor, "workload-duration", 0, "how long the live workload runs (default 20s)")
	fs.DurationVar(&o.Deadline, "vplayer-progress-deadline", 0, "stall deadline in the second act (default 5s)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return errHelp
		}
		return usagef("%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return demo.Run(ctx, stdout, o)
}
