package slurmcli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
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
	optJobs,
	optUser,
	{Long: "users", Arg: slurm.NeedArg},
	optNoheaderH,
	{Long: "norm", Short: 'n', Arg: slurm.NoArg},
	optLong,
	{Long: "weights", Short: 'w', Arg: slurm.NoArg},
	optFormat,
	optPartition,
	optVerbose,
	{Long: "sort", Short: 'S', Arg: slurm.NeedArg, Unsupported: "sprio lists jobs by id"},
	optClusters,
	optHelp,
	optUsage,
}

// sprioFormat is the -o format sprio prints without one, as Slurm
// 22.05's sprio.c builds it: the job and partition, the user with -u, the
// priority and site factor, then one column per factor whose weight is
// not zero; weighted, or with norm the factors themselves. long is -l's
// fixed list. Shoal has no association and TRES factors: their weights
// are 0, so the default leaves them out.
func sprioFormat(w cluster.Weights, users, norm, long bool) string {
	switch {
	case long && norm:
		return "%.15i %9r %.8u %10y %10a %10b %10f %10j %10p %10q %20t"
	case long:
		return "%.15i %9r %.8u %.10Y %.10S %.10A %.10B %.10F %.10J %.10P %.10Q %.11N %.20T"
	}
	f := "%.15i %9r"
	if users {
		f += " %.8u"
	}
	cols := []struct {
		weight         int64
		weighted, norm string
	}{{w.Age, " %.10A", " %10a"}, {w.FairShare, " %.10F", " %10f"}, {w.JobSize, " %.10J", " %10j"},
		{w.Partition, " %.10P", " %10p"}, {w.QoS, " %.10Q", " %10q"}}
	if norm {
		f += " %10y"
	} else {
		f += " %.10Y %.10S"
	}
	for _, c := range cols {
		if c.weight != 0 {
			if norm {
				f += c.norm
			} else {
				f += c.weighted
			}
		}
	}
	return f
}

// sprioField is one letter of sprio -o: its header and its cell for a
// job (p) or, with p nil, for the -w weights row.
type sprioField struct {
	header string
	cell   func(p *api.Priority, w cluster.Weights) string
}

// sprioFields are sprio's -o letters (Slurm's src/sprio/print.c): a
// capital letter a weighted factor, the small one the factor itself;
// the weights row prints the factor's weight under both.
var sprioFields = map[byte]sprioField{
	'i': {"JOBID", func(p *api.Priority, _ cluster.Weights) string {
		if p == nil {
			return "Weights"
		}
		return strconv.FormatUint(p.Job, 10)
	}},
	'r': jobField("PARTITION", func(p *api.Priority) string {
		if p.PartitionName == "" {
			return ShoalPartition
		}
		return p.PartitionName
	}),
	'u': jobField("USER", func(p *api.Priority) string { return p.User }),
	'c': {"CLUSTER", func(p *api.Priority, _ cluster.Weights) string { return "" }},
	'Y': jobField("PRIORITY", func(p *api.Priority) string { return strconv.FormatInt(p.Priority, 10) }),
	'y': jobField("PRIORITY", func(p *api.Priority) string {
		return strconv.FormatFloat(float64(p.Priority)/float64(math.MaxUint32), 'f', 14, 64)
	}),
	'S': {"SITE", func(p *api.Priority, _ cluster.Weights) string {
		if p == nil {
			return "1"
		}
		return "0"
	}},
	'N': jobField("NICE", func(p *api.Priority) string { return strconv.Itoa(p.Nice) }),
	't': {"TRES", func(*api.Priority, cluster.Weights) string { return "" }},
	'T': {"TRES", func(*api.Priority, cluster.Weights) string { return "" }},
	'a': factorField("AGE", func(w cluster.Weights) int64 { return w.Age }, func(p *api.Priority) float64 { return p.Factors.Age }, false),
	'A': factorField("AGE", func(w cluster.Weights) int64 { return w.Age }, func(p *api.Priority) float64 { return p.Age }, true),
	'b': factorField("ASSOC", func(cluster.Weights) int64 { return 0 }, func(*api.Priority) float64 { return 0 }, false),
	'B': factorField("ASSOC", func(cluster.Weights) int64 { return 0 }, func(*api.Priority) float64 { return 0 }, true),
	'f': factorField("FAIRSHARE", func(w cluster.Weights) int64 { return w.FairShare }, func(p *api.Priority) float64 { return p.Factors.FairShare }, false),
	'F': factorField("FAIRSHARE", func(w cluster.Weights) int64 { return w.FairShare }, func(p *api.Priority) float64 { return p.Fair }, true),
	'j': factorField("JOBSIZE", func(w cluster.Weights) int64 { return w.JobSize }, func(p *api.Priority) float64 { return p.Factors.JobSize }, false),
	'J': factorField("JOBSIZE", func(w cluster.Weights) int64 { return w.JobSize }, func(p *api.Priority) float64 { return p.JobSize }, true),
	'p': factorField("PARTITION", func(w cluster.Weights) int64 { return w.Partition }, func(p *api.Priority) float64 { return p.Factors.Partition }, false),
	'P': factorField("PARTITION", func(w cluster.Weights) int64 { return w.Partition }, func(p *api.Priority) float64 { return p.Partition }, true),
	'q': factorField("QOS", func(w cluster.Weights) int64 { return w.QoS }, func(p *api.Priority) float64 { return p.Factors.QoS }, false),
	'Q': factorField("QOS", func(w cluster.Weights) int64 { return w.QoS }, func(p *api.Priority) float64 { return p.QoS }, true),
}

// jobField is a column of the job's own (not a factor): cell's value for
// a job, blank on the weights row.
func jobField(header string, cell func(p *api.Priority) string) sprioField {
	return sprioField{header, func(p *api.Priority, _ cluster.Weights) string {
		if p == nil {
			return ""
		}
		return cell(p)
	}}
}

// factorField is a factor's column: weighted as "%.0f", or the factor
// itself as "%.7f" (0 where its weight is 0, as Slurm divides the
// weighted factor by the weight).
func factorField(header string, weight func(cluster.Weights) int64, value func(*api.Priority) float64, weighted bool) sprioField {
	return sprioField{header, func(p *api.Priority, w cluster.Weights) string {
		switch {
		case p == nil:
			return strconv.FormatInt(weight(w), 10)
		case weighted:
			return strconv.FormatFloat(value(p), 'f', 0, 64)
		case weight(w) == 0:
			return normed(0)
		}
		return normed(value(p))
	}}
}

// sprioCol is one piece of a parsed -o format: literal text, or a field
// with its width and alignment.
type sprioCol = formatCol[sprioField]

// parseSprioFormat parses sprio -o ("%.15i %9r %.10Y ..."). An unknown
// letter is an error, as Slurm's "Invalid job format specification".
func parseSprioFormat(format string) ([]sprioCol, error) {
	var cols []sprioCol
	err := scanFormat(format, false, func(s string) { cols = append(cols, sprioCol{literal: s}) }, func(f formatSpec) error {
		fld, ok := sprioFields[f.letter]
		if !ok {
			return slurmErrorf("Invalid job format specification: %s", f.raw)
		}
		cols = append(cols, specCol(&fld, f))
		return nil
	})
	return cols, err
}

// printSprio prints sprio's table as print.c's print_jobs_array: the
// header unless noheader, then with weights only the weights row, else
// a row per job. A cell is fitted as _print_str: right-aligned with ".",
// cut to its width.
func printSprio(w io.Writer, cols []sprioCol, ps []api.Priority, wt cluster.Weights, header, weights bool) {
	line := func(cell func(f *sprioField) string) { printFormatLine(w, cols, cell) }
	if header {
		line(func(f *sprioField) string { return f.header })
	}
	if weights {
		line(func(f *sprioField) string { return f.cell(nil, wt) })
		return
	}
	for i := range ps {
		line(func(f *sprioField) string { return f.cell(&ps[i], wt) })
	}
}

// Sprio is sprio: the pending jobs' priority factors, as the leader
// computes them, with Slurm's columns, -o, -l, -n, -w, -h, -j, -u, -p.
func Sprio(ctx context.Context, connect Connect, args []string, stdout, stderr io.Writer) error {
	vals, rest, err := cliArgs("sprio", sprioOpts, args, stderr)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("unrecognized argument %q", rest[0])
	}
	var jobs []uint64
	var users, parts []string
	header, norm, long, weights, jobsGiven := true, false, false, false, false
	format := ""
	for _, v := range vals {
		switch v.Opt.Long {
		case "jobs":
			jobsGiven = true
			for _, s := range splitList(v.Value) {
				id, err := slurm.ParseJobID(s)
				if err != nil {
					return fmt.Errorf("-j: %w", err)
				}
				jobs = append(jobs, id)
			}
		case "user", "users":
			users = append(users, resolveUsers(v.Value)...)
		case "partition":
			parts = append(parts, splitList(v.Value)...)
		case "noheader":
			header = false
		case "norm":
			norm = true
		case "long":
			long = true
		case "weights":
			weights = true
		case "format":
			format = v.Value
		}
	}
	c, in, err := readAgent(ctx, connect, readPolicy)
	if err != nil {
		return err
	}
	wt := in.policy.Policy.Weights
	if format == "" {
		format = sprioFormat(wt, len(users) > 0, norm, long)
	}
	cols, err := parseSprioFormat(format)
	if err != nil {
		return err
	}
	var ps []api.Priority
	if !weights {
		if ps, err = c.Priorities(ctx, 0, ""); err != nil {
			return err
		}
	}
	ps = slices.DeleteFunc(ps, func(p api.Priority) bool {
		part := p.PartitionName
		if part == "" {
			part = ShoalPartition
		}
		return (len(jobs) > 0 && !slices.Contains(jobs, p.Job)) || (len(users) > 0 && !slices.Contains(users, p.User)) ||
			(len(parts) > 0 && !slices.Contains(parts, part))
	})
	// Slurm's default sort, "i": by job id.
	slices.SortFunc(ps, func(a, b api.Priority) int { return cmp.Compare(a.Job, b.Job) })
	if jobsGiven && len(ps) == 0 && !weights {
		fmt.Fprintln(stdout, "Unable to find jobs matching user/id(s) specified")
		return nil
	}
	printSprio(stdout, cols, ps, wt, header, weights)
	return nil
}
