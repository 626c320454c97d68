package leader

import (
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/placement"
)

// Preemptions are the victims chosen to make room for one job.
type Preemptions struct {
	For      cluster.JobID
	Victims  []cluster.JobID
	Deadline time.Time // the end of their grace
	// Shrinks are nodes elastic jobs give up instead (fsm.ShrinkJob):
	// preemption prefers them to stopping jobs, when they make room.
	Shrinks []placement.Shrink
}

// Preemption makes room for the first job of the queue order that waits
// on resources (placed gives each considered job's reason), when its QoS
// may preempt running jobs: the victims (placement.Victims: the fewest
// GPU-hours lost) among the running jobs of QoS levels it may preempt,
// each to get the policy's grace (SIGTERM now, requeue or cancel at the
// deadline). While room is being made — a victim's grace runs, or a
// victim's resources are still being released — no more victims are
// chosen. An elastic job that can give up nodes and keep its minimum is
// shrunk rather than stopped (placement.Preempt): shrinks alone when they
// make room, else shrinks with as few jobs stopped as make room with
// them. v is the state after the pass's allocations. It is pure;
// ok is false when there is nothing to preempt.
func Preemption(v *fsm.View, order []cluster.JobID, placed map[cluster.JobID]string, now time.Time) (Preemptions, bool) {
	pol := v.Policy()
	if pol == nil || len(pol.Preempt) == 0 {
		return Preemptions{}, false
	}
	var head *cluster.Job
	for _, id := range order {
		if placed[id] != cluster.ReasonResources {
			continue
		}
		if j, ok := v.Job(id); ok && j.State == cluster.JobPending {
			head = j
		}
		break
	}
	if head == nil || head.Spec.QoS == "" {
		return Preemptions{}, false
	}
	var candidates []*cluster.Job
	for _, j := range v.Jobs() {
		if releasingVictim(j) {
			// A victim whose grace ended still holds its resources until
			// its tasks are known dead: the room it makes is on its way,
			// and choosing more victims now would preempt twice for one
			// job.
			return Preemptions{}, false
		}
		if j.State != cluster.JobRunning {
			continue
		}
		if givingUp(j) {
			return Preemptions{}, false // a shrink's room is on its way
		}
		if j.Preempt != nil {
			if j.Preempt.By == head.ID {
				return Preemptions{}, false // its room is being made
			}
			continue
		}
		if pol.MayPreempt(head.Spec.QoS, j.Spec.QoS) {
			candidates = append(candidates, j)
		}
	}
	if len(candidates) == 0 {
		return Preemptions{}, false
	}
	view := placement.NewView(v.Nodes(), v.Jobs()).WithPartitions(pol.Partitions).WithSwitchLinks(v.SwitchLinks())
	plan, ok := placement.Preempt(view, head, candidates, now)
	if !ok {
		return Preemptions{}, false
	}
	pre := Preemptions{For: head.ID, Shrinks: plan.Shrinks, Victims: plan.Victims}
	if len(plan.Victims) > 0 {
		pre.Deadline = now.Add(pol.PreemptGrace)
	}
	return pre, true
}

// releasingVictim says j is a preemption victim whose grace ended (it was
// cancelled as Preempted, or requeued) and whose resources are not yet
// released. A job requeued by hand counts too: its resources are also
// about to be free.
func releasingVictim(j *cluster.Job) bool {
	ended := j.State == cluster.JobRequeued || j.State == cluster.JobCancelled && j.Reason == cluster.ReasonPreempted
	return ended && j.HoldsResources()
}

// givingUp says running job j gave up a node (ShrinkJob) that has not
// released it yet.
func givingUp(j *cluster.Job) bool { return j.Alloc.GivingUp() }
