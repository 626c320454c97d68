package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/slurmcli"
)

func newJobCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "job ID",
		Short: "Show one job (ID, or N_M for an array element): state, placement, exit code (like scontrol show job), GPU usage per node",
		Args:  cobra.ExactArgs(1),
		RunE: showArgRun(g, func(arg string) (string, error) { return slurmcli.JobRefArg(arg, false) }, (*api.Client).JobByRef,
			func(_ *cobra.Command, j api.Job) error {
				slurmcli.PrintJob(os.Stdout, j)
				slurmcli.PrintGPUUsage(os.Stdout, j)
				slurmcli.PrintResizes(os.Stdout, j)
				return nil
			}),
	}
	cmd.Flags().BoolVar(&g.json, "json", false, "print JSON")
	return cmd
}
