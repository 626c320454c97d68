package leader

import (
	"slices"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/placement"
)

// Growing elastic jobs is a backfill decision. After the pass has placed
// what it could of the queue, each running elastic job that may take more
// nodes is put to placement as a stand-in pending job (its GrowRequest,
// for the time it has left) behind every job still waiting, in the
// queue's order: a waiting job keeps its reservation (the grow may only
// take nodes that do not delay it, as any backfilled job), and a waiting
// job that fits takes the nodes first. Grows take what is left.

// growStandIns are the pending stand-ins of the running elastic jobs that
// may grow at now, in ID order: the job with its GrowRequest, for the
// rest of its time limit. With rejoin a job may take back a node it lost
// (cluster.Allocation.Rejoinable).
func growStandIns(jobs []*cluster.Job, now time.Time, rejoin bool) []*cluster.Job {
	var out []*cluster.Job
	for _, j := range jobs {
		if j.State != cluster.JobRunning || j.Preempt != nil || j.Alloc == nil || !j.Alloc.Elastic || j.Alloc.GivingUp() {
			continue
		}
		req := j.GrowRequest(rejoin)
		if req.Nodes == 0 {
			continue
		}
		if lim := j.Spec.Request.TimeLimit; lim > 0 {
			left := j.StartTime.Add(lim).Sub(now)
			if left <= 0 {
				continue // at its limit: it is about to end
			}
			req.TimeLimit = left
		}
		s := &cluster.Job{ID: j.ID, State: cluster.JobPending, Spec: j.Spec, SubmitTime: j.SubmitTime, Incarnation: j.Incarnation}
		s.Spec.Request = req
		out = append(out, s)
	}
	return out
}

// startedAt are the jobs of decisions as running jobs started at now, for
// a view that counts what the pass has just placed.
func startedAt(pending []*cluster.Job, ds []placement.Decision, now time.Time) []*cluster.Job {
	out := make([]*cluster.Job, 0, len(ds))
	for _, d := range ds {
		i := slices.IndexFunc(pending, func(j *cluster.Job) bool { return j.ID == d.Job })
		if i < 0 {
			continue
		}
		j := *pending[i]
		j.State, j.StartTime = cluster.JobRunning, now
		j.Alloc = &cluster.Allocation{Nodes: make([]cluster.NodeAlloc, len(d.Nodes))}
		for k, as := range d.Nodes {
			j.Alloc.Nodes[k] = cluster.NodeAlloc{Node: as.Node, GPUs: as.GPUs, CPUs: as.CPUs, MemMiB: as.MemMiB, State: cluster.TaskAssigned}
		}
		out = append(out, &j)
	}
	return out
}

// Grows decides which running elastic jobs of jobs take more nodes now.
// view holds what is allocated (the pass's own decisions included),
// waiting the pending jobs not placed, in order their queue order. With
// rejoin (every agent speaks protocol 5) a job may take back a node it
// lost in this run, once its tasks there are known dead; the GrowJob then
// says so (Rejoin). It is pure.
func Grows(view *placement.View, jobs, waiting []*cluster.Job, order []cluster.JobID, now time.Time, rejoin bool) ([]fsm.GrowJob, error) {
	standIns := growStandIns(jobs, now, rejoin)
	if len(standIns) == 0 {
		return nil, nil
	}
	queue := append(slices.Clone(waiting), standIns...)
	// The waiting jobs in their order, then the stand-ins by ID (byOrder
	// puts jobs the order does not name last): never ahead of a waiting
	// job.
	opts := placement.Options{Policy: placement.PolicyShoal, Order: order, OmitReasons: true}
	res, err := placement.PlaceWith(view, queue, now, opts)
	if err != nil {
		return nil, err
	}
	var out []fsm.GrowJob
	for _, d := range res.Decisions {
		i := slices.IndexFunc(standIns, func(j *cluster.Job) bool { return j.ID == d.Job })
		if i < 0 {
			continue // a waiting job: it did not fit in the pass, so cannot here
		}
		g := fsm.GrowJob{Job: d.Job, Incarnation: standIns[i].Incarnation}
		j := jobs[slices.IndexFunc(jobs, func(j *cluster.Job) bool { return j.ID == d.Job })]
		for _, as := range d.Nodes {
			g.Nodes = append(g.Nodes, fsm.Placement{Node: as.Node, GPUs: as.GPUs, CPUs: as.CPUs, MemMiB: as.MemMiB})
			if j.Alloc.Find(as.Node) >= 0 {
				g.Rejoin = true
			}
		}
		out = append(out, g)
	}
	return out, nil
}
