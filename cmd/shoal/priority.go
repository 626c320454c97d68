package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/slurm"
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			ps, err := c.Priorities(cmd.Context(), job, user)
			if err != nil {
				return err
			}
			if g.json {
				return printJSON(ps)
			}
			writePriorities(cmd.OutOrStdout(), ps, true, false)
			return nil
		},
	}
	f := cmd.Flags()
	f.Uint64VarP(&job, "job", "j", 0, "show only this job")
	f.StringVarP(&user, "user", "u", "", "show only this user's jobs")
	f.BoolVar(&g.json, "json", false, "print JSON (with the unweighted factors)")
	return cmd
}

// writePriorities prints the sprio table: the weighted factors rounded to
// integers, or with norm the factors themselves.
func writePriorities(w io.Writer, ps []api.Priority, header, norm bool) {
	if header {
		fmt.Fprintf(w, "%8s %-10s %-10s %10s %10s %10s %10s %10s %6s\n",
			"JOBID", "USER", "ACCOUNT", "PRIORITY", "AGE", "FAIRSHARE", "JOBSIZE", "QOS", "NICE")
	}
	for _, p := range ps {
		cells := []string{weighted(p.Age), weighted(p.Fair), weighted(p.JobSize), weighted(p.QoS)}
		if norm {
			cells = []string{normed(p.Factors.Age), normed(p.Factors.FairShare), normed(p.Factors.JobSize), normed(p.Factors.QoS)}
		}
		fmt.Fprintf(w, "%8d %-10s %-10s %10d %10s %10s %10s %10s %6d\n",
			p.Job, clip10(p.User), clip10(p.Account), p.Priority, cells[0], cells[1], cells[2], cells[3], p.Nice)
	}
}

func weighted(x float64) string { return strconv.FormatInt(int64(math.Round(x)), 10) }
func normed(x float64) string   { return strconv.FormatFloat(x, 'f', 7, 64) }

func clip10(s string) string {
	if len(s) > 10 {
		return s[:10]
	}
	return s
}

// sprioOpts are the sprio options Shoal takes.
var sprioOpts = []slurm.Option{
	{Long: "jobs", Short: 'j', Arg: slurm.NeedArg},
	{Long: "user", Short: 'u', Arg: slurm.NeedArg},
	{Long: "noheader", Short: 'h', Arg: slurm.NoArg},
	{Long: "norm", Short: 'n', Arg: slurm.NoArg},
	{Long: "long", Short: 'l', Arg: slurm.NoArg},
	{Long: "weights", Short: 'w', Arg: slurm.NoArg, Unsupported: "see shoal policy show"},
	{Long: "format", Short: 'o', Arg: slurm.NeedArg, Unsupported: "Shoal prints sprio's long columns only"},
	{Long: "partition", Short: 'p', Arg: slurm.NeedArg, Unsupported: "Shoal has no partitions yet"},
}

// runSprio is the sprio shim: -j LIST, -u LIST, -h, -n and -l (the
// columns are always the long ones: user and account included).
func runSprio(ctx context.Context, g *globalFlags, args []string, stdout, stderr io.Writer) error {
	vals, rest, err := cliArgs("sprio", sprioOpts, args, stderr)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("unrecognized argument %q", rest[0])
	}
	var jobs []uint64
	var users []string
	header, norm := true, false
	for _, v := range vals {
		switch v.Opt.Long {
		case "jobs":
			for _, s := range splitList(v.Value) {
				id, err := slurm.ParseJobID(s)
				if err != nil {
					return fmt.Errorf("-j: %w", err)
				}
				jobs = append(jobs, id)
			}
		case "user":
			users = append(users, resolveUsers(v.Value)...)
		case "noheader":
			header = false
		case "norm":
			norm = true
		}
	}
	c, err := g.client()
	if err != nil {
		return err
	}
	ps, err := c.Priorities(ctx, 0, "")
	if err != nil {
		return err
	}
	ps = slices.DeleteFunc(ps, func(p api.Priority) bool {
		return (len(jobs) > 0 && !slices.Contains(jobs, p.Job)) || (len(users) > 0 && !slices.Contains(users, p.User))
	})
	if len(jobs) > 0 && len(ps) == 0 {
		fmt.Fprintln(stderr, "sprio: Unable to find jobs matching user/id(s) specified")
	}
	writePriorities(stdout, ps, header, norm)
	return nil
}
