package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/request"
	"github.com/shoal-sched/shoal/slurm"
)

func newSubmitCmd(g *globalFlags) *cobra.Command {
	return submitCmd(func(cmd *cobra.Command, req api.SubmitRequest, parsable bool) error {
		c, err := g.client()
		if err != nil {
			return err
		}
		res, err := c.Submit(cmd.Context(), req, request.SubmitRetry)
		if err != nil {
			return err
		}
		request.PrintWarnings("shoal submit", res.Warnings)
		if parsable {
			fmt.Println(res.ID)
		} else {
			fmt.Printf("Submitted job %d\n", res.ID)
		}
		return nil
	})
}

// submitCmd is shoal submit: its flags make a request, which send
// submits (a test passes its own send).
func submitCmd(send func(cmd *cobra.Command, req api.SubmitRequest, parsable bool) error) *cobra.Command {
	var (
		req        api.SubmitRequest
		timeLimit  string
		signal     string
		parsable   bool
		array      string
		dependency string
		switches   string
		mem        string
		memPerCPU  string
		memPerGPU  string
		gpus       int
		nodes      string
		noEnv      bool
		nodeSet    nodeSetFlags
	)
	cmd := &cobra.Command{
		Use:   "submit [flags] -- COMMAND [ARGS...]",
		Short: "Submit a command to run on every node of a gang allocation",
		Example: `  shoal submit --name hello --nodes 2 --gpus-per-node 4 -- python train.py --lr 3e-4
  shoal submit -N 1 --time 10:00 --parsable -- sleep 60`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("command: empty, want `shoal submit [flags] -- COMMAND [ARGS...]`")
			}
			req.Command = args
			if err := submitNodes(cmd, nodes, &req); err != nil {
				return err
			}
			if err := checkCounts(cmd, req); err != nil {
				return err
			}
			if timeLimit != "" {
				d, err := slurm.ParseTime(timeLimit)
				if err != nil {
					return err
				}
				req.TimeLimitS = int64(d / time.Second)
			}
			if signal != "" {
				s, err := slurm.ParseSignal(signal)
				if err != nil {
					return err
				}
				if s.BatchOnly {
					return fmt.Errorf("--signal %q: B: signals a batch script's shell; use shoal batch for a batch job", signal)
				}
				req.Signal = request.JobSignal(&s)
			}
			if err := queueFlags(&req, array, dependency); err != nil {
				return err
			}
			for _, m := range []struct {
				flag, in string
				out      *uint64
			}{{"--mem", mem, &req.MemPerNodeMiB}, {"--mem-per-cpu", memPerCPU, &req.MemPerCPUMiB}, {"--mem-per-gpu", memPerGPU, &req.MemPerGPUMiB}} {
				if m.in == "" {
					continue
				}
				v, err := slurm.ParseMemory(m.in)
				if err != nil {
					return fmt.Errorf("%s: %w", m.flag, err)
				}
				*m.out = v
			}
			req.MemWholeNode = mem != "" && req.MemPerNodeMiB == 0
			if req.CPUsPerGPU > 0 && cmd.Flags().Changed("cpus-per-task") {
				return fmt.Errorf("--cpus-per-gpu and --cpus-per-task are mutually exclusive")
			}
			req.SubmitHost = request.SubmitHost()
			if cmd.Flags().Changed("gpus-per-node") {
				req.GPUOption = cluster.GPUOptionPerNode
			}
			if gpus > 0 {
				req.GPUOption = cluster.GPUOptionTotal
				perNode, total, err := request.SplitGPUs(gpus, req.Nodes, cmd.Flags().Changed("nodes"))
				if err != nil {
					return err
				}
				req.GPUsPerNode, req.GPUsTotal = perNode, total
			}
			if switches != "" {
				sw, err := slurm.ParseSwitches(switches)
				if err != nil {
					return err
				}
				req.Switches, req.SwitchesWaitS = sw.Count, int64(sw.MaxWait/time.Second)
			}
			if err := nodeSet.apply(&req); err != nil {
				return err
			}
			var err error
			if req.WorkDir, err = request.WorkDir(req.WorkDir); err != nil {
				return err
			}
			if !noEnv {
				// Like sbatch's default --export=ALL.
				req.Env = os.Environ()
			}
			if req.RequestID == "" {
				req.RequestID = request.NewID()
			}
			return send(cmd, req, parsable)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&req.Name, "name", "J", "", "job name (default: the command's base name)")
	nodeSet.add(cmd)
	f.StringVarP(&nodes, "nodes", "N", "1", "number of nodes, all allocated at once; MIN-MAX: start on as many as are free, at least MIN (as sbatch -N)")
	f.IntVar(&req.GPUsPerNode, "gpus-per-node", 0, "GPUs on each node")
	f.IntVar(&req.TasksPerNode, "ntasks-per-node", 1, "ranks started on each node")
	f.IntVarP(&req.CPUsPerTask, "cpus-per-task", "c", 1, "CPUs per rank (exported as SLURM_CPUS_PER_TASK)")
	f.StringVarP(&timeLimit, "time", "t", "", "time limit: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED")
	f.StringVarP(&req.WorkDir, "chdir", "D", "", "working directory of the ranks (default: the current directory)")
	f.StringVar(&req.RequestID, "request-id", "", "idempotency key: submits with the same id make one job while it is live (and for ten minutes at least; default: random)")
	f.BoolVar(&parsable, "parsable", false, "print only the job id")
	f.BoolVar(&req.Requeue, "requeue", false, "if the job loses a node, put it back in the queue to run again (SLURM_RESTART_COUNT counts the restarts)")
	f.Bool("no-requeue", false, "end the job NODE_FAIL if it loses a node (the default for submit)")
	cmd.MarkFlagsMutuallyExclusive("requeue", "no-requeue")
	f.BoolVar(&noEnv, "no-export", false, "do not pass this shell's environment to the ranks")
	f.StringVar(&signal, "signal", "", "SIG[@SECONDS]: send SIG to the ranks SECONDS (default 60) before the time limit")
	f.StringVarP(&req.Account, "account", "A", "", "fair-share account the job's usage counts against (see shoal priority)")
	f.StringVarP(&req.QoS, "qos", "q", "", "QoS level, as the queue policy names them")
	f.StringVarP(&req.Partition, "partition", "p", "", "partition to run in (default: the queue policy's default partition)")
	f.StringVar(&mem, "mem", "", "memory the job holds on each node (e.g. 64G; 0: all of it), its cgroup limit")
	f.StringVar(&memPerCPU, "mem-per-cpu", "", "memory per CPU the job holds (instead of --mem)")
	f.StringVar(&memPerGPU, "mem-per-gpu", "", "memory per GPU the job holds (instead of --mem)")
	f.IntVar(&req.CPUsPerGPU, "cpus-per-gpu", 0, "CPUs per GPU the job holds (instead of --cpus-per-task)")
	f.IntVarP(&gpus, "gpus", "G", 0, "GPUs in all: with --nodes, split evenly; without, over the fewest nodes that hold them evenly")
	f.StringVar(&switches, "switches", "", "COUNT[@WAIT]: wait up to WAIT (default 5:00) for nodes under at most COUNT leaf switches")
	f.IntVar(&req.Nice, "nice", 0, "lower the job's priority by N (--nice alone: 100; negative N: root only)")
	f.Lookup("nice").NoOptDefVal = "100"
	f.StringVarP(&array, "array", "a", "", "run an array of jobs, one per index: 0-15, 1,3,5-7:2, with %N to run at most N at once")
	f.StringVarP(&dependency, "dependency", "d", "", "start only after other jobs: afterok:ID[:ID...], afterany:, afternotok:, after:ID[+MIN], aftercorr:, singleton; ',' all, '?' any")
	f.BoolVarP(&req.Hold, "hold", "H", false, "submit held: the job pends until `scontrol release` (or shoal release)")
	return cmd
}

// queueFlags parses --array and --dependency into req.
func queueFlags(req *api.SubmitRequest, array, dependency string) error {
	if array != "" {
		a, err := slurm.ParseArray(array)
		if err != nil {
			return err
		}
		req.Array = cluster.ArrayFromSlurm(a)
	}
	if dependency != "" {
		d, err := slurm.ParseDependency(dependency)
		if err != nil {
			return err
		}
		req.Dependency = cluster.DependencyFromSlurm(d)
	}
	return nil
}

// submitNodes reads --nodes as sbatch reads -N (slurm.ParseNodes, then
// nodeRange): N, or MIN-MAX for an elastic job. A count below 1 keeps
// the wording of checkCounts.
func submitNodes(cmd *cobra.Command, v string, req *api.SubmitRequest) error {
	n, err := strconv.Atoi(v)
	if err == nil && n < 1 {
		return fmt.Errorf("--nodes %d: want at least 1", n)
	}
	lo, hi, err := slurm.ParseNodes(v)
	if err != nil {
		return err
	}
	req.Nodes, req.NodesMax = request.NodeRange(slurm.Nodes{Min: lo, Max: hi}, cmd.Flags().Changed("nodes"))
	return nil
}

// checkCounts refuses counts the user typed that make no job. A count
// left out takes its default; the API cannot tell 0 from "not given", so
// an explicit 0 is caught here.
func checkCounts(cmd *cobra.Command, req api.SubmitRequest) error {
	f := cmd.Flags()
	switch {
	case req.Nodes < 1:
		return fmt.Errorf("--nodes %d: want at least 1", req.Nodes)
	case req.GPUsPerNode < 0 || (f.Changed("gpus-per-node") && req.GPUsPerNode == 0):
		return fmt.Errorf("--gpus-per-node %d: want at least 1 (leave it out for a job without GPUs)", req.GPUsPerNode)
	case req.TasksPerNode < 1:
		return fmt.Errorf("--ntasks-per-node %d: want at least 1", req.TasksPerNode)
	case req.CPUsPerTask < 1:
		return fmt.Errorf("--cpus-per-task %d: want at least 1", req.CPUsPerTask)
	}
	return nil
}
