package cluster

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/slurm"
)

// JobID identifies a job for the life of the cluster. IDs are assigned by
// the FSM in submission order, starting at 1.
type JobID uint64

func (id JobID) String() string { return fmt.Sprintf("%d", uint64(id)) }

// JobState is a job's state, named as Slurm names it so scripts and
// people reading `shoal queue` see familiar words.
type JobState string

// The job states. PENDING, RUNNING and REQUEUED are live; the rest are
// terminal.
const (
	JobPending   JobState = "PENDING"
	JobRunning   JobState = "RUNNING"
	JobCompleted JobState = "COMPLETED"
	JobFailed    JobState = "FAILED"
	JobCancelled JobState = "CANCELLED"
	JobTimeout   JobState = "TIMEOUT"
	JobNodeFail  JobState = "NODE_FAIL"
	// JobOutOfMemory is a job one of whose tasks the kernel killed for
	// going past its memory limit (its cgroup's), as Slurm's state.
	JobOutOfMemory JobState = "OUT_OF_MEMORY"
	// JobDeadline is a pending job that could no longer end by its
	// --deadline: it never started, as Slurm's DEADLINE.
	JobDeadline JobState = "DEADLINE"
	// JobRequeued is a job that lost a node and asked to be requeued: its
	// surviving nodes are stopping their ranks, and it returns to PENDING
	// only once every node has released, so two incarnations never run at
	// once (DESIGN invariant 3). It is not terminal.
	JobRequeued JobState = "REQUEUED"
)

// Terminal reports whether no further transition can leave s.
func (s JobState) Terminal() bool {
	switch s {
	case JobCompleted, JobFailed, JobCancelled, JobTimeout, JobNodeFail, JobOutOfMemory, JobDeadline:
		return true
	}
	return false
}

// Pending reasons, as Slurm's squeue shows them in its REASON column.
const (
	ReasonNone            = ""
	ReasonResources       = "Resources"
	ReasonPriority        = "Priority"
	ReasonReqNodeNotAvail = "ReqNodeNotAvail"
	ReasonNodeDown        = "NodeDown" // for a job that ended NODE_FAIL
	// ReasonDependency: a --dependency does not hold yet.
	ReasonDependency = "Dependency"
	// ReasonDependencyNever: a --dependency can never hold; the job is
	// cancelled with it as its reason.
	ReasonDependencyNever = "DependencyNeverSatisfied"
	// ReasonHeldUser and ReasonHeldAdmin: held (--hold, scontrol hold) by
	// its owner or by root; scontrol release lets it run.
	ReasonHeldUser  = "JobHeldUser"
	ReasonHeldAdmin = "JobHeldAdmin"
	// ReasonArrayTaskLimit: the array's %N throttle is reached.
	ReasonArrayTaskLimit = "JobArrayTaskLimit"
	// ReasonBeginTime: the job's --begin time has not come.
	ReasonBeginTime = "BeginTime"
	// ReasonDeadline: the job, pending, could no longer end by its
	// --deadline and was removed (state DEADLINE, Slurm's FAIL_DEADLINE).
	ReasonDeadline = "DeadLine"
)

// MaxAdminPriority bounds an administrator's job priority (Slurm's
// priorities are 32-bit).
const MaxAdminPriority = 1<<32 - 2

// MaxCommentBytes bounds a job's comment (it travels in the raft log).
const MaxCommentBytes = 1024

// Holds on a pending job.
const (
	HoldNone  = ""
	HoldUser  = "user"
	HoldAdmin = "admin"
)

// Request is what a job asks for. It is validated at submit (Validate) and
// again by the FSM; placement only ever sees valid requests.
type Request struct {
	// Nodes is the number of nodes the gang needs (Slurm's -N), or with
	// NodesMax above it the least (-N MIN-MAX): the job then starts on as
	// many as fit, up to NodesMax.
	Nodes    int `msgpack:"nodes" json:"nodes"`
	NodesMax int `msgpack:"nodes_max,omitempty" json:"nodes_max,omitempty"`
	// GPUsPerNode is how many GPUs each node must give the job.
	GPUsPerNode int `msgpack:"gpus_per_node" json:"gpus_per_node"`
	// TasksPerNode is how many ranks start on each node (default 1); with
	// NTasks set, the most any node runs.
	TasksPerNode int `msgpack:"tasks_per_node" json:"tasks_per_node"`
	// NTasks, when set, is the job's rank count (sbatch -n). When the job
	// starts (protocol 5) the leader sizes each node's share from its free
	// CPUs and records it (NodeAlloc.Tasks; see TaskCountsIn): -n 5 on 2
	// idle nodes runs 4 and 1; the ranks are dealt over the shares by
	// Distribution. Allocations without it lay the ranks out by Pack, or
	// evenly by Distribution (slurm.Layout: 3 and 2). Each node holds
	// CPUs (and memory per CPU) for the ranks it runs. Zero: TasksPerNode
	// on every node.
	NTasks int `msgpack:"ntasks,omitempty" json:"ntasks,omitempty"`
	// Distribution is -m/--distribution as slurm.Distribution.String
	// writes it ("" is Slurm's default): which rank runs on which node.
	Distribution string `msgpack:"distribution,omitempty" json:"distribution,omitempty"`
	// Pack lays NTasks out in blocks as Slurm's allocation does on idle
	// nodes (slurm.BlockCounts): one rank on each node, then the first
	// nodes filled up to TasksPerNode (-n 5 on 2 nodes runs 4 and 1, the
	// ranks 0-3 and 4). Without it, blocks are even (3 and 2), as jobs
	// submitted before it run. Only with the block distribution. The
	// leader sets it, and TasksPerNode, at submit (see Packed).
	Pack bool `msgpack:"pack,omitempty" json:"pack,omitempty"`
	// CPUsPerTask is -c: each rank's CPUs (SLURM_CPUS_PER_TASK).
	CPUsPerTask int `msgpack:"cpus_per_task" json:"cpus_per_task"`
	// CPUsPerGPU is --cpus-per-gpu (or the partition's DefCpuPerGPU): the
	// CPUs each GPU brings. Slurm refuses it beside -c; see CPUsPerNode.
	CPUsPerGPU int `msgpack:"cpus_per_gpu,omitempty" json:"cpus_per_gpu,omitempty"`
	// MinCPUs is --mincpus: the least CPUs each node gives the job,
	// whatever its tasks need.
	MinCPUs int `msgpack:"min_cpus,omitempty" json:"min_cpus,omitempty"`
	// TimeLimit is the wall-clock limit; zero means unlimited.
	TimeLimit time.Duration `msgpack:"time_limit" json:"time_limit"`
	// NodeList names nodes the job must include (Slurm's -w): every one
	// is in the allocation, the rest (up to Nodes) chosen by the policy.
	NodeList []string `msgpack:"node_list" json:"node_list,omitempty"`
	// Exclude names nodes the job must not use (Slurm's -x).
	Exclude []string `msgpack:"exclude" json:"exclude,omitempty"`
	// Constraint is a feature expression every node must match (Slurm's
	// -C), in ParseConstraint's syntax; empty matches every node.
	Constraint string `msgpack:"constraint" json:"constraint,omitempty"`
	// Exclusive gives the job its nodes whole (Slurm's --exclusive): no
	// other job shares them while it runs, and it gets all their GPUs
	// (GPUsPerNode is then the least each node must have).
	Exclusive bool `msgpack:"exclusive" json:"exclusive,omitempty"`
	// Partition is the partition (-p) the job runs in, whose nodes only
	// it may use; the FSM names the default one at submit when the queue
	// policy has partitions.
	Partition string `msgpack:"partition,omitempty" json:"partition,omitempty"`
	// Switches is --switches=K@T: the job waits up to SwitchesWait from
	// its submit for a placement on at most Switches leaf switches, then
	// takes what there is. Zero: no preference beyond the policy's own.
	// MemPerNodeMiB is --mem, MemPerCPUMiB --mem-per-cpu and MemPerGPUMiB
	// --mem-per-gpu; at most one is set (Slurm's rule), and with none the
	// partition's DefMemPerCPU or DefMemPerGPU fills one at submit. The
	// memory is reserved on each node (see MemPerNode) and is the job's
	// cgroup limit there. MemWholeNode is --mem=0: all of each node's.
	MemPerNodeMiB uint64        `msgpack:"mem_per_node_mib,omitempty" json:"mem_per_node_mib,omitempty"`
	MemPerCPUMiB  uint64        `msgpack:"mem_per_cpu_mib,omitempty" json:"mem_per_cpu_mib,omitempty"`
	MemPerGPUMiB  uint64        `msgpack:"mem_per_gpu_mib,omitempty" json:"mem_per_gpu_mib,omitempty"`
	MemWholeNode  bool          `msgpack:"mem_whole_node,omitempty" json:"mem_whole_node,omitempty"`
	Switches      int           `msgpack:"switches,omitempty" json:"switches,omitempty"`
	SwitchesWait  time.Duration `msgpack:"switches_wait,omitempty" json:"switches_wait,omitempty"`
	// GPUOption is the option the GPUs were asked with: GPUOptionPerNode
	// (--gpus-per-node), GPUOptionTotal (--gpus), or "" (--gres, or
	// none). Jobs see it as Slurm's SLURM_GPUS_PER_NODE or SLURM_GPUS.
	GPUOption string `msgpack:"gpu_option,omitempty" json:"gpu_option,omitempty"`
}

// MaxHostNameBytes bounds a host name (a DNS name).
const MaxHostNameBytes = 253

// The options GPUs are asked with (Request.GPUOption).
const (
	GPUOptionPerNode = "gpus-per-node"
	GPUOptionTotal   = "gpus"
)

// MaxMemPerNodeMiB bounds --mem (a petabyte).
const MaxMemPerNodeMiB = 1 << 30

// DefaultSwitchesWait is how long a --switches job waits when it gives no
// @TIME: Slurm's max_switch_wait default.
const DefaultSwitchesWait = 300 * time.Second

// Request bounds that keep one request from describing an absurd job; they
// guard the FSM and placement against hostile or corrupt input.
const (
	MaxNodesPerJob    = 100000
	MaxGPUsPerNode    = 1024
	MaxTasksPerNode   = 4096
	MaxCPUsPerTask    = 100000
	MaxCommandArgs    = 4096
	MaxCommandBytes   = 1 << 20
	MaxJobNameBytes   = 256
	MaxEnvVars        = 4096
	MaxRequestIDBytes = 128
)

// RequestIDRetention is how long a request id is kept once the archive
// loop has seen it (fsm.ArchiveJobs with ForgetRequests; a submit's id
// also while its job is live). Shoal's clients send a write again for
// about a minute at most after its first copy (a submit retries for 30 s,
// each attempt through a failover for up to 20 s), so ten minutes leaves
// a wide margin for a slow client or a long election. The leaders' clocks
// must agree within that margin, as time limits already ask.
const RequestIDRetention = 10 * time.Minute

// Validate checks the request's fields one by one and names the first bad
// one in its error. It fills no defaults; see WithDefaults.
func (r Request) Validate() error {
	switch {
	case r.Nodes < 1:
		return fmt.Errorf("nodes %d: want at least 1", r.Nodes)
	case r.Nodes > MaxNodesPerJob:
		return fmt.Errorf("nodes %d: want at most %d", r.Nodes, MaxNodesPerJob)
	case r.NodesMax != 0 && (r.NodesMax < r.Nodes || r.NodesMax > MaxNodesPerJob):
		return fmt.Errorf("nodes_max %d: want 0 (exactly nodes) or %d to %d", r.NodesMax, r.Nodes, MaxNodesPerJob)
	case r.GPUsPerNode < 0:
		return fmt.Errorf("gpus_per_node %d: want 0 or more", r.GPUsPerNode)
	case r.GPUsPerNode > MaxGPUsPerNode:
		return fmt.Errorf("gpus_per_node %d: want at most %d", r.GPUsPerNode, MaxGPUsPerNode)
	case r.TasksPerNode < 1:
		return fmt.Errorf("tasks_per_node %d: want at least 1", r.TasksPerNode)
	case r.TasksPerNode > MaxTasksPerNode:
		return fmt.Errorf("tasks_per_node %d: want at most %d", r.TasksPerNode, MaxTasksPerNode)
	case r.CPUsPerTask < 0 || r.CPUsPerTask > MaxCPUsPerTask:
		return fmt.Errorf("cpus_per_task %d: want 0 to %d", r.CPUsPerTask, MaxCPUsPerTask)
	case r.TimeLimit < 0:
		return fmt.Errorf("time_limit %s: want 0 (unlimited) or more", r.TimeLimit)
	}
	if err := r.validateLayout(); err != nil {
		return err
	}
	if r.Partition != "" {
		if err := policyName(r.Partition); err != nil {
			return fmt.Errorf("partition: %w", err)
		}
	}
	mems := 0
	for _, set := range []bool{r.MemPerNodeMiB > 0, r.MemPerCPUMiB > 0, r.MemPerGPUMiB > 0, r.MemWholeNode} {
		if set {
			mems++
		}
	}
	switch {
	case r.MemPerNodeMiB > MaxMemPerNodeMiB:
		return fmt.Errorf("mem_per_node_mib %d: want at most %d", r.MemPerNodeMiB, uint64(MaxMemPerNodeMiB))
	case r.MemPerCPUMiB > MaxMemPerNodeMiB:
		return fmt.Errorf("mem_per_cpu_mib %d: want at most %d", r.MemPerCPUMiB, uint64(MaxMemPerNodeMiB))
	case r.MemPerGPUMiB > MaxMemPerNodeMiB:
		return fmt.Errorf("mem_per_gpu_mib %d: want at most %d", r.MemPerGPUMiB, uint64(MaxMemPerNodeMiB))
	case mems > 1:
		return fmt.Errorf("mem_per_node_mib, mem_per_cpu_mib, mem_per_gpu_mib, mem_whole_node: %d set, want at most one (--mem, --mem-per-cpu and --mem-per-gpu exclude each other)", mems)
	case r.MemPerNode() > MaxMemPerNodeMiB:
		return fmt.Errorf("memory per node %d MiB (per cpu or gpu times the node's share): want at most %d", r.MemPerNode(), uint64(MaxMemPerNodeMiB))
	case r.CPUsPerGPU < 0 || r.CPUsPerGPU > MaxCPUsPerTask:
		return fmt.Errorf("cpus_per_gpu %d: want 0 to %d", r.CPUsPerGPU, MaxCPUsPerTask)
	case r.MinCPUs < 0 || r.MinCPUs > MaxCPUsPerTask:
		return fmt.Errorf("min_cpus %d: want 0 to %d", r.MinCPUs, MaxCPUsPerTask)
	case r.Switches < 0 || r.Switches > MaxNodesPerJob:
		return fmt.Errorf("switches %d: want 0 (any) to %d", r.Switches, MaxNodesPerJob)
	case r.SwitchesWait < 0 || r.SwitchesWait > MaxPolicyDuration:
		return fmt.Errorf("switches_wait %s: want 0 to %s", r.SwitchesWait, MaxPolicyDuration)
	}
	return r.validateNodeSet()
}

// validateLayout checks NTasks and Distribution against Nodes,
// NodesMax and TasksPerNode: every node the job may get runs at least one
// rank, none more than TasksPerNode, and TasksPerNode is what the fewest
// nodes need (so placement, which sizes every node by it, holds no more
// than the busiest node runs).
func (r Request) validateLayout() error {
	d, err := parseDist(r.Distribution)
	if err != nil {
		return err
	}
	if r.NTasks == 0 {
		if d.Kind != "" && d.Kind != slurm.DistBlock {
			return fmt.Errorf("distribution %q: needs ntasks (a job with tasks_per_node alone runs its ranks in blocks)", r.Distribution)
		}
		return nil
	}
	if r.NTasks < 0 || r.NTasks > r.Nodes*r.TasksPerNode {
		return fmt.Errorf("ntasks %d: want 0 (tasks_per_node on every node) or 1 to nodes x tasks_per_node, %d", r.NTasks, r.Nodes*r.TasksPerNode)
	}
	if r.Pack && (d.Kind != "" && d.Kind != slurm.DistBlock || r.NodesMax > r.Nodes) {
		return fmt.Errorf("pack: only for the block distribution on a fixed node count")
	}
	most := 0
	for _, nodes := range []int{r.Nodes, max(r.Nodes, r.NodesMax)} {
		for i, c := range r.TaskCounts(nodes) {
			if c == 0 {
				return fmt.Errorf("ntasks %d on %d nodes: node %d would run no task; want fewer nodes", r.NTasks, nodes, i)
			}
			if nodes == r.Nodes {
				most = max(most, c)
			}
		}
	}
	if r.TasksPerNode != most {
		return fmt.Errorf("tasks_per_node %d with ntasks %d on %d nodes: want %d, the most a node runs", r.TasksPerNode, r.NTasks, r.Nodes, most)
	}
	return nil
}

// parseDist reads a stored Distribution, which must be as
// slurm.Distribution.String writes it.
func parseDist(v string) (slurm.Distribution, error) {
	if v == "" {
		return slurm.Distribution{}, nil
	}
	d, err := slurm.ParseDistribution(v)
	if err != nil {
		return d, err
	}
	if d.String() != v {
		return d, fmt.Errorf("distribution %q: want it as written back, %q", v, d.String())
	}
	return d, nil
}

// LayoutCounts is how many of ntasks tasks each of nodes nodes runs by
// distribution dist (a stored Distribution; see slurm.LayoutCounts).
func LayoutCounts(ntasks, nodes int, dist string) ([]int, error) {
	d, err := parseDist(dist)
	if err != nil {
		return nil, err
	}
	return slurm.LayoutCounts(ntasks, nodes, d), nil
}

// Dist is the request's Distribution, parsed (Validate has checked it).
func (r Request) Dist() slurm.Distribution {
	d, _ := parseDist(r.Distribution)
	return d
}

// RankAt is the global rank of local rank local on node k of an
// allocation of nodes nodes (slurm.RankAt of NTasks, or blocks of
// TasksPerNode).
func (r Request) RankAt(nodes, k, local int) int {
	if r.NTasks == 0 {
		return k*max(1, r.TasksPerNode) + local
	}
	if r.Pack {
		// Blocks: the ranks of the nodes before k come first.
		first := 0
		for _, c := range r.TaskCounts(nodes)[:min(max(k, 0), nodes)] {
			first += c
		}
		return first + local
	}
	return slurm.RankAt(r.NTasks, nodes, r.Dist(), k, local)
}

// Ranks is the job's rank count on nodes nodes.
func (r Request) Ranks(nodes int) int {
	if r.NTasks == 0 {
		return max(1, r.TasksPerNode) * nodes
	}
	return r.NTasks
}

// TaskCounts is how many ranks each of nodes nodes runs (see Layout).
func (r Request) TaskCounts(nodes int) []int {
	if r.NTasks == 0 {
		counts := make([]int, max(nodes, 0))
		for i := range counts {
			counts[i] = max(1, r.TasksPerNode)
		}
		return counts
	}
	if r.Pack {
		return slurm.BlockCounts(r.NTasks, slices.Repeat([]int{max(1, r.TasksPerNode)}, max(nodes, 0)))
	}
	return slurm.LayoutCounts(r.NTasks, nodes, r.Dist())
}

// TaskCountsIn is how many ranks each node of the job's allocation a
// runs: as its start laid them out (NodeAlloc.Tasks, on every node), or
// else TaskCounts (allocations from before protocol 5, jobs without
// NTasks).
func (r Request) TaskCountsIn(a Allocation) []int {
	if c := a.taskCounts(); c != nil && r.NTasks > 0 {
		return c
	}
	return r.TaskCounts(len(a.Nodes))
}

// RankIn is the global rank of local rank local on node k of the job's
// allocation a: dealt by the job's distribution over the counts its
// start recorded (slurm.Deal), or else RankAt.
func (r Request) RankIn(a Allocation, k, local int) int {
	if c := a.taskCounts(); c != nil && r.NTasks > 0 {
		if ranks := slurm.Deal(r.NTasks, c, r.Dist()); k >= 0 && k < len(ranks) && local >= 0 && local < len(ranks[k]) {
			return ranks[k][local]
		}
	}
	return r.RankAt(len(a.Nodes), k, local)
}

// taskCounts is a's recorded NodeAlloc.Tasks, or nil unless every node
// has them.
func (a Allocation) taskCounts() []int {
	if len(a.Nodes) == 0 {
		return nil
	}
	c := make([]int, len(a.Nodes))
	for i, n := range a.Nodes {
		if n.Tasks < 1 {
			return nil
		}
		c[i] = n.Tasks
	}
	return c
}

// SpreadCounts is how many of r's NTasks ranks each node runs when the
// job starts on nodes (in rank order) with free[k] CPUs free, named[k]
// when -w names node k: slurm.Spread sizes each node's share as Slurm
// 22.05 sizes a job's CPUs (named nodes first), and the ranks are dealt
// over the shares by the distribution (slurm.DealCounts). -n 5 on 2 idle
// 16-CPU nodes: 4 and 1; with 2 CPUs free on the first: 2 and 3. A job
// whose GPUs go with its tasks (--gpus-per-task, --gres: GPUOption "",
// each node's GPUs sized for TasksPerNode ranks) runs at most
// TasksPerNode on a node, as Slurm bounds a node's tasks by its GPUs. An
// exclusive job's ranks are dealt over its nodes' CPUs, all of which it
// holds.
// It returns nil when the ranks do not fit the nodes' shares (their CPUs
// free, that bound).
func (r Request) SpreadCounts(free []int, named []bool) []int {
	most := 0
	if r.GPUsPerNode > 0 && r.GPUOption == "" {
		most = max(1, r.TasksPerNode)
	}
	rooms := make([]slurm.NodeRoom, len(free))
	for k, c := range free {
		rooms[k] = slurm.NodeRoom{CPUs: c, Named: k < len(named) && named[k], MaxTasks: most}
	}
	caps := slurm.Spread(rooms, r.NTasks, max(1, r.CPUsPerTask))
	if r.Exclusive {
		// The job holds its nodes whole: the ranks are dealt over all
		// their CPUs (-n 5 on 2 nodes: 3 and 2).
		for k, c := range free {
			caps[k] = c / max(1, r.CPUsPerTask)
		}
	}
	counts := slurm.DealCounts(r.NTasks, caps, r.Dist())
	for k, c := range counts {
		if c > caps[k] {
			return nil
		}
	}
	return counts
}

// CPUsFor is the CPUs node n gives a job with NTasks that runs tasks
// of its ranks there: tasks times CPUsPerTask, or what its GPUs' CPUs
// or MinCPUs need when more (CPUsOn for an exclusive job).
func (r Request) CPUsFor(n *Node, tasks int) int {
	if r.Exclusive && n.CPUs > 0 {
		return r.CPUsOn(n)
	}
	return max(max(1, tasks)*max(1, r.CPUsPerTask), r.GPUsPerNode*r.CPUsPerGPU, r.MinCPUs)
}

// MemFor is MemOn for a node running tasks of the job's ranks:
// --mem-per-cpu follows CPUsFor.
func (r Request) MemFor(n *Node, tasks int) uint64 {
	if r.WholeMem() || r.MemPerCPUMiB == 0 {
		return r.MemOn(n)
	}
	return r.MemPerCPUMiB * uint64(r.CPUsFor(n, tasks))
}

// CPUsAt is the CPUs node k of an allocation of nodes nodes gives the
// job, node n: CPUsOn(n), but for a job with NTasks its ranks there
// (TaskCounts) times CPUsPerTask.
func (r Request) CPUsAt(n *Node, k, nodes int) int {
	if r.NTasks == 0 || r.Exclusive && n.CPUs > 0 {
		return r.CPUsOn(n)
	}
	counts := r.TaskCounts(nodes)
	tasks := r.TasksPerNode
	if k >= 0 && k < len(counts) {
		tasks = counts[k]
	}
	return max(max(1, tasks)*max(1, r.CPUsPerTask), r.GPUsPerNode*r.CPUsPerGPU, r.MinCPUs)
}

// MemAt is MemOn for node k of nodes: --mem-per-cpu follows CPUsAt.
func (r Request) MemAt(n *Node, k, nodes int) uint64 {
	if r.NTasks == 0 || r.WholeMem() || r.MemPerCPUMiB == 0 {
		return r.MemOn(n)
	}
	return r.MemPerCPUMiB * uint64(r.CPUsAt(n, k, nodes))
}

// CPUsPerNode is the CPUs one node gives the job: TasksPerNode times
// CPUsPerTask, or GPUsPerNode times CPUsPerGPU or MinCPUs when that is
// more; at least one. An exclusive job takes every CPU of its nodes instead.
func (r Request) CPUsPerNode() int {
	return max(max(1, r.TasksPerNode)*max(1, r.CPUsPerTask), r.GPUsPerNode*r.CPUsPerGPU, r.MinCPUs)
}

// MemPerNode is the memory (MiB) one node gives the job: --mem, or
// --mem-per-cpu times CPUsPerNode, or --mem-per-gpu times GPUsPerNode; 0
// when it asks for none. A MemWholeNode or exclusive job takes all of
// each node's memory instead; see MemOn.
func (r Request) MemPerNode() uint64 {
	switch {
	case r.MemPerNodeMiB > 0:
		return r.MemPerNodeMiB
	case r.MemPerCPUMiB > 0:
		return r.MemPerCPUMiB * uint64(r.CPUsPerNode())
	case r.MemPerGPUMiB > 0:
		return r.MemPerGPUMiB * uint64(max(0, r.GPUsPerNode))
	}
	return 0
}

// WholeMem reports whether the job takes all of each node's memory
// (--mem=0 or --exclusive).
func (r Request) WholeMem() bool { return r.MemWholeNode || r.Exclusive }

// CPUsOn and MemOn are what the job takes on node n: CPUsPerNode and
// MemPerNode, or the whole node's for an exclusive (or --mem=0) job.
func (r Request) CPUsOn(n *Node) int {
	if r.Exclusive && n.CPUs > 0 {
		return n.CPUs
	}
	return r.CPUsPerNode()
}

// MemOn: see CPUsOn.
func (r Request) MemOn(n *Node) uint64 {
	if r.WholeMem() {
		return n.MemoryMiB
	}
	return r.MemPerNode()
}

// WithDefaults returns r with Slurm's defaults for fields left at zero:
// one node, one task per node, one CPU per task; and Nodes raised to the
// node list's length when it is shorter.
func (r Request) WithDefaults() Request {
	if r.Nodes == 0 {
		r.Nodes = 1
	}
	// A node list longer than -N raises -N to its size, as Slurm does.
	if r.Nodes > 0 && r.Nodes < len(r.NodeList) {
		r.Nodes = len(r.NodeList)
	}
	if r.TasksPerNode == 0 && r.NTasks > 0 && r.Nodes <= MaxNodesPerJob {
		// -n alone: the busiest node's share.
		r.TasksPerNode = slices.Max(append(r.TaskCounts(r.Nodes), 1))
	}
	if r.TasksPerNode == 0 {
		r.TasksPerNode = 1
	}
	if r.CPUsPerTask == 0 {
		r.CPUsPerTask = 1
	}
	return r
}

// Spec is what a user submits: the request plus what to run and as whom.
type Spec struct {
	Name    string   `msgpack:"name" json:"name"`
	Command []string `msgpack:"command" json:"command"`
	// Env holds extra KEY=VALUE pairs for every task, in order.
	Env     []string `msgpack:"env" json:"env,omitempty"`
	WorkDir string   `msgpack:"work_dir" json:"work_dir"`
	Request Request  `msgpack:"request" json:"request"`
	// User, UID and GID are set by the agent from the caller's proven
	// identity (socket peer credentials), never taken from the body alone.
	User string `msgpack:"user" json:"user"`
	UID  int    `msgpack:"uid" json:"uid"`
	GID  int    `msgpack:"gid" json:"gid"`
	// Requeue sends the job back to the queue when it loses a node, as
	// Slurm's --requeue; without it the job ends NODE_FAIL.
	Requeue bool `msgpack:"requeue" json:"requeue"`
	// Account and QoS name the job's fair-share account (-A) and QoS
	// level (-q) in the queue Policy; Nice (--nice) is subtracted from its
	// priority, and only root may make it negative.
	Account string `msgpack:"account,omitempty" json:"account,omitempty"`
	// SubmitHost is the host the job was submitted from
	// (SLURM_SUBMIT_HOST), as its client said; "" when unknown.
	SubmitHost string `msgpack:"submit_host,omitempty" json:"submit_host,omitempty"`
	QoS        string `msgpack:"qos,omitempty" json:"qos,omitempty"`
	Nice       int    `msgpack:"nice,omitempty" json:"nice,omitempty"`
	// Comment is the job's free text (scontrol update Comment=), at most
	// MaxCommentBytes.
	Comment string `msgpack:"comment,omitempty" json:"comment,omitempty"`
	// Batch, when set, makes this a batch job: its script runs on the
	// first node and Command is empty.
	Batch *Batch `msgpack:"batch" json:"batch,omitempty"`
	// Signal, when set, is sent before the time limit (--signal).
	Signal *JobSignal `msgpack:"signal" json:"signal,omitempty"`
	// Dependency, when set, keeps the job pending until it holds.
	Dependency *Dependency `msgpack:"dependency" json:"dependency,omitempty"`
	// Array, at submit, makes the job an array: one job per index. The
	// elements' own specs have no Array; their Job.Array says where they
	// stand in it.
	Array *ArraySpec `msgpack:"array" json:"array,omitempty"`
	// Hold submits the job held (sbatch --hold): it pends with
	// JobHeldUser until released.
	Hold bool `msgpack:"hold" json:"hold,omitempty"`
	// Pty runs rank 0 of the job's own task on a terminal that srun
	// --pty attaches to (not for a batch job).
	Pty bool `msgpack:"pty,omitempty" json:"pty,omitempty"`
	// Stdin relays srun's own stdin to the job's own tasks (srun outside
	// an allocation): "" for none (/dev/null), StdinAll for every task,
	// or a task's number (-i N); see StdinTakes. Not for a batch job.
	Stdin string `msgpack:"stdin,omitempty" json:"stdin,omitempty"`
	// Begin (--begin) keeps the job pending, with reason BeginTime, until
	// then; zero: no such wait.
	Begin time.Time `msgpack:"begin,omitempty" json:"begin,omitzero"`
	// Deadline (--deadline) is when the job must have ended: a pending
	// job that could no longer end by then (its time limit, or a minute
	// when it has none, from now) ends DEADLINE without starting, and a
	// job with no time limit starts with one that ends at the deadline;
	// zero: none.
	Deadline time.Time `msgpack:"deadline,omitempty" json:"deadline,omitzero"`
	// NoKill (--no-kill) keeps the job running when one of its nodes
	// other than the first is lost: that node's share is released (its
	// agent fenced its ranks) and the job goes on with the others. Losing
	// the first node, where the batch script or rank 0 runs, ends it as
	// without.
	NoKill bool `msgpack:"no_kill,omitempty" json:"no_kill,omitempty"`
	// Container (--container) is the absolute path of an OCI bundle (a
	// directory with config.json and its root file system) every task of
	// the job — its batch script, or its own ranks — runs in, through
	// the node's OCI runtime (SLURM_CONTAINER); empty: none.
	Container string `msgpack:"container,omitempty" json:"container,omitempty"`
}

// Elastic reports whether a job of this spec runs elastically: it asks for
// a node range (-N MIN-MAX) and runs its command on every node, or is a
// batch job sbatch made elastic (Batch.Elastic: its script runs on the
// first node, which it never loses, and the steps it starts run on the
// nodes the job has then). Its allocation then grows towards NodesMax
// while it runs and shrinks, down to Nodes, when it loses a node other
// than its first (Allocation.Elastic).
func (s Spec) Elastic() bool {
	return (s.Batch == nil || s.Batch.Elastic) && s.Request.NodesMax > s.Request.Nodes
}

// GrowRequest is what growing running elastic job j asks of placement
// and what the FSM checks a GrowJob against: more nodes like those it has
// (same GPUs, CPUs and memory per node, node set), from one up to what
// NodesMax leaves, none it holds or is still stopping; without rejoin
// (a cluster with a server older than protocol 5) none it held in this
// run either, with rejoin a node it lost or gave up may come back
// (Allocation.Rejoinable). Node lists and -n
// layouts are the start's business: each new node runs TasksPerNode
// ranks. Nodes is 0 when j cannot grow.
func (j *Job) GrowRequest(rejoin bool) Request {
	r := j.Spec.Request
	r.NTasks, r.Distribution, r.NodeList = 0, "", nil
	r.Switches, r.SwitchesWait = 0, 0
	r.Exclude = slices.Clone(r.Exclude)
	for _, name := range j.Alloc.NodeNames() {
		if !(rejoin && j.Alloc.Rejoinable(name)) && !slices.Contains(r.Exclude, name) {
			r.Exclude = append(r.Exclude, name)
		}
	}
	room := r.NodesMax - len(j.Alloc.LiveNodes())
	if j.State != JobRunning || j.Alloc == nil || !j.Alloc.Elastic || room < 1 {
		r.Nodes, r.NodesMax = 0, 0
		return r
	}
	r.Nodes, r.NodesMax = 1, room
	if room == 1 {
		r.NodesMax = 0
	}
	return r
}

// MissesDeadline reports whether a job of spec s starting at now could
// no longer end by its --deadline: now plus its time limit, or plus one
// minute when it has none (Slurm's time_min of 1 for a job with a
// deadline and no --time), is past it. False when s has no deadline.
func (s Spec) MissesDeadline(now time.Time) bool {
	if s.Deadline.IsZero() {
		return false
	}
	need := s.Request.TimeLimit
	if need <= 0 {
		need = time.Minute
	}
	return now.Add(need).After(s.Deadline)
}

// DeadlineLimit is the time limit a job of spec s starts with at now:
// its own, or, when it has none, the time left to its --deadline in
// whole minutes as Slurm's scheduler gives it.
func (s Spec) DeadlineLimit(now time.Time) time.Duration {
	if s.Deadline.IsZero() || s.Request.TimeLimit > 0 {
		return s.Request.TimeLimit
	}
	return max(s.Deadline.Sub(now).Truncate(time.Minute), time.Minute)
}

// Validate checks the spec and names the first bad field.
func (s Spec) Validate() error {
	if len(s.Name) > MaxJobNameBytes {
		return fmt.Errorf("name: %d bytes, want at most %d", len(s.Name), MaxJobNameBytes)
	}
	if len(s.SubmitHost) > MaxHostNameBytes || strings.ContainsFunc(s.SubmitHost, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Errorf("submit_host %.64q: want a host name of at most %d bytes", s.SubmitHost, MaxHostNameBytes)
	}
	switch s.Request.GPUOption {
	case "", GPUOptionPerNode, GPUOptionTotal:
	default:
		return fmt.Errorf("gpu_option %.64q: want %q, %q or empty", s.Request.GPUOption, GPUOptionPerNode, GPUOptionTotal)
	}
	if s.Batch != nil && s.Pty {
		return fmt.Errorf("pty: a batch job's script runs without a terminal; use srun --pty")
	}
	if err := ValidateStdin(s.Stdin); err != nil {
		return err
	}
	if s.Batch != nil && s.Stdin != "" {
		return fmt.Errorf("stdin: a batch job's script reads its --input file, not srun's stdin")
	}
	if s.Batch != nil {
		if len(s.Command) != 0 {
			return fmt.Errorf("command: a batch job runs its script, want no command")
		}
		if err := s.Batch.Validate(); err != nil {
			return err
		}
	} else if len(s.Command) == 0 || s.Command[0] == "" {
		return fmt.Errorf("command: empty, want a program and its arguments")
	}
	if len(s.Command) > MaxCommandArgs {
		return fmt.Errorf("command: %d arguments, want at most %d", len(s.Command), MaxCommandArgs)
	}
	n := 0
	for _, a := range s.Command {
		n += len(a)
	}
	if n > MaxCommandBytes {
		return fmt.Errorf("command: %d bytes, want at most %d", n, MaxCommandBytes)
	}
	if len(s.Env) > MaxEnvVars {
		return fmt.Errorf("env: %d variables, want at most %d", len(s.Env), MaxEnvVars)
	}
	for i, kv := range s.Env {
		if !ValidEnvPair(kv) {
			return fmt.Errorf("env[%d] %q: want KEY=VALUE", i, kv)
		}
	}
	if s.Account != "" {
		if err := policyName(s.Account); err != nil {
			return fmt.Errorf("account %.64q: %w", s.Account, err)
		}
	}
	if s.QoS != "" {
		if err := policyName(s.QoS); err != nil {
			return fmt.Errorf("qos %.64q: %w", s.QoS, err)
		}
	}
	if len(s.Comment) > MaxCommentBytes {
		return fmt.Errorf("comment: %d bytes, want at most %d", len(s.Comment), MaxCommentBytes)
	}
	if s.Nice < -MaxNice || s.Nice > MaxNice {
		return fmt.Errorf("nice %d: want %d to %d", s.Nice, -MaxNice, MaxNice)
	}
	if err := s.Request.Validate(); err != nil {
		return err
	}
	if err := ValidateContainer(s.Container); err != nil {
		return err
	}
	if s.Dependency != nil {
		if err := s.Dependency.Validate(); err != nil {
			return err
		}
	}
	if s.Array != nil {
		if err := s.Array.Validate(); err != nil {
			return err
		}
		if total := int64(len(s.Array.Indices)) * int64(s.bytes()); total > MaxArraySpecBytes {
			return fmt.Errorf("array: %d elements of %d bytes each, want at most %d bytes in all (a smaller script, or fewer elements)",
				len(s.Array.Indices), s.bytes(), MaxArraySpecBytes)
		}
	}
	if s.Signal != nil {
		if err := s.Signal.Validate(); err != nil {
			return err
		}
		if s.Signal.BatchOnly && s.Batch == nil {
			return fmt.Errorf("signal.batch_only: B: signals a batch script's shell, and this is not a batch job")
		}
	}
	return nil
}

// MaxContainerBytes bounds a --container path (PATH_MAX).
const MaxContainerBytes = 4096

// ValidateContainer checks a --container bundle path: empty (none), or
// absolute and clean, with no control characters.
func ValidateContainer(p string) error {
	switch {
	case p == "":
		return nil
	case len(p) > MaxContainerBytes:
		return fmt.Errorf("container: %d bytes, want at most %d", len(p), MaxContainerBytes)
	case strings.ContainsFunc(p, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return fmt.Errorf("container %.64q: want a path without control characters", p)
	case !filepath.IsAbs(p) || filepath.Clean(p) != p:
		return fmt.Errorf("container %.64q: want an absolute, clean path to an OCI bundle", p)
	}
	return nil
}

// ValidEnvPair is the rule for an environment entry (Spec.Env,
// StepSpec.Env): KEY=VALUE with a non-empty key and no NUL byte in the
// key.
func ValidEnvPair(kv string) bool {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return i > 0
		}
		if kv[i] == 0 {
			return false
		}
	}
	return false
}

// bytes is roughly what one copy of the spec costs in a snapshot.
func (s Spec) bytes() int {
	n := len(s.Name) + len(s.WorkDir) + len(s.User) + 256
	for _, a := range s.Command {
		n += len(a) + 1
	}
	for _, kv := range s.Env {
		n += len(kv) + 1
	}
	if s.Batch != nil {
		n += len(s.Batch.Script) + len(s.Batch.Output) + len(s.Batch.Error) + len(s.Batch.Input)
		for _, a := range s.Batch.Args {
			n += len(a) + 1
		}
	}
	return n
}

// Job is a job as the FSM records it. A Job read from a view is a copy the
// reader owns; the FSM never hands out its own pointers.
type Job struct {
	ID        JobID    `msgpack:"id" json:"id"`
	RequestID string   `msgpack:"request_id" json:"request_id"`
	Spec      Spec     `msgpack:"spec" json:"spec"`
	State     JobState `msgpack:"state" json:"state"`
	Reason    string   `msgpack:"reason" json:"reason"`
	// Alloc is set while the job holds resources and kept after it ends, so
	// `shoal job` can show where it ran. Alloc.Nodes[i].Released tells
	// whether node i's GPUs are still held.
	Alloc *Allocation `msgpack:"alloc" json:"alloc,omitempty"`
	// ExitCode is the first failing task's exit code, or 0.
	ExitCode int `msgpack:"exit_code" json:"exit_code"`
	// Incarnation counts starts: 1 on the first run, +1 on each requeue.
	// Task reports name their incarnation so a stale one is ignored.
	Incarnation uint64 `msgpack:"incarnation" json:"incarnation"`
	// Array is set on an array job's elements.
	Array *ArrayTask `msgpack:"array" json:"array,omitempty"`
	// Hold is HoldUser or HoldAdmin while a pending job is held.
	Hold string `msgpack:"hold" json:"hold,omitempty"`
	// AdminPriority, when above 0, is the priority an administrator set
	// (scontrol update JobId=N Priority=P): it replaces the multifactor
	// one.
	AdminPriority int64 `msgpack:"admin_priority,omitempty" json:"admin_priority,omitempty"`
	// Preempt is set on a running job chosen as a preemption victim,
	// during its grace time.
	Preempt *Preemption `msgpack:"preempt,omitempty" json:"preempt,omitempty"`
	// Steps are the srun steps of the current incarnation, by ID.
	Steps []Step `msgpack:"steps" json:"steps,omitempty"`
	// Signals are the latest signal requests (shoal cancel --signal), at
	// most MaxSignalRequests, oldest first.
	Signals []SignalRequest `msgpack:"signals" json:"signals,omitempty"`

	SubmitTime time.Time `msgpack:"submit_time" json:"submit_time"`
	StartTime  time.Time `msgpack:"start_time" json:"start_time"`
	EndTime    time.Time `msgpack:"end_time" json:"end_time"`

	CreateIndex uint64 `msgpack:"create_index" json:"create_index"`
	ModifyIndex uint64 `msgpack:"modify_index" json:"modify_index"`
}

// Clone returns a deep copy of j.
func (j *Job) Clone() *Job {
	if j == nil {
		return nil
	}
	c := *j
	c.Spec.Command = append([]string(nil), j.Spec.Command...)
	c.Spec.Env = append([]string(nil), j.Spec.Env...)
	c.Spec.Request.NodeList = append([]string(nil), j.Spec.Request.NodeList...)
	c.Spec.Request.Exclude = append([]string(nil), j.Spec.Request.Exclude...)
	if j.Spec.Batch != nil {
		b := *j.Spec.Batch
		b.Args = append([]string(nil), b.Args...)
		c.Spec.Batch = &b
	}
	c.Spec.Signal = clonePtr(j.Spec.Signal)
	c.Signals = append([]SignalRequest(nil), j.Signals...)
	c.Spec.Dependency = j.Spec.Dependency.Clone()
	c.Spec.Array = j.Spec.Array.Clone()
	c.Array = clonePtr(j.Array)
	c.Preempt = clonePtr(j.Preempt)
	c.Alloc = j.Alloc.Clone()
	if j.Steps != nil {
		c.Steps = make([]Step, len(j.Steps))
		for i, st := range j.Steps {
			st.Spec.Command = append([]string(nil), st.Spec.Command...)
			st.Spec.Env = append([]string(nil), st.Spec.Env...)
			st.Spec.NodeList = append([]string(nil), st.Spec.NodeList...)
			st.Spec.Signal = clonePtr(st.Spec.Signal)
			st.Nodes = append([]StepNode(nil), st.Nodes...)
			c.Steps[i] = st
		}
	}
	return &c
}

// HoldsResources reports whether some node of the job's allocation has not
// yet released its GPUs. A terminal job may still hold them until its tasks
// are confirmed dead: that is what keeps a GPU from two jobs at once.
func (j *Job) HoldsResources() bool {
	if j.Alloc == nil {
		return false
	}
	for _, n := range j.Alloc.Nodes {
		if !n.Released {
			return true
		}
	}
	return false
}

// Packed is r as the leader submits it to a cluster whose nodes the job
// may run on have cpus CPUs each: a job of NTasks in blocks (without
// GPUs, -N MIN-MAX or a node list) packed as Slurm's allocation packs one
// on idle nodes (see Pack): each node holds up to what the Nodes-th
// largest of them can of its tasks, and at most NTasks-Nodes+1, so that
// every node runs one. A job this does not apply to, or that would hold
// no more on its first node than evenly, is returned as it is.
func (r Request) Packed(cpus []int) Request {
	d := r.Dist()
	if r.NTasks == 0 || r.Pack || d.Kind != "" && d.Kind != slurm.DistBlock || r.NodesMax > r.Nodes ||
		r.GPUsPerNode > 0 || len(r.NodeList) > 0 || r.Nodes < 1 || r.Nodes > MaxNodesPerJob || len(cpus) < r.Nodes {
		return r
	}
	sorted := slices.Sorted(slices.Values(cpus))
	capacity := min(sorted[len(sorted)-r.Nodes]/max(1, r.CPUsPerTask), r.NTasks-r.Nodes+1, MaxTasksPerNode)
	even := slices.Max(slurm.LayoutCounts(r.NTasks, r.Nodes, d))
	if capacity <= even {
		return r
	}
	r.Pack, r.TasksPerNode = true, capacity
	return r
}
