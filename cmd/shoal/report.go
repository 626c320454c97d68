package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/report"
	"github.com/shoal-sched/shoal/slurm"
)

func newReportCmd(g *globalFlags) *cobra.Command {
	var start, end string
	cmd := &cobra.Command{
		Use:   "report",
		Short: "GPU usage over a period: GPU-hours by user and account, utilization of allocated GPUs, queue wait, jobs by final state, jobs that left their GPUs idle",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			now := time.Now()
			from, err := slurm.ParseDate(start, now)
			if err != nil {
				return fmt.Errorf("--start: %w", err)
			}
			to, err := slurm.ParseDate(end, now)
			if err != nil {
				return fmt.Errorf("--end: %w", err)
			}
			if !from.Before(to) {
				return fmt.Errorf("--start %s is not before --end %s", from.Format(time.RFC3339), to.Format(time.RFC3339))
			}
			get := func(c *api.Client, ctx context.Context) (report.Report, error) {
				jobs, err := c.Jobs(ctx, true)
				if err != nil {
					return report.Report{}, err
				}
				return report.Compute(jobs, from, to, now), nil
			}
			return showRun(g, get, func(_ *cobra.Command, r report.Report) error {
				report.Print(os.Stdout, r)
				return nil
			})(cmd, args)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&start, "start", "S", "now-1days", "start of the period, in sacct's -S forms (now-7days, 2026-11-01, midnight, ...)")
	f.StringVarP(&end, "end", "E", "now", "end of the period, in sacct's -E forms")
	f.BoolVar(&g.json, "json", false, "print JSON")
	return cmd
}
