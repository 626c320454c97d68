package request

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/slurm"
)

// FromOptions turns parsed sbatch/srun options into a submit
// request, with the warnings to print.
func FromOptions(opts slurm.Options) (api.SubmitRequest, []string, error) {
	var req api.SubmitRequest
	warnings := append([]string(nil), opts.Warnings...)
	if opts.CPUsPerGPU > 0 && opts.Set["cpus-per-task"] {
		return req, nil, fmt.Errorf("--cpus-per-gpu and --cpus-per-task are mutually exclusive")
	}
	nodes, nodesMax := NodeRange(opts.Nodes, opts.Set["nodes"])
	tasksPerNode, ntasks := 1, 0
	switch {
	case opts.NTasksPerNode > 0:
		tasksPerNode = opts.NTasksPerNode
	case opts.NTasks > 0:
		if !opts.Set["nodes"] {
			nodes = 1
		}
		if opts.NTasks < nodes {
			return req, nil, fmt.Errorf("--ntasks %d on %d nodes: every node runs at least one task; ask for fewer nodes", opts.NTasks, nodes)
		}
		// Laid out by -m (blocks by default: -n 5 on 2 nodes runs 3 and
		// 2); each node holds what its share needs, sized by the busiest.
		ntasks = opts.NTasks
		tasksPerNode = slices.Max(slurm.LayoutCounts(ntasks, nodes, opts.Distribution))
	}
	dist := opts.Distribution.String()
	if ntasks == 0 && opts.Distribution.Kind != "" && opts.Distribution.Kind != slurm.DistBlock {
		// -m cyclic or plane with --ntasks-per-node: the same ranks per
		// node, laid out by the distribution.
		ntasks = tasksPerNode * nodes
	}
	gpusPerNode, gpusTotal, err := SplitGPUs(opts.GPUs, nodes, opts.Set["nodes"])
	if err != nil {
		return req, nil, err
	}
	if gpusPerNode == 0 {
		gpusPerNode = opts.GPUsPerNode
	}
	if opts.GPUsPerTask > 0 && gpusPerNode == 0 {
		gpusPerNode = opts.GPUsPerTask * tasksPerNode
	}
	if k := opts.NTasksPerGPU; k > 0 {
		switch {
		case opts.NTasksPerNode > 0:
			return req, nil, fmt.Errorf("--ntasks-per-gpu and --ntasks-per-node are mutually exclusive")
		case gpusPerNode == 0 && gpusTotal == 0 && ntasks > 0:
			// -n with --ntasks-per-gpu: the GPUs follow, evenly per node.
			gpus := (ntasks + k - 1) / k
			if gpus%nodes != 0 {
				return req, nil, fmt.Errorf("--ntasks %d with --ntasks-per-gpu %d: %d GPUs do not spread evenly over %d nodes; give --gpus-per-node", ntasks, k, gpus, nodes)
			}
			gpusPerNode = gpus / nodes
		case gpusPerNode == 0:
			return req, nil, fmt.Errorf("--ntasks-per-gpu %d: give the GPUs per node (--gpus-per-node, --gres=gpu:N, or --gpus with -N), or --ntasks", k)
		case ntasks == 0:
			// The GPUs given: k tasks for each.
			tasksPerNode = k * gpusPerNode
		}
	}
	req = api.SubmitRequest{
		RequestID:    NewID(),
		Name:         opts.Name,
		Nodes:        nodes,
		GPUsPerNode:  gpusPerNode,
		TasksPerNode: tasksPerNode,
		NTasks:       ntasks,
		Distribution: dist,
		CPUsPerTask:  max(1, opts.CPUsPerTask),
		TimeLimitS:   int64(opts.TimeLimit / time.Second),
		WorkDir:      opts.ChDir,
		Account:      opts.Account,
		QoS:          opts.QOS,
		Nice:         opts.Nice,
		GPUsTotal:    gpusTotal,
		NodesMax:     nodesMax,
		SubmitHost:   SubmitHost(),
	}
	switch {
	case opts.Set["gpus-per-node"]:
		req.GPUOption = cluster.GPUOptionPerNode
	case opts.GPUs > 0:
		req.GPUOption = cluster.GPUOptionTotal
	}
	// Memory stays in the form it was asked in: the FSM works it out per
	// node once the partition's defaults and --gpus' spread are known.
	req.MemPerNodeMiB, req.MemPerCPUMiB, req.MemPerGPUMiB, req.MemWholeNode = opts.Mem, opts.MemPerCPU, opts.MemPerGPU, opts.MemAll
	req.CPUsPerGPU, req.MinCPUs = opts.CPUsPerGPU, opts.MinCPUs
	if req.WorkDir, err = WorkDir(req.WorkDir); err != nil {
		return req, nil, err
	}
	if opts.Array != nil {
		req.Array = cluster.ArrayFromSlurm(*opts.Array)
	}
	if opts.Dependency != nil {
		req.Dependency = cluster.DependencyFromSlurm(*opts.Dependency)
	}
	req.Hold = opts.Hold
	req.NoKill = opts.NoKill
	req.Container = ContainerPath(opts.Container, req.WorkDir)
	if opts.Begin != "" {
		begin, err := slurm.ParseBegin(opts.Begin, time.Now())
		if err != nil {
			return req, nil, fmt.Errorf("--begin: %w", err)
		}
		req.Begin = api.FormatTime(begin)
	}
	if opts.Deadline != "" {
		// Slurm parses --deadline as --begin (parse_time with past=0).
		deadline, err := slurm.ParseBegin(opts.Deadline, time.Now())
		if err != nil {
			return req, nil, fmt.Errorf("--deadline: %w", err)
		}
		req.Deadline = api.FormatTime(deadline)
	}
	req.Partition = opts.Partition
	if sw := opts.Switches; sw != nil {
		req.Switches, req.SwitchesWaitS = sw.Count, int64(sw.MaxWait/time.Second)
	}
	req.Signal = JobSignal(opts.Signal)
	if err := nodeSetFromOptions(opts, &req); err != nil {
		return req, nil, err
	}
	if req.NTasks > 0 && req.Nodes != nodes {
		// -w named more nodes than -N: the ranks spread over all of them.
		if req.NTasks < req.Nodes {
			return req, nil, fmt.Errorf("--ntasks %d on the %d nodes of --nodelist: every node runs at least one task", req.NTasks, req.Nodes)
		}
		req.TasksPerNode = slices.Max(slurm.LayoutCounts(req.NTasks, req.Nodes, opts.Distribution))
	}
	env, err := ExportEnv(opts.Export)
	if err != nil {
		return req, nil, err
	}
	if opts.ExportFile != "" {
		more, err := exportFile(opts.ExportFile)
		if err != nil {
			return req, nil, err
		}
		env = append(env, more...)
	}
	if opts.GetUserEnv {
		// sbatch --get-user-env: the node loads the user's login
		// environment under this one, as Slurm's slurmd does on seeing it.
		env = append(env, "SLURM_GET_USER_ENV=1")
	}
	req.Env = env
	return req, warnings, nil
}

// The request parser: what sbatch, srun and salloc (FromOptions)
// and shoal submit both ask for is read by these, so the two front-ends
// make the same request of the same words.

// NodeRange is the one reading of a --nodes request (slurm.ParseNodes):
// N is exactly N nodes (nodesMax 0), MIN-MAX an elastic job that starts
// on MIN to MAX nodes. Not given, it is one node.
func NodeRange(n slurm.Nodes, given bool) (nodes, nodesMax int) {
	if !given {
		return 1, 0
	}
	if n.Max > n.Min {
		return n.Min, n.Max
	}
	return n.Min, 0
}

// SplitGPUs reads --gpus G: with -N given, G split evenly over its
// (minimum) node count, which it must divide; without, G in all, which
// the agent spreads over the fewest nodes that hold them evenly, knowing
// the nodes' sizes. Both are 0 without --gpus.
func SplitGPUs(gpus, nodes int, nodesGiven bool) (perNode, total int, err error) {
	switch {
	case gpus > 0 && nodesGiven:
		if gpus%nodes != 0 {
			return 0, 0, fmt.Errorf("--gpus %d on %d nodes: want a multiple of the node count, or --gpus-per-node", gpus, nodes)
		}
		return gpus / nodes, 0, nil
	case gpus > 0:
		return 0, gpus, nil
	}
	return 0, 0, nil
}

// WorkDir is the job's working directory: --chdir made absolute against
// the current directory (the agent that runs the job has another), or
// the current directory itself.
func WorkDir(dir string) (string, error) {
	if filepath.IsAbs(dir) {
		return dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		if dir == "" {
			return "", fmt.Errorf("--chdir: not given and the current directory is unknown: %w", err)
		}
		return "", fmt.Errorf("--chdir %s: relative, and the current directory is unknown: %w", dir, err)
	}
	return filepath.Join(wd, dir), nil
}

// ExportEnv is the environment --export passes: all of ours by default
// (Slurm's ALL), none, or the named variables (NAME, or NAME=value).
func ExportEnv(e *slurm.Export) ([]string, error) {
	if e == nil || e.All {
		env := os.Environ()
		if e != nil {
			for _, v := range e.Vars {
				env = append(env, exportPair(v))
			}
		}
		return env, nil
	}
	var env []string
	for _, v := range e.Vars {
		env = append(env, exportPair(v))
	}
	return env, nil
}

// maxExportFileBytes bounds --export-file (Linux refuses much larger
// environments at exec).
const maxExportFileBytes = 16 << 20

// exportFile reads sbatch's --export-file: NAME=value definitions
// separated by NUL bytes, from a file or, for a number from 3 up, an
// open descriptor, as Slurm reads it.
func exportFile(name string) ([]string, error) {
	path := name
	if fd, err := strconv.Atoi(name); err == nil {
		if fd < 3 {
			return nil, fmt.Errorf("--export-file %d: standard input and output are no export files; give a file or a descriptor from 3", fd)
		}
		path = "/dev/fd/" + name
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--export-file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxExportFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("--export-file %s: %w", name, err)
	}
	if len(data) > maxExportFileBytes {
		return nil, fmt.Errorf("--export-file %s: more than %d bytes", name, maxExportFileBytes)
	}
	var env []string
	for i, kv := range strings.Split(string(data), "\x00") {
		kv = strings.TrimSuffix(kv, "\n")
		if kv == "" {
			continue
		}
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return nil, fmt.Errorf("--export-file %s: definition %d %.64q: want NAME=value, NUL-separated", name, i+1, kv)
		}
		env = append(env, kv)
	}
	return env, nil
}

func exportPair(v slurm.ExportVar) string {
	if v.HasValue {
		return v.Name + "=" + v.Value
	}
	return v.Name + "=" + os.Getenv(v.Name)
}

// Batch builds a batch job submit from sbatch's command line: the
// options, then the script (a file, or --wrap) and its arguments.
func Batch(args []string) (api.SubmitRequest, slurm.Options, []string, error) {
	var req api.SubmitRequest
	opts, rest, err := slurm.ParseArgs(slurm.Sbatch, args)
	if err != nil {
		return req, opts, nil, err
	}
	var script []byte
	var scriptArgs []string
	name := "wrap"
	switch {
	case opts.Wrap != "":
		// No file, so no directives: the command line is all there is.
		if len(rest) > 0 {
			return req, opts, nil, fmt.Errorf("--wrap: a batch script (%s) was given as well", rest[0])
		}
		script = slurm.WrapScript(opts.Wrap)
	case len(rest) == 0:
		return req, opts, nil, fmt.Errorf("script: none given, want `sbatch [options] SCRIPT [ARGS]` or --wrap")
	default:
		if script, err = os.ReadFile(rest[0]); err != nil {
			return req, opts, nil, fmt.Errorf("script %s: %w", rest[0], err)
		}
		name = filepath.Base(rest[0])
		if opts, scriptArgs, err = slurm.ParseBatch(script, args); err != nil {
			return req, opts, nil, err
		}
	}
	if opts, _, err = LimitNodeList(slurm.Sbatch, opts); err != nil {
		return req, opts, nil, err
	}
	req, warnings, err := FromOptions(opts)
	if err != nil {
		return req, opts, nil, err
	}
	if req.Name == "" {
		req.Name = name
	}
	req.Batch = &cluster.Batch{Script: string(script), Args: scriptArgs, Output: opts.Output, Error: opts.Error, OpenMode: opts.OpenMode, Input: opts.Input}
	// -N MIN-MAX: the allocation grows and shrinks while the script runs.
	req.Batch.Elastic = req.NodesMax > req.Nodes
	// Slurm requeues batch jobs by default (JobRequeue=1).
	req.Requeue = opts.Requeue == nil || *opts.Requeue
	return req, opts, warnings, nil
}

// ContainerPath is --container's bundle made absolute against the job's
// working directory (as Slurm's slurmstepd finds it from the step's
// cwd); "" when none was given.
func ContainerPath(bundle, workDir string) string {
	switch {
	case bundle == "":
		return ""
	case filepath.IsAbs(bundle):
		return filepath.Clean(bundle)
	}
	return filepath.Join(workDir, bundle)
}

// PrintWarnings prints the parser's and the translation's warnings the
// way sbatch does, to stderr.
func PrintWarnings(cmd string, warnings []string) {
	for _, w := range warnings {
		if w = strings.TrimSpace(w); w != "" {
			fmt.Fprintf(os.Stderr, "%s: warning: %s\n", cmd, w)
		}
	}
}

// SubmitRetry is how long a submit (shoal submit, sbatch, srun, salloc)
// is retried when its answer did not come (the request id makes that
// safe).
const SubmitRetry = 30 * time.Second

// NewID is a fresh request id, which makes a retried submit idempotent.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b[:])
}

// SubmitHost is this host's name, which a job sees as SLURM_SUBMIT_HOST
// ("" when unknown).
func SubmitHost() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return h
}

// JobSignal is a parsed --signal=[B:]SIG[@SECONDS] as the job records it,
// or nil when none was given. Shoal keeps seconds (Slurm's resolution is
// about a minute).
func JobSignal(s *slurm.Signal) *cluster.JobSignal {
	if s == nil {
		return nil
	}
	return &cluster.JobSignal{Number: s.Number, Before: time.Duration(s.Seconds) * time.Second, BatchOnly: s.BatchOnly}
}
