package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/placement"
	"github.com/shoal-sched/shoal/sim"
)

// simOptions shape `shoal sim`.
type simOptions struct {
	trace    string
	cluster  sim.Cluster
	policy   string
	json     bool
	schedule string
	plot     string
	limits   string
	seed     uint64
	starve   time.Duration
	aging    time.Duration
	fair     bool
}

func newSimCmd() *cobra.Command {
	var o simOptions
	cmd := &cobra.Command{
		Use:   "sim --trace FILE.csv[.gz] [flags]",
		Short: "Replay a job trace through a placement policy on a simulated cluster",
		Long: `Replays a trace (the CSV format of ../shared/traces/README.md, optionally
gzipped) in simulated time through the placement code the leader runs, and
prints: jobs, unplaceable jobs (that could never fit the cluster), queueing
delay (average, p50, p95, p99, max), bounded slowdown (average and p99 of
(wait + run) / max(run, 10 s)), average job completion time, makespan, GPU
utilization, the fraction of multi-node jobs under one leaf switch and the
mean number of leaves of the others, and decisions per second of real time.

Policies: fifo (strict FIFO, first-fit nodes), backfill (EASY backfill,
first fit), shoal (topology-aware placement with EASY backfill), qssf
(shoal's placement and backfill, taking jobs shortest predicted service
first with aging; predictions come from each user's finished jobs).

--limits exact (the default) gives each job its trace duration as its
time limit (perfect estimates); --limits noisy gives it the trace's
time_limit_s, or where the trace has none a user-like estimate drawn from
--limit-seed: 20% ask for nothing and get 7 days, the others overestimate
the duration by a factor log-uniform in [1,10], rounded up to a round
value (5 min, 10 min, ..., 1 h, 2 h, ..., 1 d, ..., 7 d).

--fairshare takes jobs in the leader's multifactor priority order (age
and fair share by trace user, the default queue policy) instead of
submission order, and gives qssf each job's fair-share factor.

Nodes are n0000, n0001, ...; --leaf-size consecutive nodes share a leaf
switch and --leaves-per-spine consecutive leaves a spine.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSim(cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.trace, "trace", "", "trace file, .csv or .csv.gz (required)")
	f.IntVar(&o.cluster.Nodes, "nodes", 1024, "nodes in the simulated cluster")
	f.IntVar(&o.cluster.GPUsPerNode, "gpus-per-node", 8, "GPUs on each node")
	f.IntVar(&o.cluster.LeafSize, "leaf-size", 32, "nodes per leaf switch")
	f.IntVar(&o.cluster.LeavesPerSpine, "leaves-per-spine", 8, "leaf switches per spine")
	f.StringVar(&o.policy, "policy", "shoal", "fifo, backfill, shoal or qssf")
	f.StringVar(&o.limits, "limits", "exact", "job time limits: exact (the durations) or noisy (user-like estimates)")
	f.Uint64Var(&o.seed, "limit-seed", 1, "seed of --limits noisy")
	f.DurationVar(&o.starve, "starve-after", placement.DefaultStarveAfter, "qssf: a job waiting this long goes first")
	f.BoolVar(&o.fair, "fairshare", false, "order the queue by multifactor priority (age + fair share by trace user), as the leader does")
	f.DurationVar(&o.aging, "aging-half", placement.DefaultAgingHalf, "qssf: wait after which a job's predicted service counts half")
	f.BoolVar(&o.json, "json", false, "print one JSON object instead of a table")
	f.StringVar(&o.schedule, "schedule", "", "write the schedule as CSV (job_id,submit,start,end,nodes,gpus_per_node) to this file")
	f.StringVar(&o.plot, "plot", "", "draw utilization and queue length over time as PNG to this file")
	return cmd
}

func runSim(out io.Writer, o simOptions) error {
	if o.trace == "" {
		return errors.New("--trace: required, want a trace file (.csv or .csv.gz)")
	}
	policy, err := placement.ParsePolicy(o.policy)
	if err != nil {
		return fmt.Errorf("--%w", err)
	}
	if err := o.cluster.Validate(); err != nil {
		return fmt.Errorf("--%w", err)
	}
	limits, err := sim.ParseLimits(o.limits)
	if err != nil {
		return fmt.Errorf("--%w", err)
	}
	if o.starve <= 0 || o.aging <= 0 {
		return fmt.Errorf("--starve-after %s, --aging-half %s: want both positive", o.starve, o.aging)
	}
	jobs, err := sim.Load(o.trace)
	if err != nil {
		return err
	}
	start := time.Now()
	res, err := sim.Replay(jobs, sim.Options{Cluster: o.cluster, Policy: policy,
		Limits: limits, Seed: o.seed, StarveAfter: o.starve, AgingHalf: o.aging, FairShare: o.fair})
	if err != nil {
		return fmt.Errorf("replay %s: %w", o.trace, err)
	}
	sum := sim.Summarize(res, time.Since(start))
	if o.schedule != "" {
		if err := writeFile(o.schedule, func(w io.Writer) error { return sim.WriteSchedule(w, res) }); err != nil {
			return err
		}
	}
	if o.plot != "" {
		title := fmt.Sprintf("%s, %s, %d x %d GPUs", filepath.Base(o.trace), policy, o.cluster.Nodes, o.cluster.GPUsPerNode)
		if err := writeFile(o.plot, func(w io.Writer) error { return sim.WritePlot(w, res, title) }); err != nil {
			return err
		}
	}
	if o.json {
		enc := json.NewEncoder(out)
		return enc.Encode(sum)
	}
	return printSummary(out, o, sum)
}

// writeFile writes a file through a buffered writer, reporting the first
// error of writing or closing.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// printSummary prints the metrics as aligned rows.
func printSummary(out io.Writer, o simOptions, s sim.Summary) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	secs := func(v float64) string {
		return fmt.Sprintf("%.0f s\t(%s)", v, time.Duration(v*float64(time.Second)).Round(time.Second))
	}
	multi := "n/a (no multi-node jobs)"
	leaves := "n/a"
	if s.MultiNodeJobs > 0 {
		multi = fmt.Sprintf("%.3f\t(of %d multi-node jobs)", s.OneLeafFrac, s.MultiNodeJobs)
		leaves = fmt.Sprintf("%.2f", s.MeanLeavesMulti)
	}
	rows := [][2]string{
		{"trace", o.trace},
		{"cluster", o.cluster.String()},
		{"policy", s.Policy},
		{"time limits", o.limits},
		{"fair share", fmt.Sprint(o.fair)},
		{"jobs", fmt.Sprint(s.Jobs)},
		{"unplaceable", fmt.Sprint(s.Unplaceable)},
		{"avg wait", secs(s.AvgWait)},
		{"p50 wait", secs(s.P50Wait)},
		{"p95 wait", secs(s.P95Wait)},
		{"p99 wait", secs(s.P99Wait)},
		{"max wait", secs(s.MaxWait)},
		{"bounded slowdown (avg, p99)", fmt.Sprintf("%.2f, %.2f", s.AvgBSld, s.P99BSld)},
		{"avg JCT", secs(s.AvgJCT)},
		{"makespan", secs(s.Makespan)},
		{"GPU utilization", fmt.Sprintf("%.3f", s.GPUUtil)},
		{"one-leaf fraction", multi},
		{"mean leaves (others)", leaves},
		{"scheduling passes", fmt.Sprint(s.Passes)},
		{"decisions/s", fmt.Sprintf("%.0f\t(%.2f s wall)", s.DecisionsPerSec, s.WallSeconds)},
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}
