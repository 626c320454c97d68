package task

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/slurm"
)

// Exit causes. They are the values of fsm's Cause* constants (fsm may not
// be imported here: exec and stepd depend on domain types only) and must stay equal
// to them; they travel in TaskExited.
const (
	CauseExit      = "exit"      // fsm.CauseExit
	CauseTimeout   = "timeout"   // fsm.CauseTimeout
	CauseCancelled = "cancelled" // fsm.CauseCancelled
	CauseFenced    = "fenced"    // fsm.CauseFenced
	CauseLost      = "lost"      // fsm.CauseLost
	CauseStartFail = "start"     // fsm.CauseStartFail
	CauseOOM       = "oom"       // fsm.CauseOOM
)

// Exit codes of start failures, as a shell reports them.
const (
	CodeNotExecutable = 126
	CodeNotFound      = 127
	CodeLost          = -1
)

// NoStep is the Step of a Key naming a job's own task: the command of
// `shoal submit` on every node, or a batch job's script on its first node.
const NoStep = -1

// Key names one task on this node: a job incarnation's own ranks
// (Step NoStep) or its share of a step (Step 0, 1, ...).
type Key struct {
	Job         cluster.JobID
	Incarnation uint64
	Step        int
	// Join is the node's entry in the allocation the task runs under
	// (cluster.NodeAlloc.Join): 0 but on a node an elastic job lost and
	// took back, where the tasks of its earlier entry keep their own key.
	Join int
}

func (k Key) String() string {
	s := fmt.Sprintf("%s.%d", k.Job, k.Incarnation)
	if k.Join > 0 {
		s += fmt.Sprintf(" (join %d)", k.Join)
	}
	if k.Step != NoStep {
		s += fmt.Sprintf(" step %d", k.Step)
	}
	return s
}

// CgroupPaths are the cgroups of task key: the job incarnation's, and
// the task's under it.
func CgroupPaths(k Key) (job, task string) {
	job = "job_" + k.Job.String() + "." + strconv.FormatUint(k.Incarnation, 10)
	if k.Join > 0 {
		job += "~" + strconv.Itoa(k.Join)
	}
	task = job + "/task"
	if k.Step != NoStep {
		task = job + "/step_" + strconv.Itoa(k.Step)
	}
	return job, task
}

// Launch is everything a supervisor needs to run this node's share of a job
// incarnation, or of one of its steps.
type Launch struct {
	Job         cluster.JobID
	Incarnation uint64
	// Spec is the job's spec: Command, Env (applied before the contract,
	// so the contract wins), WorkDir, User/UID/GID, Name and Request
	// (TasksPerNode, CPUsPerTask, TimeLimit).
	Spec cluster.Spec
	// Alloc lists the job's nodes in rank order and its MasterPort.
	Alloc cluster.Allocation
	// NodeIndex is this node's index in Alloc.Nodes (NODE_RANK).
	NodeIndex int
	// Join is the node's entry the task runs under (Key.Join).
	Join int `json:",omitempty"`
	// MasterAddr is the host ranks dial for Alloc.Nodes[0].
	MasterAddr string
	// NodeList is the compressed hostlist of Alloc.NodeNames(), e.g. "n[1-2]".
	NodeList string
	// NodeName is this node's name.
	NodeName string
	// ClusterName is SLURM_CLUSTER_NAME ("" leaves it unset).
	ClusterName string
	// Topology is this node's place in the switch tree, for
	// SLURM_TOPOLOGY_ADDR.
	Topology cluster.Topology `json:",omitzero"`

	// Step, when set, makes this launch this node's share of an srun step:
	// the StepNode whose Node is NodeName, as Tasks ranks with global ranks
	// FirstRank to FirstRank+Tasks-1, running Step.Spec.Command with
	// Step.Spec.Env added to Spec.Env, in Step.Spec.WorkDir (Spec.WorkDir
	// when empty). A step has no time limit of its own: it ends with the
	// job. Nil means the job's own tasks.
	Step *cluster.Step
	// StepNodeList is the compressed hostlist of the step's nodes.
	StepNodeList string
	// Stdout and Stderr, when set, are absolute paths a batch script's
	// output goes to instead of the rank files; Stderr equal to Stdout
	// sends both to one file, Stderr empty sends stderr to the rank file.
	// They are opened as the job's user, never through a symbolic link,
	// appended to when Spec.Batch.OpenMode is "append" and truncated
	// otherwise; one the user cannot open fails the task's start. Only a
	// batch job's own task may set them.
	Stdout, Stderr string
	// Stdin, when set, is the absolute path a batch script's stdin reads
	// (sbatch --input; cluster's Job.BatchInput), opened as the job's
	// user; a step's ranks take theirs from Step.Spec.Input (StdinPath).
	// Only a batch job's own task may set it.
	Stdin string `json:",omitempty"`
	// ShimDir, when set, is a directory of the agent's Slurm command shims
	// (srun, scontrol, ...); it is put first in PATH of batch scripts and
	// step tasks.
	ShimDir string
	// Array, for an array element, is its place in the array
	// (SLURM_ARRAY_*).
	Array *cluster.ArrayTask
	// Hosts are the cluster's node names and their agents' addresses,
	// for the tasks' /etc/hosts when Config.TaskNamespace is set.
	Hosts []Host
	// JobStart is when the job incarnation started (the FSM's StartTime):
	// a step's --signal warning is due at JobStart + the time limit - the
	// warning time (the job's own task counts from its own start, as its
	// time limit does).
	JobStart time.Time
}

func (l Launch) Key() Key {
	k := Key{Job: l.Job, Incarnation: l.Incarnation, Step: NoStep, Join: l.Join}
	if l.Step != nil {
		k.Step = l.Step.ID
	}
	return k
}

// PtyRank reports whether global rank runs on the task's terminal (srun
// --pty): rank 0 of a --pty step, or of a job's own --pty task.
func (l Launch) PtyRank(rank int) bool {
	if rank != 0 {
		return false
	}
	if l.Step != nil {
		return l.Step.Spec.Pty
	}
	return l.Spec.Pty && l.Spec.Batch == nil
}

// RelayRank reports whether global rank reads srun's own stdin, relayed
// to its supervisor (see StdinSock): a rank the step's, or the job's own
// task's, Stdin names (cluster.StdinTakes), unless it runs on a terminal.
func (l Launch) RelayRank(rank int) bool {
	if l.PtyRank(rank) {
		return false
	}
	if l.Step != nil {
		return cluster.StdinTakes(l.Step.Spec.Stdin, rank)
	}
	return l.Spec.Batch == nil && cluster.StdinTakes(l.Spec.Stdin, rank)
}

// StdinPath is the file global rank reads its stdin from, "" for none
// (/dev/null): a batch script's Stdin, or a step's --input pattern
// expanded for the rank (see stepFile).
func (l Launch) StdinPath(rank int, workDir string) string {
	if l.Step == nil {
		return l.Stdin
	}
	return l.stepFile(l.Step.Spec.Input, rank, workDir)
}

// StepOutputPaths are the files a step's global rank writes its stdout
// and stderr to (srun -o/-e), "" each where the rank writes to its rank
// file (and srun shows it), DevNull for "none". A step with -o and no -e
// sends stderr to -o's file, as Slurm's.
func (l Launch) StepOutputPaths(rank int, workDir string) (stdout, stderr string) {
	if l.Step == nil {
		return "", ""
	}
	sp := l.Step.Spec
	errPattern := sp.Error
	if errPattern == "" {
		errPattern = sp.Output
	}
	return l.stepOutputFile(sp.Output, rank, workDir), l.stepOutputFile(errPattern, rank, workDir)
}

// DevNull is what a step's "none" output pattern names.
const DevNull = "/dev/null"

func (l Launch) stepOutputFile(pattern string, rank int, workDir string) string {
	if strings.EqualFold(pattern, "none") {
		return DevNull
	}
	return l.stepFile(pattern, rank, workDir)
}

// stepFile is a step's filename pattern expanded for global rank (%t its
// rank, %n its node's index in the step, %N this node, %s the step, and
// the others of slurm.ExpandOutputPattern) relative to workDir, the
// rank's working directory; "" for an empty pattern or "none".
func (l Launch) stepFile(pattern string, rank int, workDir string) string {
	if pattern == "" || strings.EqualFold(pattern, "none") {
		return ""
	}
	idx, _, _ := l.StepShare()
	f := slurm.PatternFields{JobID: uint64(l.Job), StepID: strconv.Itoa(l.Step.ID), User: l.Spec.User,
		JobName: l.Spec.Name, NodeName: l.NodeName, NodeID: idx, TaskID: rank}
	if l.Array != nil {
		f.IsArray, f.ArrayJobID, f.ArrayTaskID = true, uint64(l.Array.JobID), l.Array.TaskID
	}
	p := slurm.ExpandOutputPattern(pattern, f)
	if !filepath.IsAbs(p) {
		p = filepath.Join(workDir, p)
	}
	return p
}

// BatchScript reports whether l runs a batch job's script.
func (l Launch) BatchScript() bool { return l.Spec.Batch != nil && l.Step == nil }

// Container is the OCI bundle this launch's tasks run in: the step's
// --container for a step, the job's for its batch script or its own
// ranks; "" for none.
func (l Launch) Container() string {
	if l.Step != nil {
		return l.Step.Spec.Container
	}
	return l.Spec.Container
}

// Host is a node name and its agent's address (an IP), for the private
// /etc/hosts of tasks.
type Host struct {
	Name string
	Addr string
}

// Plan is what a task runs on this node, derived from its Launch by
// Launch.Plan.
type Plan struct {
	First, Ranks int      // global rank of the first, how many
	Argv         []string // the command; for a batch script, its Args
	WorkDir      string
	Script       bool          // run the batch script, Argv are its arguments
	TimeLimit    time.Duration // 0: none
}

// Plan validates l as a task of node, this node, and derives what the
// node runs for it. The agent checks a Launch with it before it records
// the task; the supervisor derives its ranks from it.
func (l Launch) Plan(node string) (Plan, error) {
	if l.Job == 0 || l.Incarnation == 0 {
		return Plan{}, fmt.Errorf("job id and incarnation must be positive, got %d and %d", l.Job, l.Incarnation)
	}
	if l.NodeIndex < 0 || l.NodeIndex >= len(l.Alloc.Nodes) {
		return Plan{}, fmt.Errorf("node index %d: want 0 to %d", l.NodeIndex, len(l.Alloc.Nodes)-1)
	}
	if n := l.Alloc.Nodes[l.NodeIndex].Node; n != node {
		return Plan{}, fmt.Errorf("node index %d names node %q, this node is %q", l.NodeIndex, n, node)
	}
	if l.NodeName != "" && l.NodeName != node {
		return Plan{}, fmt.Errorf("node name %q, this node is %q", l.NodeName, node)
	}
	s := l.Spec
	s.Request = s.Request.WithDefaults()
	if err := s.Validate(); err != nil {
		return Plan{}, fmt.Errorf("spec: %w", err)
	}
	if (l.Stdout != "" || l.Stderr != "" || l.Stdin != "") && !l.BatchScript() {
		return Plan{}, errors.New("stdin/stdout/stderr files: only for a batch script")
	}
	for _, p := range []string{l.Stdout, l.Stderr, l.Stdin} {
		if p != "" && !filepath.IsAbs(p) {
			return Plan{}, fmt.Errorf("output file %q: want an absolute path", p)
		}
	}
	tpn := s.Request.TasksPerNode
	switch {
	case l.Step != nil:
		st := l.Step
		if st.ID < 0 {
			return Plan{}, fmt.Errorf("step id %d: want 0 or more", st.ID)
		}
		if st.Incarnation != 0 && st.Incarnation != l.Incarnation {
			return Plan{}, fmt.Errorf("step %d belongs to incarnation %d, not %d", st.ID, st.Incarnation, l.Incarnation)
		}
		if len(st.Spec.Command) == 0 || st.Spec.Command[0] == "" {
			return Plan{}, fmt.Errorf("step %d command: empty", st.ID)
		}
		_, sn, ok := l.StepShare()
		if !ok {
			return Plan{}, fmt.Errorf("step %d: no share for node %s", st.ID, node)
		}
		if sn.Tasks < 1 || sn.FirstRank < 0 {
			return Plan{}, fmt.Errorf("step %d on %s: %d tasks from rank %d", st.ID, sn.Node, sn.Tasks, sn.FirstRank)
		}
		have := len(l.Alloc.Nodes[l.NodeIndex].GPUs)
		if st.Spec.Exclusive {
			have = len(sn.GPUs) // those the step holds
		}
		if g := st.Spec.GPUsPerTask; g < 0 || g*sn.Tasks > have {
			return Plan{}, fmt.Errorf("step %d: %d tasks with %d GPUs each, node %s has %d for it",
				st.ID, sn.Tasks, g, sn.Node, have)
		}
		dir := st.Spec.WorkDir
		if dir == "" {
			dir = s.WorkDir
		}
		return Plan{First: sn.FirstRank, Ranks: sn.Tasks, Argv: st.Spec.Command, WorkDir: dir}, nil
	case l.Spec.Batch != nil:
		if l.NodeIndex != 0 {
			return Plan{}, fmt.Errorf("batch script: runs on the first node, this is node index %d", l.NodeIndex)
		}
		return Plan{First: 0, Ranks: 1, Argv: l.Spec.Batch.Args, WorkDir: s.WorkDir,
			Script: true, TimeLimit: s.Request.TimeLimit}, nil
	default:
		if s.Request.NTasks > 0 {
			tpn = s.Request.TaskCountsIn(l.Alloc)[l.NodeIndex]
			if tpn < 1 {
				return Plan{}, fmt.Errorf("ntasks %d on %d nodes: node index %d runs none", s.Request.NTasks, len(l.Alloc.Nodes), l.NodeIndex)
			}
		}
		return Plan{First: l.Rank(0), Ranks: tpn, Argv: s.Command, WorkDir: s.WorkDir,
			TimeLimit: s.Request.TimeLimit}, nil
	}
}

// Rank is the global rank (RANK, SLURM_PROCID) of this node's local task
// local: by the step's layout for a step, the job's for its own ranks
// (slurm.Layout: blocks, round robin or planes), 0 for a batch script.
// Ranks of one node are consecutive only in block layouts.
func (l Launch) Rank(local int) int { return l.rankOf()(local) }

// Ranks is the global ranks of this node's tasks, in local order.
func (l Launch) Ranks() []int {
	rank := l.rankOf()
	out := make([]int, max(l.LocalTasks(), 0))
	for i := range out {
		out[i] = rank(i)
	}
	return out
}

// rankOf is Rank with this node's place looked up once.
func (l Launch) rankOf() func(local int) int {
	switch {
	case l.Step != nil:
		idx, sn, _ := l.StepShare()
		if l.Step.Spec.NTasks == 0 { // blocks: consecutive from the node's first
			return func(local int) int { return sn.FirstRank + local }
		}
		spec := l.Step.Spec
		return func(local int) int { return spec.RankAt(idx, local) }
	case l.BatchScript():
		return func(int) int { return 0 }
	}
	req, alloc, k := l.Spec.Request.WithDefaults(), l.Alloc, l.NodeIndex
	return func(local int) int { return req.RankIn(alloc, k, local) }
}

// LocalTasks is how many tasks this node runs: the step's share, the
// job's ranks here, or 1 for a batch script.
func (l Launch) LocalTasks() int {
	if l.Step != nil {
		_, sn, _ := l.StepShare()
		return sn.Tasks
	}
	if l.BatchScript() {
		return 1
	}
	counts := l.Spec.Request.WithDefaults().TaskCountsIn(l.Alloc)
	if l.NodeIndex < 0 || l.NodeIndex >= len(counts) {
		return 0
	}
	return counts[l.NodeIndex]
}

// StepShare finds this node's StepNode in l.Step, and its index among the
// step's nodes.
func (l Launch) StepShare() (int, cluster.StepNode, bool) {
	name := l.NodeName
	if name == "" && l.NodeIndex >= 0 && l.NodeIndex < len(l.Alloc.Nodes) {
		name = l.Alloc.Nodes[l.NodeIndex].Node
	}
	for i, sn := range l.Step.Nodes {
		if sn.Node == name {
			return i, sn, true
		}
	}
	return -1, cluster.StepNode{}, false
}
