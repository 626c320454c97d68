package cluster

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Allocation is the gang a job was given: every node and GPU at once.
type Allocation struct {
	// Nodes are in rank order: Nodes[0] is the first node (NODE_RANK 0),
	// where MASTER_ADDR points and where a batch script runs.
	Nodes []NodeAlloc `msgpack:"nodes" json:"nodes"`
	// MasterPort is chosen by the FSM, unique among live jobs whose first
	// node is the same.
	MasterPort int `msgpack:"master_port" json:"master_port"`
	// Index is the raft index of the Allocate command that made it.
	Index uint64 `msgpack:"index" json:"index"`
	// Elastic marks the allocation of an elastic job (Spec.Elastic,
	// started by a protocol 4 leader): it grows towards NodesMax as nodes
	// free up (GrowJob) and, when a node other than its first is lost,
	// shrinks instead of failing, down to Nodes. A node it lost stays in
	// Nodes (state TaskLost, released) so that indices and late reports
	// keep their meaning; Live lists the nodes it has now.
	Elastic bool `msgpack:"elastic,omitempty" json:"elastic,omitempty"`
	// Resizes are the elastic allocation's size changes, oldest first.
	Resizes []Resize `msgpack:"resizes,omitempty" json:"resizes,omitempty"`
}

// Causes of a Resize.
const (
	ResizeGrow   = "grow"   // a node freed up and the job took it
	ResizeShrink = "shrink" // a node was lost or given up and the job went on without it
)

// Resize is one size change of an elastic allocation.
type Resize struct {
	Time  time.Time `msgpack:"time" json:"time"`
	Cause string    `msgpack:"cause" json:"cause"`
	// Node is the node added or lost.
	Node string `msgpack:"node" json:"node"`
	// Nodes is how many nodes the allocation has after the change.
	Nodes int `msgpack:"nodes" json:"nodes"`
}

// MaxResizes bounds an allocation's recorded resizes: beyond it, the
// oldest are dropped (the allocation still changes).
const MaxResizes = 256

// Live reports whether node i of the allocation is part of it now: every
// node of a fixed allocation, the nodes an elastic one has not lost.
func (a *Allocation) Live(i int) bool {
	return !a.Elastic || a.Nodes[i].State != TaskLost && !a.Nodes[i].Removed
}

// LiveNodes returns the names of the nodes the allocation has now, in
// rank order (NodeNames, less an elastic allocation's lost nodes).
func (a *Allocation) LiveNodes() []string {
	if a == nil {
		return nil
	}
	names := make([]string, 0, len(a.Nodes))
	for i, n := range a.Nodes {
		if a.Live(i) {
			names = append(names, n.Node)
		}
	}
	return names
}

// Current returns the allocation as a task started now sees it: an
// elastic one without the nodes it lost, ordered by place (SlotOf), and
// node i's index there (-1 when i is lost). A node that just joined
// (JoinSlot) has its place as its index. A fixed allocation is returned
// as it is.
func (a *Allocation) Current(i int) (*Allocation, int) {
	if !a.Elastic {
		return a, i
	}
	c := *a
	c.Nodes, c.Resizes = nil, nil
	var live []int
	for n := range a.Nodes {
		if a.Live(n) {
			live = append(live, n)
		}
	}
	slices.SortStableFunc(live, func(x, y int) int { return a.SlotOf(x) - a.SlotOf(y) })
	k := -1
	for _, n := range live {
		if n == i {
			k = len(c.Nodes)
		}
		c.Nodes = append(c.Nodes, a.Nodes[n])
	}
	return &c, k
}

// TaskState is the state of one node's share of a job.
type TaskState string

const (
	TaskAssigned TaskState = "assigned" // allocated, agent has not started it
	TaskRunning  TaskState = "running"
	TaskExited   TaskState = "exited"
	TaskLost     TaskState = "lost" // node declared down while it ran
)

// NodeAlloc is one node's share of an allocation.
type NodeAlloc struct {
	Node string `msgpack:"node" json:"node"`
	// GPUs are indices into that node's GPU list.
	GPUs     []int     `msgpack:"gpus" json:"gpus"`
	State    TaskState `msgpack:"state" json:"state"`
	ExitCode int       `msgpack:"exit_code" json:"exit_code"`
	// Released is set once the node's tasks are known dead (exit reported
	// or node declared down); only then may its GPUs, CPUs and memory go
	// to another job.
	Released bool `msgpack:"released" json:"released"`
	// CPUs are the job's CPUs on the node: positions in the node's CPU
	// numbering (0 to Node.CPUs-1; see Node.SocketOf), ascending. The
	// agent maps them to the host's CPU ids for the job's cpuset. Nil on
	// a node that reports no CPUs, and in allocations made before CPUs
	// were consumable.
	CPUs []int `msgpack:"cpus,omitempty" json:"cpus,omitempty"`
	// Tasks is how many of the job's ranks (Request.NTasks) the node
	// runs, as the leader laid them out when the job started, from the
	// CPUs each node had free (slurm.Spread: -n 5 on 2 nodes runs 4 and
	// 1 on idle nodes, 2 and 3 where the first had 2 CPUs free); the
	// ranks are dealt over them by the job's distribution (slurm.Deal).
	// 0 in allocations from before protocol 5, and for jobs laid out by
	// their request alone (see Request.TaskCountsIn).
	Tasks int `msgpack:"tasks,omitempty" json:"tasks,omitempty"`
	// MemMiB is the memory the job holds on the node, its cgroup's limit;
	// 0 when it asked for none (no limit beyond the node's).
	MemMiB uint64 `msgpack:"mem_mib,omitempty" json:"mem_mib,omitempty"`
	// Usage is what the node's tasks used, reported with their exit; nil
	// until then, or when the node could not count it.
	Usage *Usage `msgpack:"usage,omitempty" json:"usage,omitempty"`
	// GPUUsage is what its GPUs did, recorded after its exit when the
	// node sampled them (RecordGPUUsage); nil otherwise.
	GPUUsage *GPUUsage `msgpack:"gpu_usage,omitempty" json:"gpu_usage,omitempty"`
	// Removed marks a node an elastic allocation gave up while its tasks
	// ran (ShrinkJob, to make room for a preempting job): the node stops
	// them (the job's signal, then a kill after the kill wait) and its
	// report releases it without ending the job.
	Removed bool `msgpack:"removed,omitempty" json:"removed,omitempty"`
	// Slot is 1 + the node's place among an elastic allocation's nodes
	// (Allocation.SlotOf), set for a node that joined it (GrowJob); 0 for
	// the nodes it started with, whose place is their index.
	Slot int `msgpack:"slot,omitempty" json:"slot,omitempty"`
	// Join counts the node's earlier entries in the allocation: 0 for its
	// first, k for the entry a node the elastic job lost k times took
	// when it came back (GrowJob with Rejoin, protocol 5). The node's
	// tasks of the entry run under it (task keys, reports), so nothing
	// the node still holds of an earlier entry is taken for this one.
	Join int `msgpack:"join,omitempty" json:"join,omitempty"`
}

// SlotOf is node i's place in the allocation: the node index its tasks
// were started with (SLURM_NODEID, NODE_RANK), from which their ranks
// follow. The first nodes have their index; a node that joined an
// elastic allocation has the place JoinSlot gave it.
func (a *Allocation) SlotOf(i int) int {
	if s := a.Nodes[i].Slot; s > 0 {
		return s - 1
	}
	return i
}

// JoinSlot is the place a node joining elastic allocation a now takes:
// the smallest place no node it has holds. The ranks of a node follow
// from its place, so a joining node never repeats the ranks of a node
// still running, even after a shrink freed a place in the middle (a node
// that joins the first nodes n0 n1 n2 after n1 was lost takes n1's place
// 1, not 2, which n2 runs). Because every place below it is held, it is
// also the joining node's index among the nodes ordered by place
// (Current), at most the number of nodes the allocation has. A node given
// up (Removed) and not yet released still holds its place: its tasks are
// being stopped (GrowJob is refused meanwhile).
func (a *Allocation) JoinSlot() int {
	held := make(map[int]bool, len(a.Nodes))
	for i := range a.Nodes {
		if a.Live(i) || !a.Nodes[i].Released {
			held[a.SlotOf(i)] = true
		}
	}
	s := 0
	for held[s] {
		s++
	}
	return s
}

// GivingUp reports whether the allocation gave up a node (ShrinkJob)
// whose tasks are still being stopped.
func (a *Allocation) GivingUp() bool {
	if a == nil {
		return false
	}
	for _, n := range a.Nodes {
		if n.Removed && !n.Released {
			return true
		}
	}
	return false
}

// Clone returns a deep copy of a.
func (a *Allocation) Clone() *Allocation {
	if a == nil {
		return nil
	}
	c := *a
	c.Nodes = make([]NodeAlloc, len(a.Nodes))
	for i, n := range a.Nodes {
		n.GPUs = append([]int(nil), n.GPUs...)
		n.CPUs = append([]int(nil), n.CPUs...)
		n.Usage = clonePtr(n.Usage)
		n.GPUUsage = clonePtr(n.GPUUsage)
		c.Nodes[i] = n
	}
	c.Resizes = append([]Resize(nil), a.Resizes...)
	return &c
}

// NodeNames returns the allocation's node names in rank order.
func (a *Allocation) NodeNames() []string {
	if a == nil {
		return nil
	}
	names := make([]string, len(a.Nodes))
	for i, n := range a.Nodes {
		names[i] = n.Node
	}
	return names
}

// Hosts returns the allocation's distinct node names, in the order of
// their first entries: NodeNames without the repeats of a node an
// elastic allocation took back.
func (a *Allocation) Hosts() []string {
	var out []string
	for _, name := range a.NodeNames() {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// Find returns the index of node's latest entry in the allocation, or
// -1. A node has several entries only in an elastic allocation that lost
// it and took it back (NodeAlloc.Join); every entry but the latest is
// then released, and the latest is the one the node runs or ran last.
func (a *Allocation) Find(node string) int {
	if a == nil {
		return -1
	}
	for i := len(a.Nodes) - 1; i >= 0; i-- {
		if a.Nodes[i].Node == node {
			return i
		}
	}
	return -1
}

// FindJoin returns the index of node's entry whose Join is join, or -1:
// the entry a report of the node's tasks run under join is about.
func (a *Allocation) FindJoin(node string, join int) int {
	if a == nil {
		return -1
	}
	for i, n := range a.Nodes {
		if n.Node == node && n.Join == join {
			return i
		}
	}
	return -1
}

// Rejoinable reports whether node may join elastic allocation a as a new
// entry although it was part of it before (GrowJob with Rejoin): its
// latest entry is no longer part of the allocation (lost, or given up)
// and is released, which the FSM records only once the entry's tasks are
// known dead (the node's own exit report, or its lease run out and so
// its ranks fenced: see NodeDown). A node never in a is not a rejoin.
func (a *Allocation) Rejoinable(node string) bool {
	i := a.Find(node)
	return i >= 0 && a.Elastic && !a.Live(i) && a.Nodes[i].Released
}

// IndexCSV writes indices (GPUs, ranks) comma-separated, in the order
// given ("0,1,2"), as CUDA_VISIBLE_DEVICES, SLURM_JOB_GPUS, SLURM_GTIDS and
// scontrol's GPUs= show them; "" for none.
func IndexCSV(xs []int) string {
	var b []byte
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(x), 10)
	}
	return string(b)
}

// CPUList writes CPU positions, ascending, in the Linux cpulist form
// ("0-3,8,10-11"), as cpusets and Slurm's CPU_IDs show them; "" for none.
func CPUList(cpus []int) string {
	var b []byte
	for i := 0; i < len(cpus); {
		k := i
		for k+1 < len(cpus) && cpus[k+1] == cpus[k]+1 {
			k++
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(cpus[i]), 10)
		if k > i {
			b = append(b, '-')
			b = strconv.AppendInt(b, int64(cpus[k]), 10)
		}
		i = k + 1
	}
	return string(b)
}

// ParseCPUList reads the cpulist form CPUList writes ("0-3,8"): CPU
// positions, ascending and distinct, each at most MaxCPUsPerNode-1.
func ParseCPUList(s string) ([]int, error) {
	var out []int
	if s == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		switch {
		case err != nil || a < 0 || b < a || b >= MaxCPUsPerNode:
			return nil, fmt.Errorf("cpu list %.64q: part %.32q: want N or N-M, 0 <= N <= M < %d", s, part, MaxCPUsPerNode)
		case len(out) > 0 && a <= out[len(out)-1]:
			return nil, fmt.Errorf("cpu list %.64q: part %.32q: want ascending, distinct CPUs", s, part)
		}
		for x := a; x <= b; x++ {
			out = append(out, x)
		}
	}
	return out, nil
}
