package slurmcli

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/slurm"
)

// PrintPriorities prints the sprio table (shoal priority prints it too):
// the weighted factors rounded to integers, or with norm the factors
// themselves.
func PrintPriorities(w io.Writer, ps []api.Priority, header, norm bool) {
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

// Sprio is sprio: -j LIST, -u LIST, -h, -n and -l (the
// columns are always the long ones: user and account included).
func Sprio(ctx context.Context, connect Connect, args []string, stdout, stderr io.Writer) error {
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
	c, err := connect()
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
	PrintPriorities(stdout, ps, header, norm)
	return nil
}
