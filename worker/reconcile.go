package worker

import (
	"slices"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
	"github.com/shoal-sched/shoal/fsm"
)

// Input is what Reconcile decides from.
type Input struct {
	// Node is this node's name.
	Node string
	// Jobs are the replicated jobs (a consistent view).
	Jobs []*cluster.Job
	// Running are the tasks the executor runs here.
	Running []task.Key
	// PendingExits are the tasks whose exit is recorded here and not yet
	// acknowledged by the leader.
	PendingExits []task.Key
	// CanStart says the lease lets this node start tasks (MayStart).
	CanStart bool
}

// Ref names one run (incarnation) of a job on this node: Join is the
// node's entry in it (cluster.NodeAlloc.Join), 0 but on a node an elastic
// job lost and took back.
type Ref struct {
	Job         cluster.JobID
	Incarnation uint64
	Join        int
}

// Start is one task to start: job Job's own task (Step nil) or its step
// Step's tasks, on its allocation's node NodeIndex.
type Start struct {
	Job       *cluster.Job
	NodeIndex int
	Step      *cluster.Step
}

// Key is the executor's key of the task s starts.
func (s Start) Key() task.Key {
	k := task.Key{Job: s.Job.ID, Incarnation: s.Job.Incarnation, Step: task.NoStep, Join: s.Job.Alloc.Nodes[s.NodeIndex].Join}
	if s.Step != nil {
		k.Step = s.Step.ID
	}
	return k
}

// Plan is what Reconcile decided, in the order to act on it.
type Plan struct {
	// Stop are running tasks no longer wanted (the job or step ended, was
	// cancelled, or moved to another incarnation).
	Stop []task.Key
	// Start are tasks to start. A job's own task started without error
	// is then reported started.
	Start []Start
	// Started are runs that hold this node and whose start the leader
	// has not recorded: the task runs, or this node only holds GPUs for a
	// batch job's steps.
	Started []Ref
	// Release are runs that ended and hold this node's resources with no
	// local task left: the leader may free them (a duplicate is harmless).
	Release []Ref
}

// Reconcile compares what the replicated state wants of this node with
// what runs here. It is pure: the same input always gives the same plan.
func Reconcile(in Input) Plan {
	running := make(map[task.Key]bool, len(in.Running))
	// busy counts, per run, the local keys (its own task and its steps)
	// still running or with an exit not yet reported: the node's
	// resources may be released only once none is left (DESIGN invariant
	// 1).
	busy := map[task.Key]int{}
	for _, k := range in.Running {
		running[k] = true
		busy[task.Key{Job: k.Job, Incarnation: k.Incarnation, Step: task.NoStep, Join: k.Join}]++
	}
	pendingExit := make(map[task.Key]bool, len(in.PendingExits))
	for _, k := range in.PendingExits {
		pendingExit[k] = true
		busy[task.Key{Job: k.Job, Incarnation: k.Incarnation, Step: task.NoStep, Join: k.Join}]++
	}
	wanted := map[task.Key]bool{}

	var p Plan
	for _, j := range in.Jobs {
		i := j.Alloc.Find(in.Node)
		if i < 0 {
			continue
		}
		na := j.Alloc.Nodes[i]
		if na.Released {
			continue
		}
		// The node's latest entry (Find): an elastic job that lost this
		// node and took it back runs it under a new Join, and what is
		// left here of the earlier entry (its exit, not yet reported)
		// keeps its own key.
		key := task.Key{Job: j.ID, Incarnation: j.Incarnation, Step: task.NoStep, Join: na.Join}
		ref := Ref{Job: j.ID, Incarnation: j.Incarnation, Join: na.Join}
		// A batch job's own task is its script, on the first node only; the
		// other nodes hold their resources for its steps.
		ownTask := j.Spec.Batch == nil || i == 0
		switch {
		case j.State == cluster.JobRunning && !na.Removed:
			wanted[key] = true
			switch {
			case ownTask && !running[key] && !pendingExit[key]:
				if in.CanStart {
					p.Start = append(p.Start, Start{Job: j, NodeIndex: i})
				}
			case na.State == cluster.TaskAssigned && (running[key] || !ownTask && in.CanStart):
				p.Started = append(p.Started, ref)
			}
			p.Start = append(p.Start, steps(in, j, i, running, pendingExit, wanted)...)
		case busy[key] == 0:
			// The job ended (cancelled, failed elsewhere), is being
			// requeued or gave this node up (an elastic job shrunk), and
			// holds resources here that no local task uses (perhaps it
			// never started here).
			p.Release = append(p.Release, ref)
		}
	}
	for _, k := range in.Running {
		if !wanted[k] {
			p.Stop = append(p.Stop, k)
		}
	}
	return p
}

// steps are the tasks of job j's running steps to start on this node (its
// allocation's node i); every step that still has a share here is marked
// wanted, and one that ended or was cancelled is not, so its tasks stop.
func steps(in Input, j *cluster.Job, i int, running, pendingExit, wanted map[task.Key]bool) []Start {
	var out []Start
	for si := range j.Steps {
		st := &j.Steps[si]
		if st.State != cluster.StepRunning || st.Incarnation != j.Incarnation {
			continue
		}
		k := slices.IndexFunc(st.Nodes, func(n cluster.StepNode) bool { return n.Node == in.Node })
		if k < 0 || st.Nodes[k].State == cluster.TaskExited || st.Nodes[k].State == cluster.TaskLost {
			continue
		}
		key := task.Key{Job: j.ID, Incarnation: j.Incarnation, Step: st.ID, Join: j.Alloc.Nodes[i].Join}
		wanted[key] = true
		if running[key] || pendingExit[key] || !in.CanStart {
			continue
		}
		out = append(out, Start{Job: j, NodeIndex: i, Step: st})
	}
	return out
}

// Exits chooses, among the exits recorded here and not yet acknowledged
// (pending, in the executor's order), the ones to report now, at most
// max. A job's own exit releases this node's resources, so it waits until
// no step of the same run is still running here (DESIGN invariant 1).
func Exits(running, pending []task.Key, max int) []task.Key {
	stepsAlive := map[Ref]bool{}
	for _, k := range running {
		if k.Step != task.NoStep {
			stepsAlive[Ref{Job: k.Job, Incarnation: k.Incarnation, Join: k.Join}] = true
		}
	}
	var out []task.Key
	for _, k := range pending {
		if len(out) == max {
			break
		}
		if k.Step == task.NoStep && stepsAlive[Ref{Job: k.Job, Incarnation: k.Incarnation, Join: k.Join}] {
			continue // its steps are still stopping; report on a later round
		}
		out = append(out, k)
	}
	return out
}

// Lease is what this node knows of its own lease.
type Lease struct {
	// Renewed is when the last heartbeat the leader accepted was sent.
	Renewed time.Time
	// Index is the raft index the leader answered that heartbeat with.
	Index uint64
	// TTL is how long that renewal holds (GrantedTTL).
	TTL time.Duration
}

// End is when the lease ends without another renewal.
func (l Lease) End() time.Time { return l.Renewed.Add(l.TTL) }

// MayStart says whether a node may start tasks now, its replica being at
// viewIndex: its lease must be current, and its replica must have applied
// what the leader had applied when it renewed the lease (so an allocation
// the leader already took back is not started from a stale view).
func MayStart(l Lease, now time.Time, viewIndex uint64) bool {
	return !now.After(l.End()) && viewIndex >= l.Index
}

// MaxRenewalsPerSecond is how many lease renewals a second the leader
// should see from all nodes together (RenewEvery, and the leader's
// leader.GrantLease), Nomad's default for its max_heartbeats_per_second.
const MaxRenewalsPerSecond = 50

// Grant is the leader's answer to a heartbeat (api.HeartbeatReply).
type Grant struct {
	// Index is the leader's applied index (MayStart).
	Index uint64
	// TTL and RenewEvery are the lease the leader granted and when to
	// renew it (leader.GrantLease); zero from a leader older than
	// stretched leases.
	TTL, RenewEvery time.Duration
}

// GrantedTTL is how long a renewal the leader answered with g holds, for
// a node whose --lease-ttl is ttl: what the leader granted, and ttl from
// a leader that granted nothing (an older release, which declares the
// node down after its own --lease-ttl). It is never more than the leader
// granted; a grant beyond the longest any leader grants (maxStretch × ttl,
// leader.MaxLeaseStretch) is cut to it, which errs towards fencing early.
func GrantedTTL(g Grant, ttl time.Duration, maxStretch int) time.Duration {
	if g.TTL <= 0 {
		return ttl
	}
	return min(g.TTL, time.Duration(maxStretch)*ttl)
}

// RenewEvery is how long a node of a cluster of n nodes waits between
// lease renewals: n / perSecond, so that the leader sees about perSecond
// renewals a second from all of them, but never more often than base
// (--heartbeat) and never less often than ttl/3, so that two renewals in
// a row may still be lost before the lease runs out (the margin that
// --lease-ttl's check, at least 3 heartbeats, keeps). spread, in [0, 1),
// takes up to a tenth off a stretched period, so that nodes which renewed
// together (a new leader's first round) drift apart. It is the rule under
// a leader that announces no period (an older release); RenewAfter
// follows the leader's.
func RenewEvery(n int, base, ttl time.Duration, perSecond int, spread float64) time.Duration {
	p := base
	if perSecond > 0 && n > 0 {
		p = max(p, time.Duration(n)*time.Second/time.Duration(perSecond))
	}
	return spreadPeriod(min(p, max(base, ttl/3)), base, spread)
}

// RenewAfter is how long to wait after a renewal the leader answered with
// g before the next, for a node with --heartbeat base and --lease-ttl ttl
// in a cluster of n nodes (as its gossip counts them): the period the
// leader announced, at most a third of the TTL granted (two renewals may
// be lost) and never more often than base; RenewEvery's rule under a
// leader that announced none. spread is RenewEvery's.
func RenewAfter(g Grant, n int, base, ttl time.Duration, perSecond int, spread float64) time.Duration {
	if g.TTL <= 0 {
		return RenewEvery(n, base, ttl, perSecond, spread)
	}
	return spreadPeriod(max(base, min(g.RenewEvery, g.TTL/3)), base, spread)
}

// spreadPeriod takes up to a tenth (spread in [0, 1)) off a period p
// stretched beyond base.
func spreadPeriod(p, base time.Duration, spread float64) time.Duration {
	if spread > 0 && spread < 1 {
		p = max(base, p-time.Duration(float64(p)*spread/10))
	}
	return p
}

// Fence says whether a node must stop every task it runs: it runs some,
// and its lease ran out at now. The lease ends at the later of l.End()
// and inherited, the end of the lease a restarted agent inherits from its
// predecessor (the tasks it reattached run under it); end is that time.
func Fence(l Lease, inherited, now time.Time, running int) (end time.Time, fence bool) {
	end = l.End()
	if end.Before(inherited) {
		end = inherited
	}
	return end, now.After(end) && running > 0
}

// RunHolds reports whether run ref still holds node in view v: the job
// is there, at that incarnation, and its allocation's latest entry for
// node is not released. What a node keeps about a run (its prolog's and
// epilog's outcome) is forgotten once it does not. It is pure.
func RunHolds(v *fsm.View, ref Ref, node string) bool {
	j, ok := v.Job(ref.Job)
	if !ok || j.Incarnation != ref.Incarnation || j.Alloc == nil {
		return false
	}
	i := j.Alloc.Find(node)
	return i >= 0 && !j.Alloc.Nodes[i].Released
}
