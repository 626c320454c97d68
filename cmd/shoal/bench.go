package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/request"
	"github.com/shoal-sched/shoal/localcluster"
)

// benchOptions shape `shoal bench`.
type benchOptions struct {
	startRuns    int
	failoverRuns int
	latencyRuns  int
	submits      int
	clients      int
	devTiming    bool
	only         []string
	// compareInsecure runs every figure twice, with TLS and with
	// --insecure, interleaved in one run: the cost of security.
	compareInsecure bool
}

func newBenchCmd() *cobra.Command {
	var o benchOptions
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure a local cluster: time to first leader, failover, submit-to-running latency, submit throughput",
		Long: `Starts real agents on loopback (as 'shoal dev' does) and measures:
  leader     time from starting 3 agents to the first leader (--start-runs times)
  failover   kill -9 of the leader of 3 until a submit sent through a survivor
             right after it returns (the client retries by itself, as sbatch)
  latency    submit-to-running of a 2-node gang job on an idle 3-node cluster,
             from just before the submit to the rank's own timestamp
  throughput sustained submits per second through one follower with 3 voters
  join       a 4th node with no certificate joins with a join token: agent start
             until the cluster lists it up
Prints a table in the format of BENCHMARKS.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.startRuns, "start-runs", 5, "clusters started for the time-to-leader figure")
	f.IntVar(&o.failoverRuns, "failover-runs", 5, "kill -9 trials")
	f.IntVar(&o.latencyRuns, "latency-runs", 50, "latency samples")
	f.IntVar(&o.submits, "submits", 500, "submits for the throughput figure")
	f.IntVar(&o.clients, "clients", 4, "parallel clients for the throughput figure (also run with 1)")
	f.BoolVar(&o.devTiming, "dev-timing", false, "use the fast loopback raft timing instead of the LAN defaults")
	f.StringSliceVar(&o.only, "only", nil, "run only these: leader, failover, latency, throughput, join")
	f.BoolVar(&o.compareInsecure, "compare-insecure", false, "run every figure with TLS (the default) and again with --insecure, in one run")
	cmd.AddCommand(newBenchScaleCmd())
	return cmd
}

type benchRow struct{ metric, value, note string }

func runBench(ctx context.Context, o benchOptions) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	root, err := os.MkdirTemp("", "shoal-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	args := []string{"--heartbeat", "500ms", "--lease-ttl", "5s", "--kill-grace", "3s", "--kill-wait", "3s", "--log-level", "warn"}
	if o.devTiming {
		args = append(args, "--dev-timing")
	}
	modes := []bool{false}
	if o.compareInsecure {
		modes = []bool{false, true}
	}
	var rows []benchRow
	run := 0
	for _, insecure := range modes {
		mode, err := benchMode(ctx, o, self, root, args, insecure, &run)
		if err != nil {
			return err
		}
		label := " (TLS)"
		if insecure {
			label = " (--insecure)"
		}
		for _, r := range mode {
			r.metric += label
			rows = append(rows, r)
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "| metric\t| value\t| note\t|")
	fmt.Fprintln(tw, "|---\t|---\t|---\t|")
	for _, r := range rows {
		fmt.Fprintf(tw, "| %s\t| %s\t| %s\t|\n", r.metric, r.value, r.note)
	}
	return tw.Flush()
}

// benchMode measures every figure asked for, with agents on TLS or
// --insecure.
func benchMode(ctx context.Context, o benchOptions, self, root string, args []string, insecure bool, run *int) ([]benchRow, error) {
	want := func(name string) bool { return len(o.only) == 0 || slices.Contains(o.only, name) }
	var rows []benchRow
	newCluster := func(nodes int) (*localcluster.Cluster, error) {
		*run++
		return localcluster.Start(ctx, localcluster.Options{
			Binary: self, Dir: filepath.Join(root, strconv.Itoa(*run)), Nodes: nodes, GPUsPerNode: 8, LeafSize: 2, ExtraArgs: args, Insecure: insecure,
		})
	}

	if want("leader") {
		var samples []time.Duration
		for range o.startRuns {
			t0 := time.Now()
			c, err := newCluster(3)
			if err != nil {
				return nil, err
			}
			err = waitLeader(ctx, c.Agents[0].Client(), 60*time.Second)
			samples = append(samples, time.Since(t0))
			c.Stop(10 * time.Second)
			if err != nil {
				return nil, fmt.Errorf("time to leader: %w", err)
			}
		}
		rows = append(rows, benchRow{"start to first leader, 3 agents", summary(samples), fmt.Sprintf("n=%d, process start included", len(samples))})
	}

	if want("failover") {
		var samples []time.Duration
		for range o.failoverRuns {
			d, err := measureFailover(ctx, newCluster)
			if err != nil {
				return nil, fmt.Errorf("failover: %w", err)
			}
			samples = append(samples, d)
		}
		rows = append(rows, benchRow{"failover: kill -9 leader until a submit through a survivor returns", summary(samples), fmt.Sprintf("n=%d", len(samples))})
	}

	if want("latency") || want("throughput") {
		c, err := newCluster(3)
		if err != nil {
			return nil, err
		}
		defer c.Stop(10 * time.Second)
		if err := c.WaitReady(ctx, 3); err != nil {
			return nil, err
		}
		if want("latency") {
			samples, err := measureLatency(ctx, c, o.latencyRuns)
			if err != nil {
				return nil, fmt.Errorf("latency: %w", err)
			}
			rows = append(rows, benchRow{"submit-to-running, 2-node gang, idle 3-node cluster", percentiles(samples), fmt.Sprintf("n=%d, rank's own timestamp", len(samples))})
		}
		if want("throughput") {
			for _, mode := range []struct {
				clients int
				cli     bool
			}{{1, false}, {o.clients, false}, {1, true}, {o.clients, true}} {
				rate, failed, err := measureThroughput(ctx, c, o.submits, mode.clients, mode.cli)
				if err != nil {
					return nil, fmt.Errorf("throughput: %w", err)
				}
				how := "Go client"
				if mode.cli {
					how = "one `shoal submit` process each, like sbatch"
				}
				rows = append(rows, benchRow{fmt.Sprintf("submits/s through one follower, %d client(s)", mode.clients),
					fmt.Sprintf("%.1f jobs/s", rate), fmt.Sprintf("%d submits, %d failed, jobs pend; %s", o.submits, failed, how)})
			}
		}
	}

	if want("join") && !insecure {
		*run++
		d, err := measureJoin(ctx, self, filepath.Join(root, strconv.Itoa(*run)), args)
		if err != nil {
			return nil, fmt.Errorf("join: %w", err)
		}
		rows = append(rows, benchRow{"join with a token: agent start until the cluster lists the node up", d.Round(time.Millisecond).String(), "a 4th node, no certificate: CSR, signing through raft, then gossip and raft"})
	}
	return rows, nil
}

// measureJoin starts 3 agents, then a 4th with no certificate and a join
// token, and times it from its start until the cluster lists it up.
func measureJoin(ctx context.Context, self, dir string, args []string) (time.Duration, error) {
	c, err := localcluster.Start(ctx, localcluster.Options{Binary: self, Dir: dir, Nodes: 4, Initial: 3, GPUsPerNode: 8, LeafSize: 2, ExtraArgs: args})
	if err != nil {
		return 0, err
	}
	defer c.Stop(10 * time.Second)
	if err := c.WaitReady(ctx, 3); err != nil {
		return 0, err
	}
	cl := c.Agents[0].Client()
	var tok api.JoinTokenResponse
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := cl.Do(ctx, "POST", "/v1/join-tokens", api.JoinTokenRequest{}, &tok)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return 0, err
		}
		time.Sleep(100 * time.Millisecond)
	}
	n4 := c.Agents[3]
	if err := os.RemoveAll(filepath.Join(n4.DataDir, "tls")); err != nil {
		return 0, err
	}
	n4.Args = append(n4.Args, "--token", tok.Token)
	t0 := time.Now()
	if err := c.StartAgent(3); err != nil {
		return 0, err
	}
	for time.Since(t0) < time.Minute {
		nodes, err := cl.Nodes(ctx)
		if err == nil && slices.ContainsFunc(nodes, func(n api.Node) bool { return n.Name == n4.Name && n.State == "IDLE" }) {
			return time.Since(t0), nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0, errors.New("the 4th node did not come up within a minute")
}

func waitLeader(ctx context.Context, cl *api.Client, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := cl.Leader(rctx)
		cancel()
		if err == nil {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return errors.New("no leader")
}

// measureFailover kills the leader of a fresh 3-node cluster and times a
// submit through a survivor sent right after the kill, as sbatch sends
// it: one api.Client.Submit with the CLI's retry window, which retries
// (same request id) by itself until the new leader commits it.
func measureFailover(ctx context.Context, newCluster func(int) (*localcluster.Cluster, error)) (time.Duration, error) {
	c, err := newCluster(3)
	if err != nil {
		return 0, err
	}
	defer c.Stop(10 * time.Second)
	if err := c.WaitReady(ctx, 3); err != nil {
		return 0, err
	}
	l, err := c.Agents[0].Client().Leader(ctx)
	if err != nil {
		return 0, err
	}
	victim := slices.IndexFunc(c.Agents, func(a *localcluster.Agent) bool { return a.Name == l.Name })
	survivor := c.Agents[(victim+1)%len(c.Agents)].Client()
	req := api.SubmitRequest{RequestID: request.NewID(), Command: []string{"true"}, Nodes: 1, WorkDir: "/"}
	t0 := time.Now()
	if err := c.Kill(victim); err != nil {
		return 0, err
	}
	if _, err := survivor.Submit(ctx, req, request.SubmitRetry); err != nil {
		return 0, fmt.Errorf("submit through a survivor after %s: %w", time.Since(t0).Round(time.Millisecond), err)
	}
	return time.Since(t0), nil
}

// measureLatency submits 2-node jobs that print their start time and
// compares it with the time just before each submit.
func measureLatency(ctx context.Context, c *localcluster.Cluster, runs int) ([]time.Duration, error) {
	cl := c.Agents[1].Client()
	var samples []time.Duration
	for range runs {
		t0 := time.Now()
		res, err := cl.Submit(ctx, api.SubmitRequest{RequestID: request.NewID(), Name: "lat", Nodes: 2, GPUsPerNode: 1,
			Command: []string{"/bin/sh", "-c", "date +%s.%N"}, WorkDir: "/"}, 10*time.Second)
		if err != nil {
			return nil, err
		}
		j, err := waitTerminal(ctx, cl, res.ID, 30*time.Second)
		if err != nil {
			return nil, err
		}
		if j.State != "COMPLETED" {
			return nil, fmt.Errorf("job %d ended %s", res.ID, j.State)
		}
		chunks, err := cl.Logs(ctx, res.ID)
		if err != nil {
			return nil, err
		}
		var first time.Time
		for _, ch := range chunks {
			if ch.Stream != "stdout" {
				continue
			}
			secs, err := strconv.ParseFloat(strings.TrimSpace(ch.Data), 64)
			if err != nil {
				return nil, fmt.Errorf("job %d printed %q", res.ID, ch.Data)
			}
			ts := time.Unix(0, int64(secs*1e9))
			if first.IsZero() || ts.Before(first) {
				first = ts
			}
		}
		samples = append(samples, first.Sub(t0))
	}
	return samples, nil
}

// measureThroughput submits n jobs through a follower from clients
// goroutines. The jobs ask for more GPUs than are free behind a long job,
// so they pend: this measures the write path, not the executor.
func measureThroughput(ctx context.Context, c *localcluster.Cluster, n, clients int, viaCLI bool) (float64, int, error) {
	leader, err := c.Agents[0].Client().Leader(ctx)
	if err != nil {
		return 0, 0, err
	}
	fi := slices.IndexFunc(c.Agents, func(a *localcluster.Agent) bool { return a.Name != leader.Name })
	self, err := os.Executable()
	if err != nil {
		return 0, 0, err
	}
	cl := c.Agents[fi].Client()
	blocker, err := cl.Submit(ctx, api.SubmitRequest{RequestID: request.NewID(), Name: "blocker", Nodes: 3, GPUsPerNode: 8,
		Command: []string{"sleep", "3600"}, WorkDir: "/"}, 10*time.Second)
	if err != nil {
		return 0, 0, err
	}
	var failed atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	per := n / clients
	for range clients {
		wg.Go(func() {
			for range per {
				var err error
				if viaCLI {
					err = osexec.CommandContext(ctx, self, "--addr", "unix://"+c.Agents[fi].Socket(), "submit", "--parsable",
						"--no-export", "-J", "tp", "--gpus-per-node", "1", "--", "true").Run()
				} else {
					_, err = cl.Submit(ctx, api.SubmitRequest{RequestID: request.NewID(), Name: "tp", Nodes: 1, GPUsPerNode: 1,
						Command: []string{"true"}, WorkDir: "/"}, 10*time.Second)
				}
				if err != nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(t0)
	ok := float64(per*clients) - float64(failed.Load())
	// Clean up: cancel the blocker and the queued jobs.
	jobs, err := cl.Jobs(ctx, false)
	if err == nil {
		for _, j := range jobs {
			_ = cl.Cancel(ctx, j.ID)
		}
	}
	_ = cl.Cancel(ctx, blocker.ID)
	return ok / elapsed.Seconds(), int(failed.Load()), nil
}

func summary(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("median %.3f s (min %.3f, max %.3f)", median(s).Seconds(), s[0].Seconds(), s[len(s)-1].Seconds())
}

func percentiles(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	p := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return fmt.Sprintf("p50 %.3f s, p99 %.3f s (min %.3f, max %.3f)", median(s).Seconds(), p(0.99).Seconds(), s[0].Seconds(), s[len(s)-1].Seconds())
}

func median(s []time.Duration) time.Duration {
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
