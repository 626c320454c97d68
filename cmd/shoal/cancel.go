package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/request"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/slurmcli"
	"github.com/shoal-sched/shoal/slurm"
)

func newCancelCmd(g *globalFlags) *cobra.Command {
	var (
		signal string
		batch  bool
	)
	cmd := &cobra.Command{
		Use:   "cancel [--signal SIG [--batch]] ID [ID...]",
		Short: "Cancel jobs: every rank on every node is stopped (SIGTERM, then SIGKILL after the kill-wait)",
		Long: `Cancels jobs: every rank on every node gets SIGTERM, then SIGKILL after the
agents' --kill-wait. With --signal SIG the job is not cancelled: SIG goes to
its running tasks on every node (its steps' tasks, and the ranks of a job
without a batch script); with --batch as well, to the batch script's shell
only, as scancel --signal SIG [--batch] does.`,
		Example: `  shoal cancel 12
  shoal cancel --signal USR1 12
  shoal cancel --signal USR1 --batch 12`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var sig api.SignalRequest
			if cmd.Flags().Changed("signal") {
				n, err := slurmcli.SignalName("--signal", signal)
				if err != nil {
					return err
				}
				sig = api.SignalRequest{Signal: n, BatchOnly: batch}
			} else if batch {
				return errors.New("--batch: only with --signal (it says which tasks get the signal)")
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			verb := "cancel"
			if sig.Signal != 0 {
				verb = "signal"
			}
			var failed error
			for _, a := range args {
				id, err := slurm.ParseJobID(a)
				if err == nil {
					if sig.Signal != 0 {
						sig.RequestID = request.NewID() // one request per job: sent again across a failover, delivered once
						err = c.Signal(cmd.Context(), id, sig)
					} else {
						err = c.Cancel(cmd.Context(), id)
					}
				}
				if err != nil {
					fmt.Fprintf(os.Stderr, "shoal: %s %s: %v\n", verb, a, err)
					failed = fmt.Errorf("some jobs were not %sled", verb)
				}
			}
			return failed
		},
	}
	f := cmd.Flags()
	f.StringVarP(&signal, "signal", "s", "", "send this signal (USR1, SIGTERM, 10...) to the job's running tasks instead of cancelling it")
	f.BoolVarP(&batch, "batch", "b", false, "with --signal: signal only the batch script's shell")
	return cmd
}
