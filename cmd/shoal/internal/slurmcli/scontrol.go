package slurmcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/slurm"
)

// Scontrol is the subset of scontrol that scripts use: show hostnames
// (the MASTER_ADDR idiom), show hostlist and hostlistsorted, show job.
func Scontrol(ctx context.Context, connect Connect, args []string, out io.Writer) error {
	vals, args, err := cliArgs("scontrol", scontrolOpts, args, os.Stderr)
	if err != nil {
		return err
	}
	var show ShowJob
	for _, v := range vals {
		switch v.Opt.Long {
		case "details":
			show.Details++
		case "oneliner":
			show.OneLiner = true
		}
	}
	if len(args) > 0 {
		if handled, err := runScontrolWrite(ctx, connect, args); handled {
			return err
		}
	}
	if len(args) >= 2 && strings.EqualFold(args[0], "show") {
		switch strings.ToLower(args[1]) {
		case "hostnames", "hostname":
			return scontrolHostnames(args[2:], out)
		case "hostlist", "hostlistsorted":
			// Unlike hostnames, Slurm 22.05 reads no SLURM_NODELIST here:
			// with no argument it fails (shared/peers/slurm's golden).
			if len(args) == 2 {
				return errors.New("invalid encode argument")
			}
			var names []string
			for _, a := range args[2:] {
				expanded, err := slurm.ExpandHostlist(a)
				if err != nil {
					return fmt.Errorf("%w\nInvalid hostlist: %s", err, a)
				}
				names = append(names, expanded...)
			}
			if strings.EqualFold(args[1], "hostlistsorted") {
				fmt.Fprintln(out, slurm.SortedHostlist(names))
				return nil
			}
			fmt.Fprintln(out, slurm.CompressHostlist(names))
			return nil
		case "job", "jobid", "jobs":
			if len(args) > 3 {
				return fmt.Errorf("show job: want at most one job id")
			}
			return scontrolShowJob(ctx, connect, show, args[2:], out)
		case "partition", "partitions":
			_, in, err := readAgent(ctx, connect, readPolicy)
			if err != nil {
				return err
			}
			return printPartitions(out, in.policy.Policy, args[2:])
		case "node", "nodes":
			return scontrolShowNodes(ctx, connect, args[2:], out)
		}
	}
	return fmt.Errorf("scontrol %s: not supported by Shoal yet (show hostnames, show hostlist, show hostlistsorted, show job, show nodes, hold, uhold, release, requeue, requeuehold and update NodeName= are)", strings.Join(args, " "))
}

// scontrolOpts are scontrol's options Shoal reads (-d, -o) or accepts
// (-Q, -v: no effect on what Shoal prints).
var scontrolOpts = []slurm.Option{
	{Long: "details", Short: 'd'},
	{Long: "oneliner", Short: 'o'},
	{Long: "quiet", Short: 'Q'},
	{Long: "verbose", Short: 'v'},
}

// scontrolShowJob is `scontrol [-d[d]] [-o] show job [ID]`: one job, or
// every job with none, in Slurm's layout (ShowJob).
func scontrolShowJob(ctx context.Context, connect Connect, show ShowJob, args []string, out io.Writer) error {
	c, err := connect()
	if err != nil {
		return err
	}
	var jobs []api.Job
	if len(args) == 1 {
		ref, err := JobRefArg(args[0], false)
		if err != nil {
			return err
		}
		j, err := c.JobByRef(ctx, ref)
		if api.IsNotFound(err) {
			return fmt.Errorf("slurm_load_jobs error: Invalid job id specified (%w)", err)
		}
		if err != nil {
			return err
		}
		jobs = []api.Job{j}
	} else if jobs, err = c.Jobs(ctx, true); err != nil {
		return err
	} else if len(jobs) == 0 {
		fmt.Fprintln(out, "No jobs in the system")
		return nil
	}
	show.view = slurmView{now: time.Now(), loc: time.Local}
	for _, j := range jobs {
		show.Priority, show.Group = j.AdminPriority, groupName(j.GID)
		if show.Priority == 0 && j.State == string(cluster.JobPending) {
			// A pending job's multifactor priority, as sprio shows it.
			if ps, err := c.Priorities(ctx, j.ID, ""); err == nil && len(ps) == 1 {
				show.Priority = ps[0].Priority
			}
		}
		show.Print(out, j)
	}
	return nil
}

// scontrolHostnames is `scontrol show hostnames [LIST]`: one name a line.
// With no argument it reads SLURM_NODELIST, as Slurm 22.05 does (not
// SLURM_JOB_NODELIST; a job has both), and when that is unset it says the
// list is empty. Like Slurm it exits 0 on an invalid list, saying why on
// stderr (hostlist_golden2.json).
func scontrolHostnames(args []string, out io.Writer) error {
	list := strings.Join(args, ",")
	if len(args) == 0 {
		var ok bool
		if list, ok = os.LookupEnv("SLURM_NODELIST"); !ok {
			fmt.Fprintln(os.Stderr, "scontrol: error: host list is empty")
			return nil
		}
	}
	names, err := slurm.ExpandHostlist(list)
	if err != nil {
		fmt.Fprintf(os.Stderr, "scontrol: error: %v\nInvalid hostlist: %s\n", err, list)
		return nil
	}
	for _, n := range names {
		fmt.Fprintln(out, n)
	}
	return nil
}

// scontrolShowNodes is scontrol show node[s] [NAME]: each node as a block
// of Key=Value, with the fields scripts read (State, Gres, the features).
func scontrolShowNodes(ctx context.Context, connect Connect, args []string, out io.Writer) error {
	if len(args) > 1 {
		return fmt.Errorf("show nodes: want at most one node name or hostlist")
	}
	var want []string
	if len(args) == 1 {
		var err error
		if want, err = slurm.ExpandHostlist(args[0]); err != nil {
			return fmt.Errorf("show nodes: %w", err)
		}
	}
	_, in, err := readAgent(ctx, connect, readNodes)
	if err != nil {
		return err
	}
	shown := 0
	for _, n := range in.nodes {
		if want != nil && !slices.Contains(want, n.Name) {
			continue
		}
		shown++
		_, state, _ := sinfoState(n)
		gres := "(null)"
		if n.GPUs > 0 {
			gres = fmt.Sprintf("gpu:%d", n.GPUs)
		}
		fmt.Fprintf(out, "NodeName=%s Arch=x86_64 CPUTot=%d RealMemory=%d\n", n.Name, n.CPUs, n.MemoryMiB)
		fmt.Fprintf(out, "   AvailableFeatures=%s\n   ActiveFeatures=%s\n", nodeFeatures(n), nodeFeatures(n))
		fmt.Fprintf(out, "   Gres=%s GresUsed=gpu:%d\n   State=%s\n", gres, n.GPUs-n.GPUsFree, state)
		if n.Reason != "" {
			fmt.Fprintf(out, "   Reason=%s\n", n.Reason)
		}
		fmt.Fprintln(out)
	}
	if want != nil && shown == 0 {
		return fmt.Errorf("show nodes %s: Node name specified was not found", args[0])
	}
	return nil
}
