package fsm

import (
	"fmt"
	"slices"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/wire"
)

// Protocol versions. The protocol version is one integer that grows by one
// whenever a release adds a command type or a snapshot format: an agent
// that speaks protocol N applies every command type and restores every
// snapshot format introduced at N or before. Agents announce the version
// they speak over gossip, and the leader proposes a command type only
// once every raft server alive in gossip announces at least the version
// that introduced it (package agent), so an older replica never meets an
// entry it cannot apply during a rolling upgrade. If one does anyway (a
// server that was down during the check, a downgrade), Apply marks it
// diverged with a message that says to upgrade it, rather than skip the
// entry.
//
//	1  command types 1 to 19 (jobs, nodes, steps, holds, the queue policy,
//	   preemption, priorities); snapshot format 1
//	2  command types 20 to 26 (the security record, user tokens, the
//	   accounting archive)
//	3  command types 27 and 28 (UpdateJob: scontrol update JobId= of the
//	   time limit, node count, partition, QoS, dependency, name, comment,
//	   nice; RecordGPUUsage: a job's GPU usage on a node)
//	3  fields: srun --pty's terminal (Spec.Pty in SubmitJob and StartStep);
//	   --begin (Spec.Begin in SubmitJob); --deadline (Spec.Deadline in
//	   SubmitJob, and CancelJob's reason DeadLine, which ends such a job
//	   DEADLINE); --no-kill (Spec.NoKill in SubmitJob);
//	   a job's ranks laid out by -n and -m (Request.NTasks and
//	   Request.Distribution in SubmitJob, StepSpec.Distribution in
//	   StartStep), and --mincpus (Request.MinCPUs). An older replica
//	   would drop them, run the same ranks on every node and refuse the
//	   allocation that holds other CPUs than it computes.
//	3  fields: the queue policy's scheduler, starve_after and aging_half
//	   (Policy.Scheduler/StarveAfter/AgingHalf in SetPolicy). An older
//	   replica would drop them and, once leader, order the queue by
//	   multifactor priority where the others take it shortest service
//	   first. Fields: sbatch's and srun's --input file (Batch.Input in
//	   SubmitJob, StepSpec.Input in StartStep), which an older replica
//	   would drop, giving the tasks /dev/null; srun's -o/-e files
//	   (StepSpec.Output/Error in StartStep), which it would drop, sending
//	   the output to srun.
//	4  command types 29 and 30 (GrowJob: a running elastic job takes more
//	   nodes; ShrinkJob: it gives one up for a preempting job);
//	   field: Allocate's Decision.Elastic, which starts an elastic job's
//	   allocation elastic (cluster.Allocation.Elastic, with its Resizes),
//	   and a joining node's place (cluster.NodeAlloc.Slot, set by
//	   GrowJob: the smallest place no node of the job holds, from which
//	   its ranks follow); and UpdateJob's Nodes (NumNodes) on a running
//	   elastic job, which shrinks it (ShrinkTo) where an older replica
//	   refuses the update.
//	   An older replica would drop it and, where the others let such a
//	   job go on without a node it lost (NodeDown, NodeLeft, a fenced
//	   TaskExited), end or requeue it. The leader proposes Elastic only
//	   once every server speaks 4, so only protocol 4 states (and their
//	   snapshots) hold elastic allocations.
//	4  also a capability, with no command of its own: an agent at 4 can
//	   be a worker, out of the raft configuration, following its jobs
//	   from a server (leader.WorkersProtocol). The leader caps
//	   the raft replicas only once every live agent announces 4.
//	4  fields: srun's stdin relayed to the tasks (Spec.Stdin in SubmitJob
//	   and StartStep: --input=all, Slurm's default, or -i N). An older
//	   replica would drop it and start the tasks on /dev/null, leaving
//	   srun nothing to relay to.
//	4  fields: a job's ranks packed in blocks as Slurm's allocation packs
//	   them (Request.Pack in SubmitJob: -n 5 on 2 nodes runs 4 and 1). An
//	   older replica would drop it, lay the ranks out evenly (3 and 2)
//	   and refuse the allocation that holds other CPUs than it computes.
//	   srun --ntasks-per-gpu (StartStep.Spec.NTasksPerGPU), which an
//	   older replica would drop, running one task per node on every GPU.
//	5  fields: srun's --signal for a step (StartStep.Spec.Signal), which
//	   an older replica would drop: its record of the step would differ
//	   and its nodes would not signal the step's tasks before the time
//	   limit; and srun's --no-kill for a step (StartStep.Spec.NoKill),
//	   without which an elastic batch job's step is cancelled when it
//	   loses a node.
//	   --container, the OCI bundle a job's or a step's tasks
//	   run in (Spec.Container in SubmitJob, StepSpec.Container in
//	   StartStep). An older replica would drop it: its record would
//	   differ (and so its state hash), and its node would run the tasks
//	   on the host instead of in the container.
//	   command type 31 (ReportSwitch: a switch's own LLDP neighbours,
//	   from which a leaf's parent follows where no node announces one;
//	   snapshots hold them under "switches", which an older replica
//	   would drop, so only protocol 5 states have any).
//	   field: GrowJob.Rejoin, which lets an elastic job take back a node
//	   it lost or gave up in the same run once the node's tasks of it are
//	   known dead (its entry released): the node comes back as a new
//	   entry with the next cluster.NodeAlloc.Join, which its tasks and
//	   their reports carry (TaskStarted.Join, TaskExited.Join,
//	   RecordGPUUsage.Join; absent, 0, in every entry a node that never
//	   came back reports, so an older replica reads those the same). An
//	   older replica would drop Rejoin and refuse a node already in the
//	   allocation where the others grow the job. The leader offers such
//	   nodes only once every live agent speaks 5 (a node must know Join
//	   to run and report its new entry).
//	   field: Batch.Elastic in SubmitJob (sbatch -N MIN-MAX): the batch
//	   job's allocation is elastic (Spec.Elastic). An older replica would
//	   drop it and refuse the elastic allocation (Decision.Elastic) the
//	   others start it with. The leader drops it from a submit while a
//	   server speaks 4 (the job then runs at the size it starts with).
//	   fields: a step's tasks dealt over its job's CPUs as Slurm's srun
//	   deals them (StartStep.Spec.Dealt: StepSpec.Caps from the CPUs the
//	   job holds on the step's nodes, laid out by slurm.Deal in any
//	   distribution: srun -n5 -m cyclic in a -n5 -N2 job runs 0,2,3,4
//	   and 1). An older replica would drop it and lay the step out
//	   evenly (or, in a packed job in blocks, by slurm.BlockCounts).
//	   A job's ranks laid out when it starts from the CPUs its nodes have
//	   free, as Slurm sizes them (Allocate's Placement.Tasks, recorded as
//	   cluster.NodeAlloc.Tasks: -n 5 on 2 nodes runs 2 and 3 where the
//	   first has 2 CPUs free). An older replica would drop it, lay the
//	   ranks out by the request and refuse the CPUs the decision holds.
//	   fields: a step that holds its GPUs and CPUs, as Slurm 20.11+'s
//	   steps without --overlap (StartStep.Spec.Exclusive, with srun's
//	   --gpus, --gpus-per-node, --exact and -c as Spec.GPUs,
//	   GPUsPerNode, Exact and CPUsPerTask; the
//	   FSM records what it holds as cluster.StepNode.GPUs and CPUs and
//	   refuses it, ErrStepBusy, while other steps hold them). An older
//	   replica would drop them and start every step at once, sharing the
//	   allocation; the leader clears them while a server speaks 4.
//	6  fields: StartStep.RequestID, SignalJob.RequestID,
//	   RequeueJob.RequestID and UpdateJob.RequestID, a client's request
//	   id that makes srun's step, scancel --signal, scontrol requeue and
//	   scontrol update TimeLimit=+N (of one job) safe to send again after
//	   a leader change (as SubmitJob's): a second copy
//	   with an id already seen is answered as the first (its step) and
//	   changes nothing (the id is kept in the request id table,
//	   snapshots' "request_ids", with its kind and, for a step, the step
//	   and incarnation it started). An older replica would drop it and
//	   start a second step, record the signal again, requeue the job's
//	   next run or add the time again, where the others answer the first. The leader drops the
//	   id while a server speaks 5 or less (the write is then sent once,
//	   as before).
//	7  field: ArchiveJobs.ForgetRequests, which ages the request id
//	   table: an id is stamped (its "at" in snapshots) by the first such
//	   entry after it was recorded and forgotten by the first one
//	   cluster.RequestIDRetention after that (before it, the table kept
//	   every id for the cluster's life). An older replica would drop it
//	   and keep the ids: its state would differ, and it would answer a
//	   late copy of such a request as a duplicate where the others apply
//	   it. The leader sets it only once every raft server, alive or not,
//	   speaks 7 (agent's protocolGateEvery: the entry is the leader's
//	   own, with no user waiting). Snapshots carry the stamps as the ids'
//	   "at", which an older replica restoring one (a downgrade) drops: it
//	   would stamp those ids again, later than the others.
//	7  also a capability, with no command of its own: leaders give an
//	   array's elements request ids of their own (leader.ElementIDsProtocol),
//	   which a leader of 6 would drop from a copy sent again.
//
// Version numbers arrived after both sets had shipped: an agent that
// announces none was built before them and speaks ProtocolUnannounced,
// everything in this table at that time.
const (
	// ProtocolVersion is the protocol this build speaks: the highest
	// version in commands and snapshotFormats.
	ProtocolVersion = 7
	// ProtocolOldest is the lowest version an agent may announce. A
	// command type introduced at it needs no check.
	ProtocolOldest = 1
	// ProtocolUnannounced is the version taken of an agent whose gossip
	// metadata carries none (built before protocol versions existed).
	ProtocolUnannounced = 2
)

// CmdType is the first byte of every log entry. Types are append-only:
// never renumber or reuse one. A new type gets the next number, a new
// ProtocolVersion, and an entry in commands; the leader proposes it only
// once every server announces that version.
const (
	CmdSubmitJob       CmdType = 1
	CmdCancelJob       CmdType = 2
	CmdUpsertNode      CmdType = 3
	CmdNodeDown        CmdType = 4
	CmdAllocate        CmdType = 5
	CmdTaskStarted     CmdType = 6
	CmdTaskExited      CmdType = 7
	CmdSetReasons      CmdType = 8
	CmdSetDrain        CmdType = 9
	CmdNodeLeft        CmdType = 10
	CmdStartStep       CmdType = 11
	CmdStepExited      CmdType = 12
	CmdCancelStep      CmdType = 13
	CmdSignalJob       CmdType = 14
	CmdSetHold         CmdType = 15
	CmdRequeueJob      CmdType = 16
	CmdSetPolicy       CmdType = 17
	CmdPreemptJob      CmdType = 18
	CmdSetJobPriority  CmdType = 19
	CmdSetClusterCA    CmdType = 20
	CmdAddJoinToken    CmdType = 21
	CmdUseJoinToken    CmdType = 22
	CmdRevokeNode      CmdType = 23
	CmdSetGossipKeys   CmdType = 24
	CmdRevokeUserToken CmdType = 25
	CmdArchiveJobs     CmdType = 26
	CmdUpdateJob       CmdType = 27
	CmdRecordGPUUsage  CmdType = 28
	CmdGrowJob         CmdType = 29
	CmdShrinkJob       CmdType = 30
	CmdReportSwitch    CmdType = 31
)

// commands is the command table, indexed by type byte: each type's name,
// the protocol version that introduced it, and how an entry's body is
// decoded and applied. A type byte with no entry is unknown.
var commands = [...]command{
	CmdSubmitJob:      cmd("SubmitJob", 1, (*State).submit),
	CmdCancelJob:      cmd("CancelJob", 1, (*State).cancel),
	CmdUpsertNode:     cmd("UpsertNode", 1, (*State).upsertNode),
	CmdNodeDown:       cmd("NodeDown", 1, (*State).nodeDown),
	CmdAllocate:       cmd("Allocate", 1, (*State).allocate),
	CmdTaskStarted:    cmd("TaskStarted", 1, (*State).taskStarted),
	CmdTaskExited:     cmd("TaskExited", 1, (*State).taskExited),
	CmdSetReasons:     cmd("SetReasons", 1, (*State).setReasons),
	CmdSetDrain:       cmd("SetDrain", 1, (*State).setDrain),
	CmdNodeLeft:       cmd("NodeLeft", 1, (*State).nodeLeft),
	CmdStartStep:      cmd("StartStep", 1, (*State).startStep),
	CmdStepExited:     cmd("StepExited", 1, (*State).stepExited),
	CmdCancelStep:     cmd("CancelStep", 1, (*State).cancelStep),
	CmdSignalJob:      cmd("SignalJob", 1, (*State).signalJob),
	CmdSetHold:        cmd("SetHold", 1, (*State).setHold),
	CmdRequeueJob:     cmd("RequeueJob", 1, (*State).requeueJob),
	CmdSetPolicy:      cmd("SetPolicy", 1, (*State).setPolicy),
	CmdPreemptJob:     cmd("PreemptJob", 1, (*State).preemptJob),
	CmdSetJobPriority: cmd("SetJobPriority", 1, (*State).setJobPriority),

	CmdSetClusterCA:    cmd("SetClusterCA", 2, indexless((*State).setClusterCA)),
	CmdAddJoinToken:    cmd("AddJoinToken", 2, indexless((*State).addJoinToken)),
	CmdUseJoinToken:    cmd("UseJoinToken", 2, indexless((*State).useJoinToken)),
	CmdRevokeNode:      cmd("RevokeNode", 2, indexless((*State).revokeNode)),
	CmdSetGossipKeys:   cmd("SetGossipKeys", 2, indexless((*State).setGossipKeys)),
	CmdRevokeUserToken: cmd("RevokeUserToken", 2, indexless((*State).revokeUserToken)),
	CmdArchiveJobs:     cmd("ArchiveJobs", 2, indexless((*State).archiveJobs)),

	CmdUpdateJob:      cmd("UpdateJob", 3, (*State).updateJob),
	CmdRecordGPUUsage: cmd("RecordGPUUsage", 3, (*State).recordGPUUsage),

	CmdGrowJob:   cmd("GrowJob", 4, (*State).growJob),
	CmdShrinkJob: cmd("ShrinkJob", 4, (*State).shrinkJob),

	CmdReportSwitch: cmd("ReportSwitch", 5, indexless((*State).reportSwitch)),
}

// fields is the field table: fields a protocol version after their
// command type's introduced, which an older replica would decode away
// (msgpack skips unknown keys) and so apply differently. An entry whose
// body uses one needs the field's version (Needs), checked as a new
// type's is.
var fields = []field{
	// An older replica would drop it and refuse the job's elastic
	// allocation.
	{name: "SubmitJob.Spec.Batch.Elastic", since: 5, uses: when(func(c SubmitJob) bool {
		return c.Spec.Batch != nil && c.Spec.Batch.Elastic
	})},
	// An older replica would drop Rejoin and refuse to grow the job by
	// a node it had, where the others grow it.
	{name: "GrowJob.Rejoin", since: 5, uses: when(func(c GrowJob) bool { return c.Rejoin })},
	// An older replica would drop Elastic and, once the job loses a
	// node, end or requeue it where the others let it go on.
	{name: "Allocate.Decisions.Elastic", since: 4, uses: when(func(c Allocate) bool {
		return slices.ContainsFunc(c.Decisions, func(d Decision) bool { return d.Elastic })
	})},
	{name: "SubmitJob.Spec.Request.NTasks/Distribution/MinCPUs", since: 3, uses: when(func(c SubmitJob) bool {
		r := c.Spec.Request
		return r.NTasks != 0 || r.Distribution != "" || r.MinCPUs != 0
	})},
	{name: "StartStep.Spec.Distribution", since: 3, uses: when(func(c StartStep) bool { return c.Spec.Distribution != "" })},
	// An older replica would drop Begin and start the job at once.
	{name: "SubmitJob.Spec.Begin", since: 3, uses: when(func(c SubmitJob) bool { return !c.Spec.Begin.IsZero() })},
	// An older replica would drop Deadline and run the job past it, and
	// refuse the CancelJob that ends it DEADLINE.
	{name: "SubmitJob.Spec.Deadline, CancelJob.Reason DeadLine", since: 3, uses: func(body any) bool {
		switch c := body.(type) {
		case SubmitJob:
			return !c.Spec.Deadline.IsZero()
		case CancelJob:
			return c.Reason == cluster.ReasonDeadline
		}
		return false
	}},
	// An older replica would drop NoKill and end the job when it loses a
	// node, where the others keep it running.
	{name: "SubmitJob.Spec.NoKill", since: 3, uses: when(func(c SubmitJob) bool { return c.Spec.NoKill })},
	// An older replica would drop Input and run the batch script, or
	// the step's tasks, on /dev/null instead of the file asked for.
	{name: "SubmitJob.Spec.Batch.Input, StartStep.Spec.Input", since: 3, uses: jobOrStep(
		func(s cluster.Spec) bool { return s.Batch != nil && s.Batch.Input != "" },
		func(s cluster.StepSpec) bool { return s.Input != "" })},
	// An older replica would drop Output and Error and send the step's
	// output to srun instead of to the files asked for.
	{name: "StartStep.Spec.Output, StartStep.Spec.Error", since: 3, uses: when(func(c StartStep) bool {
		return c.Spec.Output != "" || c.Spec.Error != ""
	})},
	// An older replica would drop Pty and its node would start rank 0
	// with no terminal for srun --pty to attach to.
	{name: "SubmitJob.Spec.Pty, StartStep.Spec.Pty", since: 3, uses: jobOrStep(
		func(s cluster.Spec) bool { return s.Pty },
		func(s cluster.StepSpec) bool { return s.Pty })},
	// An older replica would drop Stdin and start the tasks on
	// /dev/null: srun would find no stdin to relay to.
	{name: "SubmitJob.Spec.Stdin, StartStep.Spec.Stdin", since: 4, uses: jobOrStep(
		func(s cluster.Spec) bool { return s.Stdin != "" },
		func(s cluster.StepSpec) bool { return s.Stdin != "" })},
	// An older replica would drop NTasksPerGPU: it would run one task
	// per node, each seeing every GPU of its node.
	{name: "StartStep.Spec.NTasksPerGPU", since: 4, uses: when(func(c StartStep) bool { return c.Spec.NTasksPerGPU != 0 })},
	// An older replica would drop a step's Signal and NoKill: its record
	// of the step would differ, its nodes would not send the signal, and
	// it would cancel an elastic batch job's step that loses a node where
	// the others run it on.
	{name: "StartStep.Spec.Signal, StartStep.Spec.NoKill", since: 5, uses: when(func(c StartStep) bool {
		return c.Spec.Signal != nil || c.Spec.NoKill
	})},
	// An older replica would drop Container and run the tasks on the
	// host, outside the bundle asked for.
	{name: "SubmitJob.Spec.Container, StartStep.Spec.Container", since: 5, uses: jobOrStep(
		func(s cluster.Spec) bool { return s.Container != "" },
		func(s cluster.StepSpec) bool { return s.Container != "" })},
	// An older replica would drop Tasks, lay the ranks out by the
	// request alone and refuse the CPUs the decision holds.
	{name: "Allocate.Decisions.Nodes.Tasks", since: 5, uses: when(func(c Allocate) bool {
		for _, d := range c.Decisions {
			for _, p := range d.Nodes {
				if p.Tasks != 0 {
					return true
				}
			}
		}
		return false
	})},
	// An older replica would drop RequestID and start a second step
	// where the others answer the first's.
	{name: "StartStep.RequestID", since: 6, uses: when(func(c StartStep) bool { return c.RequestID != "" })},
	// An older replica would drop RequestID and record the signal again
	// (its nodes deliver it twice) where the others answer the first.
	{name: "SignalJob.RequestID", since: 6, uses: when(func(c SignalJob) bool { return c.RequestID != "" })},
	// An older replica would drop RequestID and requeue the job's next
	// run again where the others answer the first.
	{name: "RequeueJob.RequestID", since: 6, uses: when(func(c RequeueJob) bool { return c.RequestID != "" })},
	// An older replica would drop RequestID and add a relative time
	// limit again where the others answer the first.
	{name: "UpdateJob.RequestID", since: 6, uses: when(func(c UpdateJob) bool { return c.RequestID != "" })},
	// An older replica would drop ForgetRequests and keep ids the others
	// forget.
	{name: "ArchiveJobs.ForgetRequests", since: 7, uses: when(func(c ArchiveJobs) bool { return c.ForgetRequests })},
	// An older replica would drop Dealt and lay the step out evenly.
	{name: "StartStep.Spec.Dealt", since: 5, uses: when(func(c StartStep) bool { return c.Spec.Dealt })},
	// An older replica would drop Exclusive (and GPUs, GPUsPerNode,
	// Exact, CPUsPerTask): it would start the step beside the others where the
	// others make it wait, and its record of the step would hold nothing.
	{name: "StartStep.Spec.Exclusive/GPUs/GPUsPerNode/Exact/CPUsPerTask", since: 5, uses: when(func(c StartStep) bool {
		s := c.Spec
		return s.Exclusive || s.GPUs != 0 || s.GPUsPerNode != 0 || s.Exact || s.CPUsPerTask != 0
	})},
	// An older replica would drop Pack and lay the ranks out evenly.
	{name: "SubmitJob.Spec.Request.Pack", since: 4, uses: when(func(c SubmitJob) bool { return c.Spec.Request.Pack })},
	// An older replica would drop the queue order and its tunables: its
	// policy (and snapshot) would differ, and as leader it would order
	// the queue by multifactor priority.
	{name: "SetPolicy.Policy.Scheduler/StarveAfter/AgingHalf", since: 3, uses: when(func(c SetPolicy) bool {
		p := c.Policy
		return p.Scheduler != "" || p.StarveAfter != 0 || p.AgingHalf != 0
	})},
}

// when builds a field row's uses for one command type: body is a C and
// sets the field as f says.
func when[C any](f func(C) bool) func(body any) bool {
	return func(body any) bool {
		c, ok := body.(C)
		return ok && f(c)
	}
}

// jobOrStep builds a field row's uses for a field that both a SubmitJob's
// spec and a StartStep's spec carry: job and step say whether each sets it.
func jobOrStep(job func(cluster.Spec) bool, step func(cluster.StepSpec) bool) func(body any) bool {
	return func(body any) bool {
		switch c := body.(type) {
		case SubmitJob:
			return job(c.Spec)
		case StartStep:
			return step(c.Spec)
		}
		return false
	}
}

// field is one row of the field table.
type field struct {
	name  string
	since int
	// uses reports whether a command body (the value Encode takes) sets
	// the field.
	uses func(body any) bool
}

// Needs is the protocol version an entry of type t with body needs: the
// type's (0 for an unknown type), or a field's where body uses one
// introduced later.
func Needs(t CmdType, body any) int {
	need := t.Since()
	if need == 0 {
		return 0
	}
	for _, f := range fields {
		if f.since > need && f.uses(body) {
			need = f.since
		}
	}
	return need
}

// command is one row of the command table.
type command struct {
	name string
	// since is the protocol version that introduced the type.
	since int
	// apply decodes body and applies it at index; an error means the body
	// did not decode (the replica diverges), a refusal is in Result.Err.
	apply func(s *State, index uint64, body []byte) (Result, error)
}

// cmd builds a table row whose body decodes into a C and is applied by
// apply. The decode is the same for every type: wire.Decode, which refuses
// length headers larger than the bytes present.
func cmd[C any](name string, since int, apply func(*State, uint64, C) Result) command {
	return command{name: name, since: since, apply: func(s *State, index uint64, body []byte) (Result, error) {
		var c C
		if err := wire.Decode(body, &c); err != nil {
			return Result{}, err
		}
		return apply(s, index, c), nil
	}}
}

// indexless adapts an apply method that does not need the entry's index.
func indexless[C any](f func(*State, C) Result) func(*State, uint64, C) Result {
	return func(s *State, _ uint64, c C) Result { return f(s, c) }
}

// lookup returns t's row, or false for a type this build does not know.
func lookup(t CmdType) (command, bool) {
	if int(t) >= len(commands) || commands[t].apply == nil {
		return command{}, false
	}
	return commands[t], true
}

// Known reports whether this build can apply entries of type t.
func (t CmdType) Known() bool {
	_, ok := lookup(t)
	return ok
}

// Since returns the protocol version that introduced t, or 0 for a type
// this build does not know.
func (t CmdType) Since() int {
	c, _ := lookup(t)
	return c.since
}

func (t CmdType) String() string {
	if c, ok := lookup(t); ok {
		return c.name
	}
	return fmt.Sprintf("CmdType(%d)", uint8(t))
}
