package placement

import (
	"slices"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// Shrink is one node a running elastic job gives up (fsm.ShrinkJob).
type Shrink struct {
	Job  cluster.JobID
	Node string
}

// Shrinks is preemption that shrinks rather than stops: the nodes that
// elastic jobs among candidates (running jobs the caller may preempt for
// job) could give up, and still have their minimum, so that job can
// start; nil, false when giving up every such node would not make room.
// Each elastic job offers its last nodes in rank order (never its first,
// where rank 0 runs), as many as it has above its minimum; they are
// taken in job order until job fits, by the policy's own placement, then
// each is spared, last first, if job still fits without it. Nothing is
// lost but the workers' progress since their last checkpoint: the job
// runs on. Shrinks is pure: v and the jobs are not modified.
func Shrinks(v *View, job *cluster.Job, candidates []*cluster.Job, now time.Time) ([]Shrink, bool) {
	if v == nil || job == nil {
		return nil, false
	}
	offers := shrinkOffers(v, job, candidates)
	base := newState(v, []*cluster.Job{job})
	fits := func(set []offer) bool {
		f := base.clone()
		f.maxLeaves = switchLimit(job, now)
		for _, o := range set {
			f.give(o.hn)
			f.vacate(o.hn.node, o.excl)
		}
		_, _, ok := f.start(job.ID, job.Spec.Request, true, nil, false)
		return ok
	}
	n := 0
	for n < len(offers) && !fits(offers[:n]) {
		n++
	}
	if len(offers) == 0 || !fits(offers[:n]) {
		return nil, false
	}
	chosen := slices.Clone(offers[:n])
	for i := len(chosen) - 1; i >= 0; i-- {
		without := slices.Delete(slices.Clone(chosen), i, i+1)
		if fits(without) {
			chosen = without
		}
	}
	out := make([]Shrink, len(chosen))
	for i, o := range chosen {
		out[i] = o.s
	}
	return out, true
}

// offer is one node an elastic job could give up, as held in a View.
type offer struct {
	s    Shrink
	hn   heldNode
	excl bool
}

// shrinkOffers are the nodes the elastic jobs among candidates could give
// up for job and keep their minimum: each job's last nodes in rank order
// (never its first, where rank 0 runs), as many as it has above its
// minimum, in candidates' order.
func shrinkOffers(v *View, job *cluster.Job, candidates []*cluster.Job) []offer {
	var offers []offer
	for _, c := range candidates {
		if c == nil || c.ID == job.ID || c.State != cluster.JobRunning || c.Alloc == nil || !c.Alloc.Elastic {
			continue
		}
		h := v.holderOf(c.ID)
		if h == nil {
			continue
		}
		live := c.Alloc.LiveNodes()
		spare := len(live) - c.Spec.Request.Nodes
		for k := len(live) - 1; k >= 1 && spare > 0; k-- {
			ni, ok := v.byName[live[k]]
			if !ok {
				continue
			}
			i := slices.IndexFunc(h.nodes, func(hn heldNode) bool { return hn.node == ni })
			if i < 0 {
				continue
			}
			offers = append(offers, offer{s: Shrink{Job: c.ID, Node: live[k]}, hn: h.nodes[i], excl: h.excl})
			spare--
		}
	}
	return offers
}
