package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/slurm"
)

func newQueueCmd(g *globalFlags) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "List pending and running jobs, like squeue",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			jobs, err := c.Jobs(cmd.Context(), all)
			if err != nil {
				return err
			}
			if g.json {
				return printJSON(jobs)
			}
			printQueue(os.Stdout, jobs, time.Now())
			return nil
		},
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t\n", jobIDString(j), truncate(j.Name, 8), truncate(j.User, 8), st,
			slurm.FormatElapsed(elapsed(j, now)), j.NumNodes, where)
	}
	tw.Flush()
}

// elapsed is how long the job has run (squeue's TIME).
func elapsed(j api.Job, now time.Time) time.Duration {
	start, err := time.Parse(time.RFC3339, j.StartTime)
	if err != nil {
		return 0
	}
	end := now
	if e, err := time.Parse(time.RFC3339, j.EndTime); err == nil {
		end = e
	}
	if end.Before(start) {
		return 0
	}
	return end.Sub(start).Truncate(time.Second)
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

// joinInts renders GPU indices as "0,1,2".
func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ",")
}
