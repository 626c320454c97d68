package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/request"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/slurmcli"
	"github.com/shoal-sched/shoal/localcluster"
)

// demoScript is what each rank of the demo job runs.
const demoScript = `echo "rank $RANK of $WORLD_SIZE on node $SLURMD_NODENAME (NODE_RANK $NODE_RANK, LOCAL_RANK $LOCAL_RANK): MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES SLURM_JOB_NODELIST=$SLURM_JOB_NODELIST"`

const pidFileName = "agents.pid"

func newDevCmd(g *globalFlags) *cobra.Command {
	var (
		opts   localcluster.Options
		detach bool
		noDemo bool
	)
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local cluster of agents on loopback with simulated GPUs, and a demo gang job",
		Long: `Starts --nodes agents on 127.0.0.1 (each a real 'shoal agent' process with its
own data dir and ports, real raft and gossip), waits for them to form a
cluster, submits a 2-node demo job and shows where it ran and what it printed.
The cluster keeps running until Ctrl-C, which stops every agent and removes
what dev created. With --detach it keeps running in the background.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDev(cmd.Context(), g, opts, detach, noDemo)
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.Nodes, "nodes", 4, "number of agents")
	f.IntVar(&opts.GPUsPerNode, "gpus-per-node", 8, "simulated GPUs per agent")
	f.IntVar(&opts.LeafSize, "leaf-size", 2, "agents per leaf switch (leaves sit under one spine)")
	f.BoolVar(&detach, "detach", false, "leave the cluster running in the background and print how to stop it")
	f.BoolVar(&noDemo, "no-demo", false, "do not submit the demo job")
	stop := &cobra.Command{
		Use:   "stop",
		Short: "Stop a cluster started with 'shoal dev --detach' and remove its data dir",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.dataDir == "" {
				return errors.New("--data-dir: empty, want the directory 'shoal dev --detach' printed")
			}
			return stopDetached(g.dataDir)
		},
	}
	cmd.AddCommand(stop)
	return cmd
}

func runDev(ctx context.Context, g *globalFlags, opts localcluster.Options, detach, noDemo bool) (err error) {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the shoal binary: %w", err)
	}
	opts.Binary = self
	opts.Detach = detach
	opts.ExtraArgs = []string{"--dev-timing", "--heartbeat", "500ms", "--lease-ttl", "5s", "--kill-grace", "3s", "--kill-wait", "3s"}
	created := false
	if g.dataDir == "" {
		if opts.Dir, err = os.MkdirTemp("", "shoal-dev-"); err != nil {
			return fmt.Errorf("create data dir: %w", err)
		}
		created = true
	} else {
		if opts.Dir, err = filepath.Abs(g.dataDir); err != nil {
			return fmt.Errorf("--data-dir %s: %w", g.dataDir, err)
		}
		if _, err := os.Stat(filepath.Join(opts.Dir, pidFileName)); err == nil {
			return fmt.Errorf("--data-dir %s: a dev cluster already runs there; stop it with: shoal dev stop --data-dir %s", opts.Dir, opts.Dir)
		}
		created = !exists(opts.Dir)
	}
	fmt.Printf("Starting %d agents (%d simulated GPUs each, %d per leaf switch) in %s\n", opts.Nodes, opts.GPUsPerNode, opts.LeafSize, opts.Dir)
	c, err := localcluster.Start(ctx, opts)
	if err != nil {
		return err
	}
	cleanup := func() {
		fmt.Println("\nStopping every agent...")
		c.Stop(15 * time.Second)
		removeDevDir(opts.Dir, c, created)
		fmt.Println("Stopped; removed", opts.Dir)
	}
	if !detach {
		defer cleanup()
	}
	readyCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	err = c.WaitReady(readyCtx, opts.Nodes)
	cancel()
	if err != nil {
		if detach {
			cleanup()
		}
		return fmt.Errorf("%w; agent logs are in %s/*/agent.log", err, opts.Dir)
	}
	first := c.Agents[0]
	cl := first.Client()
	if err := printClusterIntro(ctx, c, cl); err != nil {
		return err
	}
	if !noDemo {
		if err := runDemoJob(ctx, cl, opts); err != nil {
			return err
		}
	}
	if detach {
		if err := os.WriteFile(filepath.Join(opts.Dir, pidFileName), []byte(c.PidFile()), 0o644); err != nil {
			return fmt.Errorf("write pid file: %w", err)
		}
		fmt.Printf("\nThe cluster keeps running in the background. Stop it and remove its data with:\n  %s dev stop --data-dir %s\n", shoalCommand(), opts.Dir)
		return nil
	}
	fmt.Println("\nThe cluster is running. Press Ctrl-C to stop every agent and remove", opts.Dir)
	<-ctx.Done()
	return nil
}

func printClusterIntro(ctx context.Context, c *localcluster.Cluster, cl *api.Client) error {
	leader, err := cl.Leader(ctx)
	if err != nil {
		return err
	}
	nodes, err := cl.Nodes(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("\nCluster formed; leader is %s.\n\n", leader.Name)
	printNodes(os.Stdout, nodes)
	fmt.Printf("\nThe agents talk mutual TLS with certificates from the cluster's own CA (%s).\n", c.CAPaths().CA)
	fmt.Printf("Talk to it from another shell through an agent's Unix socket, for example:\n")
	fmt.Printf("  export SHOAL_DATA_DIR=%s\n", c.Agents[0].DataDir)
	sh := shoalCommand()
	fmt.Printf("  %s nodes; %s queue --all; %s submit --nodes 2 --gpus-per-node 4 -- hostname\n", sh, sh, sh)
	fmt.Printf("or over HTTPS as a user, with a token:\n")
	fmt.Printf("  export SHOAL_CA_CERT=%s SHOAL_ADDR=https://%s\n", c.CAPaths().CA, c.Agents[0].HTTPAddr())
	fmt.Printf("  export $(%s --data-dir %s token create --user $(id -un))\n", sh, c.Agents[0].DataDir)
	return nil
}

// shoalCommand is how a user in another shell runs this binary: "shoal"
// when that name on the PATH is this binary, else $SHOAL_DEMO_BIN (set by
// `make demo` to bin/shoal), else this executable's absolute path.
func shoalCommand() string {
	self, err := os.Executable()
	if err != nil {
		return "shoal"
	}
	if onPath, err := osexec.LookPath("shoal"); err == nil && sameFile(onPath, self) {
		return "shoal"
	}
	if bin := os.Getenv("SHOAL_DEMO_BIN"); bin != "" {
		return bin
	}
	return self
}

func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

func runDemoJob(ctx context.Context, cl *api.Client, opts localcluster.Options) error {
	nodes := min(2, opts.Nodes)
	gpus := min(4, opts.GPUsPerNode)
	wd, _ := os.Getwd()
	req := api.SubmitRequest{
		RequestID: request.NewID(), Name: "demo", Command: []string{"/bin/sh", "-c", demoScript},
		WorkDir: wd, Nodes: nodes, GPUsPerNode: gpus, TasksPerNode: 1,
	}
	fmt.Printf("\n$ shoal submit --name demo --nodes %d --gpus-per-node %d -- /bin/sh -c '<print the rank environment>'\n", nodes, gpus)
	res, err := cl.Submit(ctx, req, request.SubmitRetry)
	if err != nil {
		return fmt.Errorf("submit demo job: %w", err)
	}
	fmt.Printf("Submitted job %d\n", res.ID)
	j, err := waitTerminal(ctx, cl, res.ID, 60*time.Second)
	if err != nil {
		return err
	}
	fmt.Printf("\n$ shoal job %d\n", res.ID)
	slurmcli.PrintJob(os.Stdout, j)
	chunks, err := cl.Logs(ctx, res.ID)
	if err != nil {
		return err
	}
	fmt.Printf("\n$ shoal logs %d\n", res.ID)
	printLogs(os.Stdout, os.Stderr, chunks, false, true)
	return nil
}

// waitTerminal blocks on the job until it finishes or limit passes.
func waitTerminal(ctx context.Context, cl *api.Client, id uint64, limit time.Duration) (api.Job, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var index uint64
	for {
		j, idx, err := cl.WaitJob(ctx, id, index, 5*time.Second)
		if err != nil {
			return j, fmt.Errorf("wait for job %d: %w", id, err)
		}
		if cluster.JobState(j.State).Terminal() {
			return j, nil
		}
		index = idx
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// removeDevDir removes what dev created: every agent's data dir, and the
// parent too when dev made it.
func removeDevDir(dir string, c *localcluster.Cluster, created bool) {
	if created {
		_ = os.RemoveAll(dir)
		return
	}
	for _, a := range c.Agents {
		_ = os.RemoveAll(a.DataDir)
	}
	_ = os.Remove(filepath.Join(dir, pidFileName))
}

// stopDetached stops the agents listed in dir's pid file and removes dir.
func stopDetached(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, pidFileName))
	if err != nil {
		return fmt.Errorf("--data-dir %s: no detached dev cluster there: %w", dir, err)
	}
	var pids []int
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		fields := strings.Fields(line)
		if len(fields) != 2 {
			continue
		}
		if pid, err := strconv.Atoi(fields[1]); err == nil && pid > 1 {
			pids = append(pids, pid)
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, pid := range pids {
		for processAlive(pid) && time.Now().Before(deadline) {
			time.Sleep(pollInterval)
		}
		if processAlive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL) // still there after 20s
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	fmt.Printf("Stopped %d agents; removed %s\n", len(pids), dir)
	return nil
}

// processAlive reports whether pid runs. A zombie (exited, not yet reaped:
// detached agents are orphans, and not every init reaps) counts as gone.
func processAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}
