package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/cmd/shoal/internal/slurmcli"
)

func newJobCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "job ID",
		Short: "Show one job (ID, or N_M for an array element): state, placement, exit code (like scontrol show job), GPU usage per node",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := slurmcli.JobRefArg(args[0], false)
			if err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			j, err := c.JobByRef(cmd.Context(), ref)
			if err != nil {
				return err
			}
			if g.json {
				return printJSON(j)
			}
			slurmcli.PrintJob(os.Stdout, j)
			slurmcli.PrintGPUUsage(os.Stdout, j)
			slurmcli.PrintResizes(os.Stdout, j)
			return nil
		},
	}
	cmd.Flags().BoolVar(&g.json, "json", false, "print JSON")
	return cmd
}
