package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/slurmcli"
)

func newPriorityCmd(g *globalFlags) *cobra.Command {
	var (
		job  uint64
		user string
	)
	cmd := &cobra.Command{
		Use:   "priority [-j JOB] [-u USER] [--json]",
		Short: "Show pending jobs' priorities factor by factor, highest first (like sprio)",
		Long: `Shows each pending job's multifactor priority as the leader orders the queue
by it: PRIORITY is AGE + FAIRSHARE + JOBSIZE + QOS (each factor, in [0,1],
times its weight in the queue policy), less NICE. See shoal policy show.`,
		Args: cobra.NoArgs,
		RunE: showRun(g, func(c *api.Client, ctx context.Context) ([]api.Priority, error) { return c.Priorities(ctx, job, user) }, func(cmd *cobra.Command, ps []api.Priority) error {
			slurmcli.PrintPriorities(cmd.OutOrStdout(), ps, true, false)
			return nil
		}),
	}
	f := cmd.Flags()
	f.Uint64VarP(&job, "job", "j", 0, "show only this job")
	f.StringVarP(&user, "user", "u", "", "show only this user's jobs")
	f.BoolVar(&g.json, "json", false, "print JSON (with the unweighted factors)")
	return cmd
}
