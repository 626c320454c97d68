package fsm

import (
	"fmt"
	"slices"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// GrowJob adds nodes to a running elastic job's allocation (protocol 4):
// the leader proposes it when nodes free up and no job waiting in front
// of it could use them (a backfill decision). The new nodes start the
// job's command as its other nodes did; the ranks already running go on.
// The FSM checks the placements as Allocate checks a decision's, against
// the job's cluster.Job.GrowRequest.
type GrowJob struct {
	Job         cluster.JobID `msgpack:"job"`
	Incarnation uint64        `msgpack:"incarnation"`
	Nodes       []Placement   `msgpack:"nodes"`
	Time        time.Time     `msgpack:"time"`
	// Rejoin lets Nodes name a node the job lost or gave up in this run
	// and whose tasks there are known dead (its entry is released:
	// cluster.Allocation.Rejoinable): it comes back as a new entry, with
	// the next Join and a place of its own (protocol 5; an older replica
	// refuses a node already in the allocation).
	Rejoin bool `msgpack:"rejoin,omitempty"`
}

func (s *State) growJob(index uint64, c GrowJob) Result {
	pos, old := s.job(c.Job)
	what := fmt.Sprintf("grow job %d", c.Job)
	if old == nil {
		return Result{Err: fmt.Errorf("%s: %w", what, ErrUnknownJob)}
	}
	if why := s.checkGrow(old, c); why != "" {
		return Result{Err: fmt.Errorf("%s: %w: %s", what, ErrWrongState, why)}
	}
	j := old.Clone()
	from := len(j.Alloc.Nodes)
	for _, p := range c.Nodes {
		// Its place: the smallest no node of the job holds, so that its
		// ranks repeat none still running. A node coming back takes the
		// next Join, which its tasks and reports carry.
		join := 0
		if k := j.Alloc.Find(p.Node); k >= 0 {
			join = j.Alloc.Nodes[k].Join + 1
		}
		j.Alloc.Nodes = append(j.Alloc.Nodes, cluster.NodeAlloc{
			Node: p.Node, GPUs: slices.Clone(p.GPUs), CPUs: slices.Clone(p.CPUs), MemMiB: p.MemMiB, State: cluster.TaskAssigned,
			Slot: j.Alloc.JoinSlot() + 1, Join: join,
		})
		resized(j, cluster.ResizeGrow, p.Node, c.Time)
	}
	j.ModifyIndex = index
	canonJob(j)
	if err := s.res.holdAdded(j, from); err != nil {
		s.diverge(index, fmt.Errorf("%s: resource index disagrees with its checks: %w", what, err))
		return Result{Err: fmt.Errorf("%s: internal error: resource index inconsistent", what)}
	}
	s.storeJob(pos, j)
	return Result{}
}

// checkGrow returns why c cannot grow j now, or "".
func (s *State) checkGrow(j *cluster.Job, c GrowJob) string {
	req := j.GrowRequest(c.Rejoin)
	switch {
	case j.State != cluster.JobRunning:
		return fmt.Sprintf("job is %s, want RUNNING", j.State)
	case c.Incarnation != j.Incarnation:
		return fmt.Sprintf("incarnation %d, job is at %d", c.Incarnation, j.Incarnation)
	case !j.Alloc.Elastic:
		return "its allocation is not elastic"
	case j.Preempt != nil:
		return "it is being preempted"
	case j.Alloc.GivingUp():
		return "it is giving up a node whose tasks are still being stopped"
	case len(c.Nodes) == 0:
		return "no nodes"
	case req.Nodes == 0 || len(c.Nodes) > max(req.Nodes, req.NodesMax):
		return fmt.Sprintf("%d more nodes would pass its maximum of %d (it has %d)",
			len(c.Nodes), max(j.Spec.Request.Nodes, j.Spec.Request.NodesMax), len(j.Alloc.LiveNodes()))
	}
	for _, p := range c.Nodes {
		switch {
		case j.Alloc.Find(p.Node) < 0:
		case !c.Rejoin:
			return fmt.Sprintf("node %.64q: already in its allocation", p.Node)
		case !j.Alloc.Rejoinable(p.Node):
			return fmt.Sprintf("node %.64q: it still has the node, or its tasks there are not known dead yet", p.Node)
		}
	}
	// Every Allocate after the first release was consumable; so is every
	// GrowJob.
	return s.checkPlacements(req, Decision{Job: j.ID, Nodes: c.Nodes}, true)
}

// shrinks reports whether running job j goes on without its node i, just
// lost, by shrinking: its allocation is elastic, i is not its first node
// (where rank 0 and the rendezvous run), and the nodes it keeps are at
// least its minimum.
func shrinks(j *cluster.Job, i int) bool {
	if !j.Alloc.Elastic || i == 0 {
		return false
	}
	keep := 0
	for k := range j.Alloc.Nodes {
		if k != i && j.Alloc.Nodes[k].State != cluster.TaskLost && !j.Alloc.Nodes[k].Removed {
			keep++
		}
	}
	return keep >= j.Spec.Request.Nodes
}

// ShrinkJob gives up one node of a running elastic job while its tasks
// run there (protocol 4): the leader proposes it to make room for a
// preempting job, shrinking a job rather than stopping it. The node's
// tasks are stopped (the job's signal, then a kill after the kill wait)
// and its report releases it; the job goes on with the others, which
// must still be at least MIN.
type ShrinkJob struct {
	Job         cluster.JobID `msgpack:"job"`
	Incarnation uint64        `msgpack:"incarnation"`
	Node        string        `msgpack:"node"`
	Time        time.Time     `msgpack:"time"`
}

func (s *State) shrinkJob(index uint64, c ShrinkJob) Result {
	pos, old := s.job(c.Job)
	what := fmt.Sprintf("shrink job %d by node %.64q", c.Job, c.Node)
	if old == nil {
		return Result{Err: fmt.Errorf("%s: %w", what, ErrUnknownJob)}
	}
	i := old.Alloc.Find(c.Node)
	var why string
	switch {
	case old.State != cluster.JobRunning:
		why = fmt.Sprintf("job is %s, want RUNNING", old.State)
	case c.Incarnation != old.Incarnation:
		why = fmt.Sprintf("incarnation %d, job is at %d", c.Incarnation, old.Incarnation)
	case !old.Alloc.Elastic:
		why = "its allocation is not elastic"
	case i < 0 || !old.Alloc.Live(i) || old.Alloc.Nodes[i].Released:
		why = "not a node it has"
	case i == 0:
		why = "its first node (rank 0 and the rendezvous run there)"
	case !shrinks(old, i):
		why = fmt.Sprintf("it would have fewer than its minimum of %d nodes", old.Spec.Request.Nodes)
	}
	if why != "" {
		return Result{Err: fmt.Errorf("%s: %w: %s", what, ErrWrongState, why)}
	}
	j := old.Clone()
	j.Alloc.Nodes[i].Removed = true
	resized(j, cluster.ResizeShrink, c.Node, c.Time)
	j.ModifyIndex = index
	s.storeJob(pos, j)
	return Result{}
}

// removedExited releases node i of running or ended job j, which the job
// gave up (ShrinkJob) and whose tasks are now dead: the job's state does
// not change, except that a running one whose other nodes all exited 0
// completes.
func removedExited(j *cluster.Job, i int, at time.Time) {
	na := &j.Alloc.Nodes[i]
	if na.State != cluster.TaskLost {
		na.State = cluster.TaskExited
	}
	na.Released = true
	if j.State == cluster.JobRunning && liveExitedZero(j.Alloc) {
		j.State, j.EndTime = cluster.JobCompleted, at
	}
}

// shrink records that elastic job j lost its node i and goes on without
// it. The caller has marked the node lost and released.
func shrink(j *cluster.Job, i int, at time.Time) {
	j.Alloc.Nodes[i].State = cluster.TaskLost
	resized(j, cluster.ResizeShrink, j.Alloc.Nodes[i].Node, at)
	if liveExitedZero(j.Alloc) {
		// The others were done already.
		j.State, j.EndTime = cluster.JobCompleted, at
	}
}

// resized appends a resize to j's history (the allocation as it is now).
func resized(j *cluster.Job, cause, node string, at time.Time) {
	a := j.Alloc
	if len(a.Resizes) >= cluster.MaxResizes {
		a.Resizes = slices.Clone(a.Resizes[len(a.Resizes)-cluster.MaxResizes+1:])
	}
	a.Resizes = append(a.Resizes, cluster.Resize{Time: at, Cause: cause, Node: node, Nodes: len(a.LiveNodes())})
}

// liveExitedZero reports whether every node an elastic allocation still
// has exited 0.
func liveExitedZero(a *cluster.Allocation) bool {
	for i, n := range a.Nodes {
		if a.Live(i) && (n.State != cluster.TaskExited || n.ExitCode != 0) {
			return false
		}
	}
	return true
}

// ShrinkTo decides `scontrol update JobId=N NumNodes=K` on running elastic
// job j: the indices of the nodes it gives up to keep k, those of the
// highest places (cluster.Allocation.SlotOf) first, as Slurm keeps a
// shrunk job's first nodes; never its first node. The nodes given up stop
// their tasks as for ShrinkJob (the job's signal, then a kill after the
// kill wait). As Slurm 22.05 (without SchedulerParameters=
// permit_job_expansion), a running job does not grow this way; nor does
// an elastic job go under its minimum. k equal to the nodes it has gives
// up none.
func ShrinkTo(j *cluster.Job, k int) ([]int, error) {
	var live []int
	for i := range j.Alloc.Nodes {
		if j.Alloc.Live(i) {
			live = append(live, i)
		}
	}
	switch {
	case k < 1:
		return nil, fmt.Errorf("%w for job %d: NumNodes=%d: want at least 1", ErrUpdateNodeCount, j.ID, k)
	case k > len(live):
		return nil, fmt.Errorf("%w for job %d: NumNodes=%d: a running job does not grow through an update (it has %d nodes; an elastic job grows by itself, up to its maximum)",
			ErrUpdateNotSupported, j.ID, k, len(live))
	case k < j.Spec.Request.Nodes:
		return nil, fmt.Errorf("%w for job %d: NumNodes=%d: below the job's minimum of %d nodes", ErrUpdateNodeCount, j.ID, k, j.Spec.Request.Nodes)
	}
	slices.SortStableFunc(live, func(a, b int) int { return j.Alloc.SlotOf(b) - j.Alloc.SlotOf(a) })
	var give []int
	for _, i := range live {
		if len(give) == len(live)-k {
			break
		}
		if i != 0 {
			give = append(give, i)
		}
	}
	return give, nil
}
