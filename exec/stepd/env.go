package stepd

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
	"github.com/shoal-sched/shoal/slurm"
)

// defaultPath is the PATH a rank gets when the submitter gave none; it is
// the PATH slurmstepd hands to tasks (see the golden environments).
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// contractKeys are every variable the contract may set, also those it sets
// only sometimes (SLURM_RESTART_COUNT, the GPU lists). A submitter's value
// for any of them is dropped so that a stale copy from the submit shell
// (sbatch exports the caller's environment) never reaches a rank.
var contractKeys = func() map[string]bool {
	set := map[string]bool{}
	for _, k := range []string{
		"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK",
		"LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK", "CUDA_VISIBLE_DEVICES",
		"CUDA_DEVICE_ORDER",

		"SLURM_JOB_ID", "SLURM_JOBID", "SLURM_JOB_NAME", "SLURM_JOB_NODELIST",
		"SLURM_NODELIST", "SLURM_NNODES", "SLURM_JOB_NUM_NODES", "SLURM_NTASKS",
		"SLURM_NPROCS", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE",
		"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_GPUS_ON_NODE",
		"SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "SLURM_CPUS_PER_TASK",
		"SLURM_SUBMIT_DIR", "SLURMD_NODENAME", "SLURM_JOB_USER", "SLURM_JOB_UID",
		"SLURM_JOB_GID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID",
		"SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX",
		"SLURM_ARRAY_TASK_STEP", "SLURM_RESTART_COUNT", "SLURM_GTIDS",
		"SLURM_GPUS_PER_TASK", "SLURMD_TRES_BIND", "SLURM_STEP_ID", "SLURM_STEPID",
		"SLURM_STEP_NODELIST", "SLURM_STEP_NUM_NODES", "SLURM_STEP_NUM_TASKS",
		"SLURM_STEP_TASKS_PER_NODE", "ENVIRONMENT", "GPU_DEVICE_ORDINAL",
		"ROCR_VISIBLE_DEVICES", "SLURM_CPUS_ON_NODE", "SLURM_JOB_CPUS_PER_NODE",
		"SLURM_JOB_PARTITION", "SLURM_JOB_ACCOUNT", "SLURM_JOB_QOS",
		"SLURM_MEM_PER_NODE", "SLURM_CLUSTER_NAME", "SLURM_GPUS_PER_NODE",
		"SLURM_GPUS", "SLURM_SUBMIT_HOST", "SLURM_DISTRIBUTION",
		"SLURM_TOPOLOGY_ADDR", "SLURM_TOPOLOGY_ADDR_PATTERN", "SLURM_TASK_PID",
		"SLURM_CONTAINER",

		"SHOAL_JOB_ID", "SHOAL_JOB_NAME", "SHOAL_NODELIST", "SHOAL_NNODES",
		"SHOAL_NTASKS", "SHOAL_PROCID", "SHOAL_LOCALID", "SHOAL_NODEID",
		"SHOAL_NODE_NAME", "SHOAL_INCARNATION", "SHOAL_STEP_ID",
	} {
		set[k] = true
	}
	return set
}()

// Env returns the complete environment of one rank, sorted by key, as
// KEY=VALUE strings. localRank is the rank's index on this node, from 0 to
// TasksPerNode-1 (to the node's StepNode.Tasks-1 for a step). It is pure:
// it reads no clock, file or user database.
//
// Spec.Env comes first, then for a step Step.Spec.Env, later entries
// winning over earlier ones; entries for any variable the contract owns
// are dropped, so the contract always wins. PATH, USER and LOGNAME are
// filled in when the submitter's variables lack them. HOME needs the user
// database, so Env leaves it to the submitter; Start adds it from the
// user's passwd entry.
//
// Values follow Slurm's formats (see the golden environments under
// shared/peers/slurm/env_golden), with two deliberate differences:
// CUDA_VISIBLE_DEVICES is set, empty, on a node given no GPUs, so a job
// without GPUs cannot touch another job's (Slurm relies on device cgroups
// for that); and SLURM_NTASKS_PER_NODE and SLURM_CPUS_PER_TASK are always
// set, from the request with its defaults.
//
// For a step (l.Step set) the rank variables are the step's, as srun sets
// them: RANK and SLURM_PROCID are the StepNode's FirstRank+localRank,
// WORLD_SIZE, SLURM_NTASKS, SLURM_NPROCS and SLURM_STEP_NUM_TASKS count the
// step's tasks, NODE_RANK and SLURM_NODEID index the step's nodes,
// SLURM_NNODES and SLURM_STEP_NUM_NODES count them, SLURM_TASKS_PER_NODE
// and SLURM_STEP_TASKS_PER_NODE spread the step's tasks; the job's names
// (SLURM_JOB_NODELIST, SLURM_NODELIST, SLURM_JOB_NUM_NODES,
// SLURM_NTASKS_PER_NODE) stay the job's. A step that holds its GPUs
// (Spec.Exclusive) sees only those (StepNode.GPUs), a shared one all the
// job's on the node. With Step.Spec.GPUsPerTask g > 0 task i of the node
// sees GPUs [i*g, (i+1)*g) of those in CUDA_VISIBLE_DEVICES and
// SLURM_STEP_GPUS; otherwise every task sees all of them. ShimDir, when set, is put first in PATH.
func Env(l task.Launch, localRank int) []string {
	return contractEnv(l, localRank, "")
}

// BatchEnv returns the environment of a batch job's script, sorted, as
// sbatch's batch shell has it: the job's Slurm and Shoal names on its
// first node (SLURM_PROCID, SLURM_LOCALID and SLURM_NODEID 0, the first
// node's GPUs in CUDA_VISIBLE_DEVICES), ENVIRONMENT=BATCH, MASTER_ADDR and
// MASTER_PORT, but none of the per-rank torchrun names (RANK, WORLD_SIZE,
// ...): the script is no rank; the steps it starts are. Spec.Env comes
// first as in Env; ShimDir, when set, is put first in PATH. It is pure.
func BatchEnv(l task.Launch) []string {
	return batchEnv(l, "")
}

// contractEnv is Env with the user's home directory, which Start looks up;
// home "" leaves HOME to the submitter.
func contractEnv(l task.Launch, localRank int, home string) []string {
	if l.Step != nil {
		return stepEnv(l, localRank, home)
	}
	req := l.Spec.Request.WithDefaults()
	nnodes := len(l.Alloc.Nodes)
	counts := req.TaskCountsIn(l.Alloc)
	tpn := l.LocalTasks()
	total := req.Ranks(nnodes)
	gpus := nodeGPUs(l, l.NodeIndex)
	gpuList := cluster.IndexCSV(gpus)
	rank := l.Rank(localRank)

	env := userEnv(l, nil, home, false)
	set := func(k, v string) { env[k] = v }
	jobVars(env, l, l.NodeIndex)

	rankVars(env, rankPlace{nodes: nnodes, node: l.NodeIndex, total: total, counts: counts, rank: rank, local: localRank, localTasks: tpn})
	set("CUDA_VISIBLE_DEVICES", gpuList)
	if len(gpus) > 0 {
		set("SLURM_STEP_GPUS", gpuList)
	}
	gpuAliases(env)
	return sortedEnv(env)
}

// rankPlace is where a rank stands among a job's (or a step's) ranks.
type rankPlace struct {
	nodes, node int   // how many nodes; this one's index
	total       int   // ranks in all
	counts      []int // tasks on each node
	rank, local int   // global rank; index on this node
	localTasks  int   // tasks on this node
}

// rankVars sets the names a rank's place goes by: the torch.distributed
// (torchrun) contract's, Slurm's (formatted as slurmstepd formats them)
// and Shoal's own.
func rankVars(env map[string]string, p rankPlace) {
	itoa, total := strconv.Itoa, p.total
	for k, v := range map[string]string{
		"WORLD_SIZE": itoa(total), "RANK": itoa(p.rank), "LOCAL_RANK": itoa(p.local),
		"LOCAL_WORLD_SIZE": itoa(p.localTasks), "NODE_RANK": itoa(p.node), "GROUP_RANK": itoa(p.node),

		"SLURM_NNODES": itoa(p.nodes), "SLURM_NTASKS": itoa(total), "SLURM_NPROCS": itoa(total),
		"SLURM_TASKS_PER_NODE": slurm.TasksPerNode(p.counts), "SLURM_PROCID": itoa(p.rank),
		"SLURM_LOCALID": itoa(p.local), "SLURM_NODEID": itoa(p.node),

		"SHOAL_NNODES": itoa(p.nodes), "SHOAL_NTASKS": itoa(total), "SHOAL_PROCID": itoa(p.rank),
		"SHOAL_LOCALID": itoa(p.local), "SHOAL_NODEID": itoa(p.node),
	} {
		env[k] = v
	}
}

// stepEnv is contractEnv for a rank of a step.
func stepEnv(l task.Launch, localRank int, home string) []string {
	st := l.Step
	idx, sn, _ := l.StepShare()
	total := 0
	counts := make([]int, len(st.Nodes))
	for i, n := range st.Nodes {
		total += n.Tasks
		counts[i] = n.Tasks
	}
	gpus := nodeGPUs(l, l.NodeIndex)
	if st.Spec.Exclusive {
		gpus = sn.GPUs // those it holds of the job's (StepNode.GPUs)
	}
	taskGPUs := gpus
	if g := st.Spec.GPUsPerTask; g > 0 {
		lo, hi := min(localRank*g, len(gpus)), min((localRank+1)*g, len(gpus))
		taskGPUs = gpus[max(lo, 0):max(hi, 0)]
	}
	if k := st.Spec.NTasksPerGPU; k > 0 && len(gpus) > 0 {
		// --gpu-bind=single:k: k tasks to a GPU, in local order.
		taskGPUs = gpus[(localRank/k)%len(gpus) : (localRank/k)%len(gpus)+1]
	}
	rank := l.Rank(localRank)
	itoa := strconv.Itoa

	env := userEnv(l, st.Spec.Env, home, true)
	set := func(k, v string) { env[k] = v }
	jobVars(env, l, l.NodeIndex)
	// srun passes its caller's MASTER_ADDR and MASTER_PORT through, as
	// Slurm does (it sets neither): they are the job's own unless the
	// batch script exported others, and then the script's win.
	for _, kv := range st.Spec.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && (k == "MASTER_ADDR" || k == "MASTER_PORT") && v != "" {
			set(k, v)
		}
	}

	rankVars(env, rankPlace{nodes: len(st.Nodes), node: idx, total: total, counts: counts, rank: rank, local: localRank, localTasks: sn.Tasks})
	set("CUDA_VISIBLE_DEVICES", cluster.IndexCSV(taskGPUs))

	if l.Spec.Batch != nil { // srun inherits it from the batch shell
		set("ENVIRONMENT", "BATCH")
	}
	set("SLURM_GTIDS", cluster.IndexCSV(l.Ranks()))
	set("SLURM_DISTRIBUTION", st.Spec.Dist().Name(total, len(st.Nodes)))
	if len(gpus) > 0 {
		set("SLURM_STEP_GPUS", cluster.IndexCSV(taskGPUs))
	}
	if st.Spec.Exclusive {
		// The step's GPUs on the node, as Slurm counts them for a step.
		delete(env, "SLURM_GPUS_ON_NODE")
		if len(gpus) > 0 {
			set("SLURM_GPUS_ON_NODE", itoa(len(gpus)))
		}
	}
	if k := st.Spec.NTasksPerGPU; k > 0 {
		set("SLURMD_TRES_BIND", "gpu:single:"+itoa(k))
	}
	if g := st.Spec.GPUsPerTask; g > 0 {
		set("SLURM_GPUS_PER_TASK", itoa(g))
		set("SLURMD_TRES_BIND", "gpu:per_task:"+itoa(g))
	}
	set("SLURM_STEP_ID", itoa(st.ID))
	set("SLURM_STEPID", itoa(st.ID))
	set("SLURM_STEP_NODELIST", l.StepNodeList)
	set("SLURM_STEP_NUM_NODES", itoa(len(st.Nodes)))
	set("SLURM_STEP_NUM_TASKS", itoa(total))
	set("SLURM_STEP_TASKS_PER_NODE", slurm.TasksPerNode(counts))

	set("SHOAL_STEP_ID", itoa(st.ID))
	gpuAliases(env)
	return sortedEnv(env)
}

// batchEnv is BatchEnv with the user's home directory.
func batchEnv(l task.Launch, home string) []string {
	req := l.Spec.Request.WithDefaults()
	nnodes := len(l.Alloc.Nodes)
	total := req.Ranks(nnodes)
	gpus := nodeGPUs(l, 0)
	itoa := strconv.Itoa

	env := userEnv(l, nil, home, true)
	set := func(k, v string) { env[k] = v }
	jobVars(env, l, 0)

	set("CUDA_VISIBLE_DEVICES", cluster.IndexCSV(gpus))
	set("ENVIRONMENT", "BATCH")
	set("SLURM_NNODES", itoa(nnodes))
	set("SLURM_NTASKS", itoa(total))
	set("SLURM_NPROCS", itoa(total))
	set("SLURM_TASKS_PER_NODE", slurm.TasksPerNode(req.TaskCountsIn(l.Alloc)))
	set("SLURM_PROCID", "0")
	set("SLURM_LOCALID", "0")
	set("SLURM_NODEID", "0")
	set("SLURM_GTIDS", "0")

	set("SHOAL_NNODES", itoa(nnodes))
	set("SHOAL_NTASKS", itoa(total))
	set("SHOAL_PROCID", "0")
	set("SHOAL_LOCALID", "0")
	set("SHOAL_NODEID", "0")
	gpuAliases(env)
	return sortedEnv(env)
}

// userEnv starts an environment: Spec.Env, then extra, later entries
// winning, without the contract's names; then PATH (with ShimDir first
// when shim is set), USER, LOGNAME and HOME where missing.
func userEnv(l task.Launch, extra []string, home string, shim bool) map[string]string {
	env := make(map[string]string, len(l.Spec.Env)+len(extra)+len(contractKeys)+4)
	for _, list := range [][]string{l.Spec.Env, extra} {
		for _, kv := range list {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" || contractKeys[k] {
				continue
			}
			env[k] = v
		}
	}
	setDefault := func(k, v string) {
		if _, ok := env[k]; !ok {
			env[k] = v
		}
	}
	setDefault("PATH", defaultPath)
	if shim && l.ShimDir != "" {
		if first, _, _ := strings.Cut(env["PATH"], ":"); first != l.ShimDir {
			env["PATH"] = l.ShimDir + ":" + env["PATH"]
		}
	}
	if l.Spec.User != "" {
		setDefault("USER", l.Spec.User)
		setDefault("LOGNAME", l.Spec.User)
	}
	if home != "" {
		setDefault("HOME", home)
	}
	return env
}

// jobVars sets the names that describe the job and node index i of its
// allocation, the same for every rank, step and batch script there.
func jobVars(env map[string]string, l task.Launch, i int) {
	req := l.Spec.Request.WithDefaults()
	nnodes := len(l.Alloc.Nodes)
	gpus := nodeGPUs(l, i)
	nodeName := l.NodeName
	if nodeName == "" && i >= 0 && i < nnodes {
		nodeName = l.Alloc.Nodes[i].Node
	}
	name := jobName(l.Spec)
	job := l.Job.String()
	itoa := strconv.Itoa
	set := func(k, v string) { env[k] = v }

	set("MASTER_ADDR", l.MasterAddr)
	if c := l.Container(); c != "" {
		set("SLURM_CONTAINER", c) // the bundle, as Slurm's slurmstepd sets it
	}
	set("MASTER_PORT", itoa(l.Alloc.MasterPort))
	// GPU indices are NVML's, which follow the PCI bus; CUDA's default
	// order is "fastest first". Pin CUDA to the bus order so both agree.
	set("CUDA_DEVICE_ORDER", "PCI_BUS_ID")

	set("SLURM_JOB_ID", job)
	set("SLURM_JOBID", job)
	set("SLURM_JOB_NAME", name)
	set("SLURM_JOB_NODELIST", l.NodeList)
	set("SLURM_NODELIST", l.NodeList)
	set("SLURM_JOB_NUM_NODES", itoa(nnodes))
	if req.NTasks == 0 { // Slurm sets it only for --ntasks-per-node
		set("SLURM_NTASKS_PER_NODE", itoa(req.TasksPerNode))
	}
	if req.Distribution != "" { // as asked; a step's is always set
		set("SLURM_DISTRIBUTION", req.Dist().Name(req.Ranks(nnodes), nnodes))
	}
	addr, pattern := slurm.TopologyAddr(nodeName, l.Topology.SwitchParent, l.Topology.Switch)
	set("SLURM_TOPOLOGY_ADDR", addr)
	set("SLURM_TOPOLOGY_ADDR_PATTERN", pattern)
	set("SLURM_GPUS_ON_NODE", itoa(len(gpus)))
	if len(gpus) > 0 { // Slurm sets the GPU lists only when GPUs were given
		set("SLURM_JOB_GPUS", cluster.IndexCSV(gpus))
	}
	set("SLURM_CPUS_PER_TASK", itoa(req.CPUsPerTask))
	// The job's CPUs on each node: what its allocation holds there (an
	// exclusive job's are the whole node's), or, in an allocation from
	// before CPUs were consumed, its tasks there times their CPUs.
	perNode := make([]int, nnodes)
	for k, na := range l.Alloc.Nodes {
		if perNode[k] = len(na.CPUs); perNode[k] == 0 {
			perNode[k] = req.CPUsAt(&cluster.Node{}, k, nnodes)
		}
	}
	cpus := req.CPUsPerNode()
	if i >= 0 && i < nnodes {
		cpus = perNode[i]
	}
	set("SLURM_CPUS_ON_NODE", itoa(cpus))
	set("SLURM_JOB_CPUS_PER_NODE", slurm.TasksPerNode(perNode))
	if req.CPUsPerGPU > 0 {
		set("SLURM_CPUS_PER_GPU", itoa(req.CPUsPerGPU))
	}
	if p := l.Spec.Request.Partition; p != "" {
		set("SLURM_JOB_PARTITION", p)
	}
	if l.Spec.Account != "" {
		set("SLURM_JOB_ACCOUNT", l.Spec.Account)
	}
	if l.Spec.QoS != "" {
		set("SLURM_JOB_QOS", l.Spec.QoS)
	}
	// Memory as it was asked for (or the partition's default filled it).
	switch {
	case req.MemPerNodeMiB > 0:
		set("SLURM_MEM_PER_NODE", strconv.FormatUint(req.MemPerNodeMiB, 10))
	case req.MemPerCPUMiB > 0:
		set("SLURM_MEM_PER_CPU", strconv.FormatUint(req.MemPerCPUMiB, 10))
	case req.MemPerGPUMiB > 0:
		set("SLURM_MEM_PER_GPU", strconv.FormatUint(req.MemPerGPUMiB, 10))
	case req.WholeMem() && i >= 0 && i < nnodes && l.Alloc.Nodes[i].MemMiB > 0:
		set("SLURM_MEM_PER_NODE", strconv.FormatUint(l.Alloc.Nodes[i].MemMiB, 10))
	}
	if l.ClusterName != "" {
		set("SLURM_CLUSTER_NAME", l.ClusterName)
	}
	if l.Spec.SubmitHost != "" {
		set("SLURM_SUBMIT_HOST", l.Spec.SubmitHost)
	}
	// Slurm names the GPU request the way it was asked for, and not at
	// all for --gres.
	switch l.Spec.Request.GPUOption {
	case cluster.GPUOptionPerNode:
		set("SLURM_GPUS_PER_NODE", itoa(req.GPUsPerNode))
	case cluster.GPUOptionTotal:
		set("SLURM_GPUS", itoa(req.GPUsPerNode*nnodes))
	}
	set("SLURM_SUBMIT_DIR", l.Spec.WorkDir)
	set("SLURMD_NODENAME", nodeName)
	set("SLURM_JOB_USER", l.Spec.User)
	set("SLURM_JOB_UID", itoa(l.Spec.UID))
	set("SLURM_JOB_GID", itoa(l.Spec.GID))
	if l.Incarnation > 1 { // Slurm sets it only after a requeue
		set("SLURM_RESTART_COUNT", strconv.FormatUint(l.Incarnation-1, 10))
	}
	if a := l.Array; a != nil {
		set("SLURM_ARRAY_JOB_ID", a.JobID.String())
		set("SLURM_ARRAY_TASK_ID", itoa(a.TaskID))
		set("SLURM_ARRAY_TASK_COUNT", itoa(a.Count))
		set("SLURM_ARRAY_TASK_MIN", itoa(a.Min))
		set("SLURM_ARRAY_TASK_MAX", itoa(a.Max))
		if a.Step > 0 { // indices that are no one progression have no step
			set("SLURM_ARRAY_TASK_STEP", itoa(a.Step))
		}
	}

	set("SHOAL_JOB_ID", job)
	set("SHOAL_JOB_NAME", name)
	set("SHOAL_NODELIST", l.NodeList)
	set("SHOAL_NODE_NAME", nodeName)
	set("SHOAL_INCARNATION", strconv.FormatUint(l.Incarnation, 10))
}

// gpuAliases sets the other vendors' names for the visible GPUs, as
// Slurm does wherever it sets CUDA_VISIBLE_DEVICES to a list.
func gpuAliases(env map[string]string) {
	if v := env["CUDA_VISIBLE_DEVICES"]; v != "" {
		env["GPU_DEVICE_ORDINAL"] = v
		env["ROCR_VISIBLE_DEVICES"] = v
	}
}

// nodeGPUs is the GPU list of node index i of the allocation.
func nodeGPUs(l task.Launch, i int) []int {
	if i < 0 || i >= len(l.Alloc.Nodes) {
		return nil
	}
	return l.Alloc.Nodes[i].GPUs
}

func sortedEnv(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.SortFunc(out, func(a, b string) int {
		ka, _, _ := strings.Cut(a, "=")
		kb, _, _ := strings.Cut(b, "=")
		return strings.Compare(ka, kb)
	})
	return out
}

// jobName is the job's name, or like sbatch's default the base name of the
// program it runs.
func jobName(s cluster.Spec) string {
	if s.Name != "" || len(s.Command) == 0 {
		return s.Name
	}
	return filepath.Base(s.Command[0])
}
