package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/scale"
)

// newBenchScaleCmd is `shoal bench scale`.
func newBenchScaleCmd() *cobra.Command {
	var o scale.Options
	var jsonPath, dir string
	var devTiming, keep, inProcess bool
	cmd := &cobra.Command{
		Use:   "scale",
		Short: "Start many agents on this machine and measure formation, the cost at rest, submits, a large gang and failover",
		Long: `Starts --nodes real 'shoal agent' processes on loopback, each with its own
ports, memberlist and raft transport and simulated GPUs, and measures:
  formation   time to the first leader, until every agent lists every agent
              alive (gossip), until every node is up in the replicated
              state, until the raft layout is --voters voters and --servers
              servers in all
  rest        after --settle, over --rest: RSS per agent, the leader's CPU
              and a follower's, all agents' CPU together, the leader's TCP
              bytes/s (from ss), all loopback bytes/s (/proc/net/dev: the
              cluster's alone when run in a network namespace of its own,
              e.g. 'unshare -n sh -c "ip link set lo up && shoal bench scale"')
  submits     held jobs through a follower from --clients Go clients
  latency     submit to the first rank's own timestamp, 2-node jobs
  gang        a --gang-nodes job: submit until RUNNING, until its last rank
              started, until it completed
  failover    kill -9 of the leader until the first and the last survivor
              name the new leader, and until a submit through a survivor
              succeeds
With --in-process the agents run in this process instead (the same
command lines, each its own ports, data dir, memberlist and raft
transport); the at-rest figures are then the process's CPU and RSS, and
--rest-profile splits the CPU by agent. With --hybrid the raft servers
(the first --servers agents) run as processes and every other agent runs
in this process, which never holds a raft seat (--raft-eligible=false)
and lowers its CPU priority to --worker-nice once the servers started:
the way to start more agents than one process's scheduling delay lets
the raft voters keep their leader.
Every wait is bounded by --wait; every agent is stopped at the end, and on
failure. Prints a table, and the figures as JSON to --json.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			o.Binary = self
			if o.Hybrid || inProcess {
				o.Spawn = spawnAgent
				// $SHOAL_CPUPROFILE profiles the whole run, every agent's
				// samples labelled with its name (one profile at a time).
				if os.Getenv(cpuProfileEnv) != "" && o.RestProfile != "" {
					return fmt.Errorf("--rest-profile and $%s: one CPU profile at a time", cpuProfileEnv)
				}
				stopProfile, err := startCPUProfile(os.Getenv(cpuProfileEnv), "bench-scale", slog.Default())
				if err != nil {
					return err
				}
				defer stopProfile()
			}
			o.ExtraArgs = append(o.ExtraArgs, "--log-level", "warn")
			if devTiming {
				o.ExtraArgs = append(o.ExtraArgs, "--dev-timing")
			}
			if dir == "" {
				if dir, err = scale.DefaultDir(); err != nil {
					return err
				}
				if !keep {
					defer os.RemoveAll(dir)
				}
			}
			o.Dir = dir
			o.Logf = func(format string, args ...any) { slog.Info(fmt.Sprintf(format, args...)) }
			rep, runErr := scale.Run(cmd.Context(), o)
			writeScaleTable(cmd.OutOrStdout(), rep)
			if jsonPath != "" {
				if err := writeScaleJSON(jsonPath, rep); err != nil {
					return err
				}
			}
			if runErr != nil {
				if keep {
					return fmt.Errorf("%w (agents' logs in %s)", runErr, dir)
				}
				return runErr
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Nodes, "nodes", 100, "agents to start")
	f.IntVar(&o.GPUsPerNode, "gpus-per-node", 8, "simulated GPUs per agent")
	f.IntVar(&o.LeafSize, "leaf-size", 16, "agents per leaf switch")
	f.IntVar(&o.Voters, "voters", 0, "raft voters the layout must settle to (default: what the leader's plan keeps, 5 from 5 nodes)")
	f.IntVar(&o.Servers, "servers", 0, "raft servers (voters and nonvoters) the layout must settle to (default: the voters and the agents' 2 --raft-replicas; pass the agents a --raft-replicas with --agent-arg to change it)")
	f.IntVar(&o.GangNodes, "gang-nodes", 0, "nodes of the gang job (default: 64, or half the nodes when fewer)")
	f.IntVar(&o.Submits, "submits", 400, "submits for the throughput figure")
	f.IntVar(&o.Clients, "clients", 4, "parallel clients for the throughput figure")
	f.IntVar(&o.LatencyRuns, "latency-runs", 20, "submit-to-start samples")
	f.DurationVar(&o.Settle, "settle", 0, "how long the settled cluster stands still before the at-rest figures (default 10s)")
	f.DurationVar(&o.Rest, "rest", 0, "how long the at-rest figures are measured over (default 10s)")
	f.DurationVar(&o.Wait, "wait", 0, "bound on each wait for the cluster (default 5m)")
	f.BoolVar(&o.Insecure, "insecure", false, "run the agents without TLS")
	f.BoolVar(&devTiming, "dev-timing", false, "fast loopback raft timing instead of the LAN defaults")
	f.StringSliceVar(&o.ExtraArgs, "agent-arg", nil, "an extra argument for every agent (repeatable)")
	f.StringSliceVar(&o.Only, "only", nil, "run only these steps after formation: rest, throughput, latency, gang, failover")
	f.StringVar(&jsonPath, "json", "", "write the figures as JSON to this file (- for standard output)")
	f.StringVar(&dir, "dir", "", "directory for the agents' data and logs, kept (default: a temporary one, removed)")
	f.BoolVar(&keep, "keep", false, "keep the temporary directory (the agents' logs)")
	f.BoolVar(&inProcess, "in-process", false, "run the agents in this process, each with its own ports, data dir, memberlist and raft transport, instead of as processes: many more fit one machine; per-agent CPU is then not measured (see --rest-profile)")
	f.BoolVar(&o.Hybrid, "hybrid", false, "run the raft servers (the first --servers agents) as processes and the workers in this process at --worker-nice, never given a raft seat")
	f.IntVar(&o.WorkerNice, "worker-nice", 19, "with --hybrid: the nice value of this process, the workers' (0 keeps it)")
	f.IntVar(&o.WorkerGCPercent, "worker-gogc", 400, "with --hybrid: this process's GOGC once the workers start (0 keeps $GOGC): hundreds of agents' garbage collection otherwise starves their gossip")
	f.DurationVar(&o.StartEvery, "start-every", 0, "with --in-process: space the agents' starts by this much (a join storm on a few cores delays raft heartbeats)")
	f.StringVar(&o.RestProfile, "rest-profile", "", "with --in-process: write a CPU profile of the at-rest window here, its samples labelled by agent (go tool pprof -tagfocus agent=NAME)")
	return cmd
}

func writeScaleJSON(path string, rep scale.Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if path == "-" {
		_, err = os.Stdout.Write(b)
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("--json %s: %w", path, err)
	}
	return nil
}

// writeScaleTable prints the figures in BENCHMARKS.md's table layout.
func writeScaleTable(w io.Writer, r scale.Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(metric, format string, args ...any) {
		fmt.Fprintf(tw, "| %s\t| %s\t|\n", metric, fmt.Sprintf(format, args...))
	}
	fmt.Fprintf(tw, "| %d agents, %d simulated GPUs each\t| value\t|\n", r.Nodes, r.GPUsPerNode)
	fmt.Fprintln(tw, "|---\t|---\t|")
	done := func(step string) bool { return slices.Contains(r.Steps, step) }
	defer func() { _ = tw.Flush() }()
	row("start to first leader", "%.2f s", r.FirstLeaderS)
	if !done("formation") {
		return
	}
	row("gossip converged (every agent lists all alive)", "%.2f s", r.GossipConvergedS)
	row("every node up in the replicated state", "%.2f s", r.RegisteredS)
	row(fmt.Sprintf("raft layout settled (%d voters, %d servers)", r.WantVoters, r.WantServers), "%.2f s (%d voters, %d nonvoters, %d workers)",
		r.LayoutSettledS, r.Layout.Voters, r.Layout.Nonvoters, r.Layout.Workers)
	if done("rest") {
		if r.Hybrid {
			row("RSS per server process, median / max / leader", "%.0f / %.0f / %.0f MiB", r.RSSMiBMedian, r.RSSMiBMax, r.RSSMiBLeader)
			row(fmt.Sprintf("RSS of the %d workers' process / per worker; Go heap in use", r.SharedAgents), "%.0f / %.1f MiB; %.0f MiB", r.ProcessRSSMiB, r.SharedRSSMiB, r.HeapInuseMiB)
			row(fmt.Sprintf("CPU at rest over %.0f s, leader / other server median / workers' process (nice %d) / all", r.RestS, r.WorkerNice), "%.1f%% / %.1f%% / %.0f%% / %.0f%% of a core",
				r.LeaderCPUPercent, r.FollowerCPUPercentMedian, r.SharedCPUPercent, r.ClusterCPUPercent)
		} else if r.InProcess {
			row("RSS of the process / per agent; Go heap in use", "%.0f / %.1f MiB; %.0f MiB", r.ProcessRSSMiB, r.RSSMiBMedian, r.HeapInuseMiB)
			row(fmt.Sprintf("CPU at rest over %.0f s, the process (leader %s)", r.RestS, r.Leader), "%.0f%% of a core", r.ClusterCPUPercent)
		} else {
			row("RSS per agent, median / max / leader", "%.0f / %.0f / %.0f MiB", r.RSSMiBMedian, r.RSSMiBMax, r.RSSMiBLeader)
			row(fmt.Sprintf("CPU at rest over %.0f s, leader / follower median / all agents", r.RestS), "%.1f%% / %.1f%% / %.0f%% of a core",
				r.LeaderCPUPercent, r.FollowerCPUPercentMedian, r.ClusterCPUPercent)
		}
		if r.LeaderTCPBytesPerS >= 0 {
			row("leader's TCP bytes/s at rest (sent + received)", "%.0f", r.LeaderTCPBytesPerS)
		} else {
			row("leader's TCP bytes/s at rest (sent + received)", "n/a (no ss)")
		}
		row("loopback bytes/s at rest (all of it)", "%.0f", r.LoopbackBytesPerS)
		row("raft log growth at rest", "%.2f entries/s", r.RaftEntriesPerS)
		row("lease renewals at the leader at rest", "%.1f/s (TTL granted %.1f s)", r.LeaderRenewalsPerS, r.LeaseTTLS)
		row(fmt.Sprintf("GET /metrics on the leader, %d scrapes: p50 / max", r.Scrape.N), "%.1f / %.1f ms (%d samples, %d bytes)",
			r.Scrape.P50*1000, r.Scrape.Max*1000, r.ScrapeSamples, r.ScrapeBytes)
	}
	if done("throughput") {
		row("raft entries per held submit", "%.2f", r.RaftEntriesPerSubmit)
		row(fmt.Sprintf("submits/s through a follower, %d Go clients, held jobs", r.SubmitClients), "%.1f (%d failed)", r.SubmitsPerS, r.SubmitsFailed)
		if r.InProcess && !r.Hybrid {
			row("CPU while submitting, the process", "%.0f%% of a core", r.SubmitsClusterCPUPercent)
		} else {
			row("CPU while submitting: leader / all agents", "%.0f%% / %.0f%% of a core", r.SubmitsLeaderCPUPercent, r.SubmitsClusterCPUPercent)
		}
	}
	if done("latency") {
		row("raft entries per 2-node job, submit to completion", "%.2f", r.RaftEntriesPerJob)
		d := r.SubmitToStart
		row("submit to first rank's start, 2-node job", "p50 %.3f s, p99 %.3f s (min %.3f, max %.3f, n=%d)", d.P50, d.P99, d.Min, d.Max, d.N)
	}
	if g := r.Gang; done("gang") {
		row(fmt.Sprintf("%d-node gang: RUNNING / last rank started / completed", g.Nodes), "%.2f / %.2f / %.2f s", g.PlacedS, g.AllStartedS, g.CompletedS)
	}
	if fo := r.Failover; done("failover") {
		row("failover: kill -9 of the leader until the first survivor names a new one", "%.2f s (polls every %.2f s)", fo.ElectedS, fo.ResolutionS)
		row("failover: until every survivor names it", "%.2f s", fo.AllSeeS)
		row("failover: until a submit through a survivor succeeds", "%.2f s", fo.SubmitOKS)
	}
}

// inProcessKey carries an *inProcessAgent in the context of an agent
// command run by spawnAgent.
type inProcessKey struct{}

// inProcessAgent is what an agent run inside `shoal bench scale
// --in-process` gets from the harness: where it logs, and whom to give
// its Crash once it is up.
type inProcessAgent struct {
	log     io.Writer
	started func(crash func())
}

// spawnAgent is scale.Spawn: `shoal agent` with args, in this process,
// through the same flags and setup as the agent command.
func spawnAgent(ctx context.Context, args []string, log io.Writer, started func(crash func())) error {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(log)
	root.SetErr(log)
	root.SilenceUsage, root.SilenceErrors = true, true
	return root.ExecuteContext(context.WithValue(ctx, inProcessKey{}, &inProcessAgent{log: log, started: started}))
}
