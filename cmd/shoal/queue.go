package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/slurmcli"
	"github.com/shoal-sched/shoal/slurm"
)

func newQueueCmd(g *globalFlags) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "List pending and running jobs, like squeue",
		Args:  cobra.NoArgs,
		RunE: showRun(g, func(c *api.Client, ctx context.Context) ([]api.Job, error) { return c.Jobs(ctx, all) }, func(cmd *cobra.Command, jobs []api.Job) error {
			printQueue(os.Stdout, jobs, time.Now())
			return nil
		}),
	}
	cmd.Flags().BoolVar(&all, "all", false, "include finished jobs")
	cmd.Flags().BoolVar(&g.json, "json", false, "print JSON")
	return cmd
}

func printQueue(w io.Writer, jobs []api.Job, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "JOBID\tNAME\tUSER\tST\tTIME\tNODES\tNODELIST(REASON)\t")
	for _, j := range jobs {
		st := slurm.JobStateCode(j.State)
		where := slurm.CompressHostlist(j.Nodes)
		if j.State == "PENDING" {
			where = "(" + orNone(j.Reason) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t\n", slurmcli.JobIDString(j), truncate(j.Name, 8), truncate(j.User, 8), st,
			slurm.FormatElapsed(slurmcli.Elapsed(j, now)), j.NumNodes, where)
	}
	tw.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "None"
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
