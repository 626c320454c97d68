package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/chaos"
)

// chaosFlags are `shoal chaos`'s flags.
type chaosFlags struct {
	nodes    int
	seeds    int
	seed     uint64
	duration time.Duration
	faults   string
	net      string
	dir      string
	keep     bool
	json     bool
	report   string
	plot     string
	verbose  bool
}

func newChaosCmd() *cobra.Command {
	var f chaosFlags
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Run real agents through seeded faults under a workload and check Shoal's invariants",
		Long: `Starts --nodes real agents (this binary), each in its own network namespace
with its own 10.77.0.x address on a bridge (as root; otherwise on 127.x
loopback addresses with process faults only), submits gang jobs through
random agents while injecting faults drawn from the seed, then checks the
five invariants of DESIGN.md: no GPU held by two jobs at once, every
acknowledged submit kept and none made twice, one live incarnation per job,
every job terminal within a bound once faults stop, replicas agreeing on
their state hash. A seed replays the same schedule.

Faults: kill (kill -9, restart from the data dir), pause (SIGSTOP/SIGCONT),
isolate (the leader's link down), partition (minority/majority), oneway
(one agent's packets to the others dropped), flap (a link going down and up),
restart-all (kill -9 every agent at once), slow (a minority's links limited
to 64-512 kbit/s by tc tbf queues, which also delay what they hold), loss
(5-50% of one agent's packets dropped at random). It exits non-zero when any
seed found a violation, or a check could not be made.

--report out.html writes a self-contained HTML timeline (a lane per node with
its faults and the job incarnations it ran, the faults, the leader over time,
the violations) and the summary; --plot out.png draws the same timeline.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runChaos(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.nodes, "nodes", 5, fmt.Sprintf("agents (1 to %d)", chaos.MaxNodes))
	fl.IntVar(&f.seeds, "seeds", 1, "run seeds 1..N")
	fl.Uint64Var(&f.seed, "seed", 0, "run this one seed (instead of --seeds)")
	fl.DurationVar(&f.duration, "duration", 60*time.Second, "how long each seed injects faults")
	fl.StringVar(&f.faults, "faults", "all", "comma-separated faults: "+kindNames()+", or all")
	fl.StringVar(&f.net, "net", "auto", "auto (namespaces when root, else loopback), netns or loopback")
	fl.StringVar(&f.dir, "dir", "", "where each seed's data dirs, agent logs and records go (default: the temp dir; kept when a seed fails)")
	fl.BoolVar(&f.keep, "keep", false, "keep each seed's directory even when it passed")
	fl.BoolVar(&f.json, "json", false, "print a JSON array with one object per seed")
	fl.StringVar(&f.report, "report", "", "write an HTML timeline of every seed to this file")
	fl.StringVar(&f.plot, "plot", "", "draw the timeline of every seed as a PNG to this file")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "log faults and recoveries to stderr")
	return cmd
}

func kindNames() string {
	var names []string
	for _, k := range chaos.AllKinds {
		names = append(names, string(k))
	}
	return strings.Join(names, ",")
}

func runChaos(cmd *cobra.Command, f chaosFlags) error {
	if f.nodes < 1 || f.nodes > chaos.MaxNodes {
		return fmt.Errorf("--nodes %d: want 1 to %d", f.nodes, chaos.MaxNodes)
	}
	if f.duration <= 0 {
		return fmt.Errorf("--duration %s: want more than 0", f.duration)
	}
	// A report that cannot be written should fail now, not after the runs.
	for flag, path := range map[string]string{"--report": f.report, "--plot": f.plot} {
		if path == "" {
			continue
		}
		if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
			return fmt.Errorf("%s %s: directory %s does not exist", flag, path, filepath.Dir(path))
		}
	}
	seedSet := cmd.Flags().Changed("seed")
	if seedSet && cmd.Flags().Changed("seeds") {
		return errors.New("--seed and --seeds: give one of them")
	}
	if !seedSet && f.seeds < 1 {
		return fmt.Errorf("--seeds %d: want at least 1", f.seeds)
	}
	kinds, err := chaos.ParseKinds(f.faults)
	if err != nil {
		return err
	}
	var mode chaos.NetMode
	switch f.net {
	case "auto":
		mode = chaos.NetAuto
	case "netns":
		mode = chaos.NetNamespaces
	case "loopback":
		mode = chaos.NetLoopback
	default:
		return fmt.Errorf("--net %q: want auto, netns or loopback", f.net)
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the shoal binary: %w", err)
	}
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelInfo
	}
	cfg := chaos.Config{
		Binary: self, Nodes: f.nodes, Duration: f.duration, Kinds: kinds, Net: mode,
		Dir: f.dir, KeepDir: f.keep,
		Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
	}
	seeds := []uint64{f.seed}
	if !seedSet {
		seeds = seeds[:0]
		for s := 1; s <= f.seeds; s++ {
			seeds = append(seeds, uint64(s))
		}
	}
	results := []chaos.Result{}
	var failed []string
	for _, s := range seeds {
		res, err := chaos.RunSeed(cmd.Context(), cfg, s)
		if err != nil {
			// The run could not be made: say so, keep what was found.
			res.Violations = append(res.Violations, chaos.Violation{Invariant: 0, Seed: s, GPU: -1, Inconclusive: true,
				Detail: "run failed: " + err.Error()})
		}
		results = append(results, res)
		if len(res.Violations) > 0 {
			failed = append(failed, fmt.Sprint(s))
		}
		if cmd.Context().Err() != nil {
			break
		}
	}
	if f.json {
		if err := printJSON(results); err != nil {
			return err
		}
	} else {
		printChaos(os.Stdout, results)
	}
	if err := writeChaosFile("--report", f.report, results, chaos.WriteReport); err != nil {
		return err
	}
	if err := writeChaosFile("--plot", f.plot, results, chaos.WritePlot); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("violations in seeds %s", strings.Join(failed, ","))
	}
	return nil
}

// writeChaosFile writes results to path with write, when path is set.
func writeChaosFile(flag, path string, results []chaos.Result, write func(io.Writer, []chaos.Result) error) error {
	if path == "" {
		return nil
	}
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	if err := write(out, results); err != nil {
		out.Close()
		return fmt.Errorf("%s %s: %w", flag, path, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("%s %s: %w", flag, path, err)
	}
	return nil
}

// printChaos prints a summary table, one row per seed, then each
// violation.
func printChaos(w io.Writer, results []chaos.Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SEED\tMODE\tFAULTS\tSUBMITTED\tACKED\tCOMPLETED\tREQUEUES\tMAX_RECOVER\tVIOLATIONS")
	for _, r := range results {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%d\t%d\t%.1fs\t%d\n", r.Seed, r.Mode, r.Faults, r.Submitted,
			r.Acknowledged, r.Completed, r.Requeues, r.MaxRecoverS, len(r.Violations))
	}
	tw.Flush()
	for _, r := range results {
		for _, v := range r.Violations {
			fmt.Fprintln(w, v)
		}
		if len(r.Violations) > 0 && r.Dir != "" {
			fmt.Fprintf(w, "seed %d: data dirs, agent logs and records kept in %s\n", r.Seed, r.Dir)
		}
	}
}
