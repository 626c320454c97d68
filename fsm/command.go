package fsm

import (
	"errors"
	"fmt"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/shoal-sched/shoal/cluster"
)

// CmdType is the first byte of every log entry; the command table
// (table.go) numbers and names every type.
type CmdType uint8

// SubmitJob adds a job. RequestID deduplicates client retries: a second
// SubmitJob with a RequestID already seen returns the first job's ID and
// changes nothing.
type SubmitJob struct {
	RequestID string       `msgpack:"request_id"`
	Spec      cluster.Spec `msgpack:"spec"`
	Time      time.Time    `msgpack:"time"` // stamped by the leader
}

// CancelJob ends a live job as CANCELLED. The job's GPUs stay held until
// every node reports its tasks dead.
//
// Reason, when set, must be DependencyNeverSatisfied: the leader cancels
// a job whose dependency can never hold, and the FSM checks that it cannot.
type CancelJob struct {
	Job    cluster.JobID `msgpack:"job"`
	Time   time.Time     `msgpack:"time"`
	Reason string        `msgpack:"reason"`
}

// SetHold holds a pending job (Hold HoldUser or HoldAdmin: scontrol hold,
// by its owner or by root) or, with Hold empty, releases it.
type SetHold struct {
	Job  cluster.JobID `msgpack:"job"`
	Hold string        `msgpack:"hold"`
	Time time.Time     `msgpack:"time"`
}

// RequeueJob sends a running or ended job back to the queue (scontrol
// requeue): a running one's nodes stop its tasks and it pends again once
// every node has released; Hold, when set, pends it held (scontrol
// requeuehold).
//
// RequestID (protocol 6) deduplicates client retries as SubmitJob's does:
// a second RequeueJob with a RequestID already seen is answered as the
// first was (Duplicate) and does not requeue the job's next run.
type RequeueJob struct {
	Job       cluster.JobID `msgpack:"job"`
	Hold      string        `msgpack:"hold"`
	Time      time.Time     `msgpack:"time"`
	RequestID string        `msgpack:"request_id,omitempty"`
}

// UpsertNode records a node's announced resources and marks it up. Drain
// state is kept across upserts.
type UpsertNode struct {
	Node cluster.Node `msgpack:"node"`
	Time time.Time    `msgpack:"time"`
}

// NodeDown marks a node down after its lease expired: its unreleased
// allocations are released as lost and their live jobs end NODE_FAIL.
type NodeDown struct {
	Node string    `msgpack:"node"`
	Time time.Time `msgpack:"time"`
}

// NodeLeft marks a node whose agent stopped gracefully: it takes no new
// work at once (rather than after its lease), and whatever it still held
// is released as NodeDown releases it. Its next heartbeat brings it up.
type NodeLeft struct {
	Node string    `msgpack:"node"`
	Time time.Time `msgpack:"time"`
}

// Decision is one gang placement proposed by the leader.
type Decision struct {
	Job   cluster.JobID `msgpack:"job"`
	Nodes []Placement   `msgpack:"nodes"` // in rank order
	// Elastic starts an elastic job's allocation as elastic
	// (cluster.Allocation.Elastic): it may then grow (GrowJob) and shrink.
	// Protocol 4; the FSM refuses it for a job that is not elastic.
	Elastic bool `msgpack:"elastic,omitempty"`
}

// Placement is one node's part of a Decision: GPU and CPU positions and
// memory (MiB), as cluster.NodeAlloc records them. CPUs and MemMiB count
// only in a Consumable Allocate.
type Placement struct {
	Node   string `msgpack:"node"`
	GPUs   []int  `msgpack:"gpus"`
	CPUs   []int  `msgpack:"cpus,omitempty"`
	MemMiB uint64 `msgpack:"mem_mib,omitempty"`
	// Tasks, in a Consumable Allocate of a job with NTasks (not
	// elastic), is how many of its ranks the node runs,
	// as the leader laid them out from the CPUs free (slurm.Spread):
	// on every node of the decision or none, summing to NTasks. The node
	// then holds the CPUs and memory of those ranks (Request.CPUsFor)
	// and the FSM records them (cluster.NodeAlloc.Tasks). Protocol 5.
	Tasks int `msgpack:"tasks,omitempty"`
}

// Allocate starts pending jobs on the nodes chosen for them. The FSM checks
// every decision again and rejects, one by one, those that would
// double-book a GPU or name a job that is no longer pending.
type Allocate struct {
	Decisions []Decision `msgpack:"decisions"`
	Time      time.Time  `msgpack:"time"`
	// Consumable marks a leader that consumes CPUs and memory: each
	// placement must then name exactly the CPUs and memory the job takes
	// on its node, free there, and they are recorded. Without it (entries
	// from before CPUs and memory were consumable, replayed from a log)
	// only GPUs are checked and CPUs and memory are not recorded, so a
	// replay gives the state it gave then.
	Consumable bool `msgpack:"consumable,omitempty"`
}

// TaskStarted reports that a node started its tasks of a job incarnation.
type TaskStarted struct {
	Job         cluster.JobID `msgpack:"job"`
	Incarnation uint64        `msgpack:"incarnation"`
	Node        string        `msgpack:"node"`
	Time        time.Time     `msgpack:"time"`
	// Join is the node's entry the tasks ran under
	// (cluster.NodeAlloc.Join): 0 but for a node an elastic job took
	// back, whose reports of an earlier entry then stay with it.
	Join int `msgpack:"join,omitempty"`
}

// Exit causes carried by TaskExited.
const (
	CauseExit      = "exit"      // the tasks exited on their own
	CauseTimeout   = "timeout"   // killed at the time limit
	CauseCancelled = "cancelled" // killed because the job was cancelled or failed elsewhere
	CauseFenced    = "fenced"    // killed because the node lost its lease
	CauseLost      = "lost"      // the agent restarted and could not account for them
	CauseStartFail = "start"     // the tasks could not be started
	// CauseOOM: the kernel killed a task for going past its memory limit
	// (the job's cgroup); the job ends OUT_OF_MEMORY.
	CauseOOM = "oom"
)

// TaskExited reports that every task of a job incarnation on a node is
// dead. ExitCode is the node's first failing task's code, or 0.
type TaskExited struct {
	Job         cluster.JobID `msgpack:"job"`
	Incarnation uint64        `msgpack:"incarnation"`
	Node        string        `msgpack:"node"`
	ExitCode    int           `msgpack:"exit_code"`
	Cause       string        `msgpack:"cause"`
	Time        time.Time     `msgpack:"time"`
	// Usage is what the node's tasks used (nil: not counted); added
	// after the first release, absent in older entries.
	Usage *cluster.Usage `msgpack:"usage,omitempty"`
	// Join is the node's entry the tasks ran under
	// (cluster.NodeAlloc.Join): 0 but for a node an elastic job took
	// back, whose reports of an earlier entry then stay with it.
	Join int `msgpack:"join,omitempty"`
}

// RecordGPUUsage records what a job's GPUs on one node did, sampled by its
// agent and sent with the node's exit report; the leader proposes it
// after the TaskExited. It changes no job's state.
type RecordGPUUsage struct {
	Job         cluster.JobID    `msgpack:"job"`
	Incarnation uint64           `msgpack:"incarnation"`
	Node        string           `msgpack:"node"`
	Usage       cluster.GPUUsage `msgpack:"usage"`
	// Join is the node's entry the tasks ran under
	// (cluster.NodeAlloc.Join): 0 but for a node an elastic job took
	// back, whose reports of an earlier entry then stay with it.
	Join int `msgpack:"join,omitempty"`
}

// JobReason is one pending job's reason.
type JobReason struct {
	Job    cluster.JobID `msgpack:"job"`
	Reason string        `msgpack:"reason"`
}

// SetReasons records why pending jobs are still pending. The leader sends
// it only when a reason changed, so it costs nothing in a steady state.
type SetReasons struct {
	Reasons []JobReason `msgpack:"reasons"`
}

// MaxDrainReasonBytes bounds a drain reason.
const MaxDrainReasonBytes = 1024

// SetDrain drains a node (no new jobs land on it; running ones finish) or,
// with Drain false, resumes it. Drain state survives the node's upserts,
// restarts and going down and up.
type SetDrain struct {
	Node   string    `msgpack:"node"`
	Drain  bool      `msgpack:"drain"`
	Reason string    `msgpack:"reason"`
	Time   time.Time `msgpack:"time"`
}

// StartStep starts an srun step in a running job incarnation: the step's
// command runs as Spec.TasksPerNode ranks on each of the allocation's first
// Spec.Nodes nodes. The result's StepID names it.
//
// RequestID (protocol 6) deduplicates client retries as SubmitJob's does:
// a second StartStep with a RequestID already seen answers the first's
// step (Result.JobID, StepID, Duplicate) and changes nothing.
type StartStep struct {
	Job         cluster.JobID    `msgpack:"job"`
	Incarnation uint64           `msgpack:"incarnation"`
	Spec        cluster.StepSpec `msgpack:"spec"`
	Time        time.Time        `msgpack:"time"`
	RequestID   string           `msgpack:"request_id,omitempty"`
}

// StepExited reports that every task of a step on a node is dead.
type StepExited struct {
	Job         cluster.JobID `msgpack:"job"`
	Incarnation uint64        `msgpack:"incarnation"`
	Step        int           `msgpack:"step"`
	Node        string        `msgpack:"node"`
	ExitCode    int           `msgpack:"exit_code"`
	Cause       string        `msgpack:"cause"`
	Time        time.Time     `msgpack:"time"`
	// Usage is what the node's tasks used (nil: not counted); added
	// after the first release, absent in older entries.
	Usage *cluster.Usage `msgpack:"usage,omitempty"`
	// Join is the node's entry the tasks ran under
	// (cluster.NodeAlloc.Join): 0 but for a node an elastic job took
	// back, whose reports of an earlier entry then stay with it.
	Join int `msgpack:"join,omitempty"`
}

// CancelStep stops a running step (srun interrupted); its nodes stop its
// tasks and report them.
type CancelStep struct {
	Job  cluster.JobID `msgpack:"job"`
	Step int           `msgpack:"step"`
	Time time.Time     `msgpack:"time"`
}

// ErrEncode wraps a failure to encode a command (a programming error).
var ErrEncode = errors.New("encode command")

// Encode returns the log entry for a command: its type byte, then the
// msgpack body.
func Encode(t CmdType, body any) ([]byte, error) {
	b, err := msgpack.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrEncode, t, err)
	}
	out := make([]byte, 0, 1+len(b))
	out = append(out, byte(t))
	return append(out, b...), nil
}
