package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/shoal-sched/shoal/slurm"
)

// runScontrol is the subset of scontrol that scripts use: show hostnames
// (the MASTER_ADDR idiom), show hostlist, show job.
func runScontrol(ctx context.Context, g *globalFlags, args []string, out io.Writer) error {
	if len(args) > 0 {
		if handled, err := runScontrolWrite(ctx, g, args); handled {
			return err
		}
	}
	if len(args) >= 2 && strings.EqualFold(args[0], "show") {
		switch strings.ToLower(args[1]) {
		case "hostnames", "hostname":
			list := strings.Join(args[2:], ",")
			if list == "" {
				list = os.Getenv("SLURM_JOB_NODELIST")
			}
			if list == "" {
				return fmt.Errorf("show hostnames: no hostlist given and SLURM_JOB_NODELIST is not set")
			}
			names, err := slurm.ExpandHostlist(list)
			if err != nil {
				return err
			}
			for _, n := range names {
				fmt.Fprintln(out, n)
			}
			return nil
		case "hostlist":
			var names []string
			for _, a := range args[2:] {
				expanded, err := slurm.ExpandHostlist(a)
				if err != nil {
					return err
				}
				names = append(names, expanded...)
			}
			fmt.Fprintln(out, slurm.CompressHostlist(names))
			return nil
		case "job":
			if len(args) != 3 {
				return fmt.Errorf("show job: want a job id")
			}
			ref, err := parseJobRefArg(args[2], false)
			if err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			j, err := c.JobByRef(ctx, ref)
			if err != nil {
				return err
			}
			printJob(out, j)
			return nil
		case "partition", "partitions":
			c, err := g.client()
			if err != nil {
				return err
			}
			pol, err := c.Policy(ctx)
			if err != nil {
				return err
			}
			return printPartitions(out, pol.Policy, args[2:])
		case "node", "nodes":
			return scontrolShowNodes(ctx, g, args[2:], out)
		}
	}
	return fmt.Errorf("scontrol %s: not supported by Shoal yet (show hostnames, show hostlist, show job, show nodes, hold, uhold, release, requeue, requeuehold and update NodeName= are)", strings.Join(args, " "))
}
