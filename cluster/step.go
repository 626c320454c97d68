package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/slurm"
)

// Batch is a batch job's script, as sbatch takes it: it runs once, on the
// allocation's first node, and launches steps (srun) on the allocation.
type Batch struct {
	// Script is the whole script; it must start with "#!".
	Script string   `msgpack:"script" json:"script"`
	Args   []string `msgpack:"args" json:"args,omitempty"`
	// Output and Error are sbatch's --output/--error filename patterns
	// (%j %x %u %N %A %a %%), relative to the job's WorkDir unless
	// absolute; empty Output means slurm-%j.out, empty Error means "with
	// Output". OpenMode is "truncate" (default) or "append".
	Output   string `msgpack:"output" json:"output,omitempty"`
	Error    string `msgpack:"error" json:"error,omitempty"`
	OpenMode string `msgpack:"open_mode" json:"open_mode,omitempty"`
	// Input is sbatch's --input filename pattern, the script's stdin,
	// relative to WorkDir unless absolute; empty or "none" is /dev/null.
	Input string `msgpack:"input,omitempty" json:"input,omitempty"`
	// Elastic makes a batch job of -N MIN-MAX elastic (Spec.Elastic):
	// sbatch sets it; salloc's allocation, held by a script of its own,
	// stays fixed. Protocol 5.
	Elastic bool `msgpack:"elastic,omitempty" json:"elastic,omitempty"`
}

// Bounds of batch jobs and steps.
const (
	// MaxScriptBytes bounds a batch script (it travels in the raft log;
	// Slurm's default max_script_size is 4 MB).
	MaxScriptBytes = 1 << 20
	// MaxStepsPerJob bounds the steps one incarnation of a job may start.
	MaxStepsPerJob = 10000
)

// Validate checks a batch script and names the first bad field.
func (b *Batch) Validate() error {
	switch {
	case len(b.Script) == 0:
		return fmt.Errorf("batch script: empty")
	case len(b.Script) > MaxScriptBytes:
		return fmt.Errorf("batch script: %d bytes, want at most %d", len(b.Script), MaxScriptBytes)
	case len(b.Script) < 2 || b.Script[:2] != "#!":
		return fmt.Errorf("batch script: the first line must start with #! followed by the path to an interpreter")
	case len(b.Args) > MaxCommandArgs:
		return fmt.Errorf("batch args: %d, want at most %d", len(b.Args), MaxCommandArgs)
	case b.OpenMode != "" && b.OpenMode != "truncate" && b.OpenMode != "append":
		return fmt.Errorf("open_mode %q: want truncate or append", b.OpenMode)
	}
	return nil
}

// StepSpec is what srun asks for inside an allocation: a command run as
// TasksPerNode ranks on each of the allocation's first Nodes nodes.
type StepSpec struct {
	Name    string   `msgpack:"name" json:"name"`
	Command []string `msgpack:"command" json:"command"`
	// Env holds extra KEY=VALUE pairs (srun's --export), applied before
	// the step's environment contract.
	Env     []string `msgpack:"env" json:"env,omitempty"`
	WorkDir string   `msgpack:"work_dir" json:"work_dir"`
	// Nodes is how many of the allocation's nodes, in rank order, run the
	// step (0 means all of them).
	Nodes int `msgpack:"nodes" json:"nodes"`
	// TasksPerNode is the ranks per node (0 means the job's).
	TasksPerNode int `msgpack:"tasks_per_node" json:"tasks_per_node"`
	// GPUsPerTask splits each node's GPUs among its ranks (0: every rank
	// sees all of the node's GPUs).
	GPUsPerTask int `msgpack:"gpus_per_task" json:"gpus_per_task"`
	// NodeList, when set, names the allocation's nodes the step runs on
	// (srun -w inside a job, as MPI's mpirun launches its daemons), in
	// the allocation's rank order; Nodes is then their count.
	NodeList []string `msgpack:"node_list,omitempty" json:"node_list,omitempty"`
	// NTasks, when set, is the step's task count (srun -n) spread over its
	// nodes in blocks, as Slurm's default distribution: the first
	// NTasks%Nodes nodes run one task more. TasksPerNode is then the most
	// any node runs; Nodes shrinks to NTasks when larger.
	NTasks int `msgpack:"ntasks,omitempty" json:"ntasks,omitempty"`
	// Distribution is srun's -m as slurm.Distribution.String writes it
	// ("": Slurm's default): which of the step's ranks runs on which of
	// its nodes (slurm.Layout). It needs NTasks.
	Distribution string `msgpack:"distribution,omitempty" json:"distribution,omitempty"`
	// Pty runs the step's rank 0 on a terminal that srun --pty attaches
	// to; the other ranks have no input, as in Slurm.
	Pty bool `msgpack:"pty,omitempty" json:"pty,omitempty"`
	// Input is srun's --input filename pattern (%t %n %N and the others
	// of slurm.ExpandOutputPattern) each task reads its stdin from, on
	// its node, relative to WorkDir unless absolute; "none" or empty is
	// /dev/null.
	Input string `msgpack:"input,omitempty" json:"input,omitempty"`
	// Stdin relays srun's own stdin to the step's tasks: "" for none,
	// StdinAll for every task (--input=all, Slurm's default), or a
	// task's number (-i N); see StdinTakes. Tasks that take it read it
	// instead of Input.
	Stdin string `msgpack:"stdin,omitempty" json:"stdin,omitempty"`
	// Output and Error are srun's -o/--output and -e/--error filename
	// patterns (as Input's): each task's stdout and stderr go to the file
	// its pattern names on its node, instead of to srun; tasks whose
	// patterns name one file share it. Error empty with Output set sends
	// stderr to Output's file, as Slurm's; "none" is /dev/null.
	Output string `msgpack:"output,omitempty" json:"output,omitempty"`
	Error  string `msgpack:"error,omitempty" json:"error,omitempty"`
	// Caps are how many tasks each of the step's nodes holds. With Dealt,
	// the job's CPUs there over its CPUs per task: the step's NTasks are
	// dealt over them by its distribution as Slurm's srun deals them
	// (slurm.Deal: srun -n 5 in a -n5 -N2 job runs 4 and 1, as the job;
	// -m cyclic 0,2,3,4 and 1). Without (steps started before protocol
	// 5), only in a step of a packed job (Request.Pack) in blocks: how
	// many of the job's ranks each node runs, filled by
	// slurm.BlockCounts. The FSM sets it when it starts the step; nil:
	// even blocks.
	Caps []int `msgpack:"caps,omitempty" json:"caps,omitempty"`
	// Dealt asks the FSM for Caps from the job's CPUs, dealt by
	// slurm.Deal (protocol 5; the leader sets it once every server
	// speaks 5).
	Dealt bool `msgpack:"dealt,omitempty" json:"dealt,omitempty"`
	// NTasksPerGPU is srun's --ntasks-per-gpu: without NTasks, that many
	// tasks for each of the job's GPUs on the step's nodes; each task
	// sees one GPU, NTasksPerGPU tasks to a GPU in local order (Slurm's
	// --gpu-bind=single:N).
	NTasksPerGPU int `msgpack:"ntasks_per_gpu,omitempty" json:"ntasks_per_gpu,omitempty"`
	// Signal is srun's --signal=[R:]SIG[@TIME] for the step: its tasks
	// get SIG Before the job's time limit (counted from the job's start),
	// at once when the step starts later than that; for its tasks it
	// takes the place of the job's --signal. BatchOnly is never set (a
	// step has no batch shell).
	Signal *JobSignal `msgpack:"signal,omitempty" json:"signal,omitempty"`
	// NoKill is srun's --no-kill for the step: when a node of the step is
	// lost, its tasks on the other nodes run on. srun ends such a step
	// itself otherwise; an elastic batch job's step the state cancels.
	NoKill bool `msgpack:"no_kill,omitempty" json:"no_kill,omitempty"`
	// Container is srun's --container: the absolute path of the OCI
	// bundle the step's tasks run in (see Spec.Container); empty: none,
	// the tasks run on the node as any step's.
	Container string `msgpack:"container,omitempty" json:"container,omitempty"`
	// Exclusive is Slurm 20.11+'s default for a step (srun without
	// --overlap): while its tasks run on a node the step holds GPUs and
	// CPUs of the job's there for itself (StepNode.GPUs and CPUs), and
	// it starts only once they are free of the job's other Exclusive
	// steps. Protocol 5: the leader clears it while a server speaks 4,
	// and the step then shares the allocation, as with --overlap.
	Exclusive bool `msgpack:"exclusive,omitempty" json:"exclusive,omitempty"`
	// GPUs is srun's --gpus for an Exclusive step: its GPUs in all,
	// spread over its nodes (the first nodes one more where they do not
	// divide). 0: GPUsPerTask's, or else every GPU the job holds on
	// each of its nodes, as Slurm gives a step that asks for none.
	GPUs int `msgpack:"gpus,omitempty" json:"gpus,omitempty"`
	// GPUsPerNode is srun's --gpus-per-node or --gres=gpu:N for an
	// Exclusive step: its GPUs on each of its nodes (0: as GPUs says).
	GPUsPerNode int `msgpack:"gpus_per_node,omitempty" json:"gpus_per_node,omitempty"`
	// Exact is srun's --exact (or -c, which implies it): an Exclusive
	// step holds only the CPUs its tasks ask for (CPUsPerTask each) on
	// its nodes, not all the job's CPUs there.
	Exact bool `msgpack:"exact,omitempty" json:"exact,omitempty"`
	// CPUsPerTask is srun's -c for the step (0: the job's).
	CPUsPerTask int `msgpack:"cpus_per_task,omitempty" json:"cpus_per_task,omitempty"`
}

// InBlocks says the step's ranks run in blocks (-m block, or the
// default).
func (sp StepSpec) InBlocks() bool {
	d := sp.Dist()
	return d.Kind == "" || d.Kind == slurm.DistBlock
}

// Counts is how many tasks each of the step's nodes runs, for a step
// with NTasks (its defaults filled in).
func (sp StepSpec) Counts() []int {
	if len(sp.Caps) == sp.Nodes && sp.Nodes > 0 {
		if sp.Dealt {
			return slurm.DealCounts(sp.NTasks, sp.Caps, sp.Dist())
		}
		return slurm.BlockCounts(sp.NTasks, sp.Caps)
	}
	return slurm.LayoutCounts(sp.NTasks, sp.Nodes, sp.Dist())
}

// dealt is step node i's ranks in a Dealt step with Caps, or nil.
func (sp StepSpec) dealt(i int) []int {
	if !sp.Dealt || len(sp.Caps) != sp.Nodes || i < 0 || i >= sp.Nodes {
		return nil
	}
	return slurm.Deal(sp.NTasks, sp.Caps, sp.Dist())[i]
}

// capsFirst is, in a step with Caps, the global rank of step node i's
// first task: the ranks run in blocks.
func (sp StepSpec) capsFirst(counts []int, i int) int {
	first := 0
	for _, c := range counts[:min(max(i, 0), len(counts))] {
		first += c
	}
	return first
}

// Tasks returns how many tasks step node i of a step spec with its
// defaults filled in runs, and the global rank of its first.
func (sp StepSpec) Tasks(i int) (tasks, firstRank int) {
	if sp.NTasks == 0 || sp.Nodes == 0 {
		return sp.TasksPerNode, i * sp.TasksPerNode
	}
	d := sp.Dist()
	counts := sp.Counts()
	if i < 0 || i >= len(counts) || counts[i] == 0 {
		return 0, 0
	}
	if ranks := sp.dealt(i); len(ranks) > 0 {
		return counts[i], ranks[0]
	}
	if len(sp.Caps) > 0 {
		return counts[i], sp.capsFirst(counts, i)
	}
	return counts[i], slurm.RankAt(sp.NTasks, sp.Nodes, d, i, 0)
}

// Dist is the step's Distribution, parsed ("" or a bad one: the default).
func (sp StepSpec) Dist() slurm.Distribution {
	d, _ := parseDist(sp.Distribution)
	return d
}

// RankAt is the global rank of local task local on step node i.
func (sp StepSpec) RankAt(i, local int) int {
	if sp.NTasks == 0 || sp.Nodes == 0 {
		return i*sp.TasksPerNode + local
	}
	if ranks := sp.dealt(i); local >= 0 && local < len(ranks) {
		return ranks[local]
	}
	if len(sp.Caps) == sp.Nodes {
		return sp.capsFirst(sp.Counts(), i) + local
	}
	return slurm.RankAt(sp.NTasks, sp.Nodes, sp.Dist(), i, local)
}

// StepState is the state of a step.
type StepState string

const (
	StepRunning   StepState = "RUNNING"
	StepCompleted StepState = "COMPLETED"
	StepFailed    StepState = "FAILED"
	StepCancelled StepState = "CANCELLED"
	// StepOutOfMemory: the kernel killed a task of the step for the
	// job's memory limit on some node (Slurm's OUT_OF_MEMORY).
	StepOutOfMemory StepState = "OUT_OF_MEMORY"
)

// StepNode is one node's share of a step.
type StepNode struct {
	Node string `msgpack:"node" json:"node"`
	// FirstRank is the global rank (SLURM_PROCID) of the node's first task.
	FirstRank int       `msgpack:"first_rank" json:"first_rank"`
	Tasks     int       `msgpack:"tasks" json:"tasks"`
	State     TaskState `msgpack:"state" json:"state"`
	ExitCode  int       `msgpack:"exit_code" json:"exit_code"`
	// Usage is what the node's tasks of the step used, reported with
	// their exit; nil until then, or when the node could not count it.
	Usage *Usage `msgpack:"usage,omitempty" json:"usage,omitempty"`
	// OOM says the node's tasks ended with an OOM kill (cause "oom").
	OOM bool `msgpack:"oom,omitempty" json:"oom,omitempty"`
	// GPUs and CPUs are what an Exclusive step holds on the node while
	// its tasks there are live: GPU indices from the job's
	// NodeAlloc.GPUs and CPU positions from its NodeAlloc.CPUs, in
	// the job's order, which no other live Exclusive step of the job holds
	// (the FSM sets and checks them). Empty for a shared step.
	GPUs []int `msgpack:"gpus,omitempty" json:"gpus,omitempty"`
	CPUs []int `msgpack:"cpus,omitempty" json:"cpus,omitempty"`
}

// Step is one srun inside a job incarnation. IDs count from 0 in each
// incarnation, as Slurm's step ids do in each run of a job.
type Step struct {
	ID          int        `msgpack:"id" json:"id"`
	Incarnation uint64     `msgpack:"incarnation" json:"incarnation"`
	Spec        StepSpec   `msgpack:"spec" json:"spec"`
	State       StepState  `msgpack:"state" json:"state"`
	Nodes       []StepNode `msgpack:"nodes" json:"nodes"`
	// ExitCode is the step's worst task exit code, as srun returns it.
	ExitCode  int       `msgpack:"exit_code" json:"exit_code"`
	StartTime time.Time `msgpack:"start_time" json:"start_time"`
	EndTime   time.Time `msgpack:"end_time" json:"end_time"`
}

// BatchInput is the file a batch script's stdin reads on node: sbatch's
// --input pattern, expanded, relative to the job's WorkDir; /dev/null
// when none was given (as Slurm's sbatch). A job that is not a batch job
// has none ("").
func (j *Job) BatchInput(node string) string {
	if j.Spec.Batch == nil {
		return ""
	}
	in := j.Spec.Batch.Input
	if in == "" || strings.EqualFold(in, "none") {
		return os.DevNull
	}
	p := slurm.ExpandOutputPattern(in, j.batchFields(node))
	if !filepath.IsAbs(p) {
		p = filepath.Join(j.Spec.WorkDir, p)
	}
	return p
}

// batchFields are the pattern fields of a batch script running on node.
func (j *Job) batchFields(node string) slurm.PatternFields {
	f := slurm.PatternFields{JobID: uint64(j.ID), StepID: "batch", User: j.Spec.User,
		JobName: j.Spec.Name, NodeName: node}
	if j.Array != nil {
		f.IsArray, f.ArrayJobID, f.ArrayTaskID = true, uint64(j.Array.JobID), j.Array.TaskID
	}
	return f
}

// BatchOutput is where a batch script's stdout and stderr go when it runs
// on node: sbatch's --output/--error patterns, expanded, relative to the
// job's WorkDir (default slurm-%j.out; stderr with stdout unless --error
// is given); "none" is /dev/null. A job that is not a batch job has none.
func (j *Job) BatchOutput(node string) (stdout, stderr string) {
	if j.Spec.Batch == nil {
		return "", ""
	}
	f := j.batchFields(node)
	path := func(pattern string) string {
		if pattern == "none" {
			return os.DevNull
		}
		p := slurm.ExpandOutputPattern(pattern, f)
		if !filepath.IsAbs(p) {
			p = filepath.Join(j.Spec.WorkDir, p)
		}
		return p
	}
	out := j.Spec.Batch.Output
	if out == "" {
		out = slurm.DefaultOutput(j.Array != nil)
	}
	stdout = path(out)
	stderr = stdout
	if j.Spec.Batch.Error != "" {
		stderr = path(j.Spec.Batch.Error)
	}
	return stdout, stderr
}
