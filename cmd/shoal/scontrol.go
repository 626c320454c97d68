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
// (the MASTER_ADDR idiom), show hostlist and hostlistsorted, show job.
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
				// Slurm 22.05 says so and exits 0 (shared/peers/slurm's golden).
				fmt.Fprintln(os.Stderr, "scontrol: error: host list is empty")
				return nil
			}
			names, err := slurm.ExpandHostlist(list)
			if err != nil {
				return err
			}
			for _, n := range names {
				fmt.Fprintln(out, n)
			}
			return nil
		case "hostlist", "hostlistsorted":
			// Unlike hostnames, Slurm 22.05 reads no SLURM_JOB_NODELIST here:
			// with no argument it fails (shared/peers/slurm's golden).
			if len(args) == 2 {
				return fmt.Errorf("invalid encode argument")
			}
			var names []string
			for _, a := range args[2:] {
				expanded, err := slurm.ExpandHostlist(a)
				if err != nil {
					return err
				}
				names = append(names, expanded...)
			}
			if strings.EqualFold(args[1], "hostlistsorted") {
				fmt.Fprintln(out, slurm.SortedHostlist(names))
				return nil
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
	return fmt.Errorf("scontrol %s: not supported by Shoal yet (show hostnames, show hostlist, show hostlistsorted, show job, show nodes, hold, uhold, release, requeue, requeuehold and update NodeName= are)", strings.Join(args, " "))
}
