package placement

import (
	"cmp"
	"slices"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// Victims chooses which of candidates (running jobs the caller may
// preempt for job: of a QoS job's QoS may preempt, not already victims)
// to preempt so that job can start, at the least cost: the fewest
// GPU-hours lost, a victim's loss being its GPUs times how long it has
// run (the work a requeue throws away). It returns nil, false when
// preempting every candidate would not make room.
//
// The set is found greedily and then pruned: candidates are freed
// cheapest first until job fits, by the policy's own placement (topology
// and NVLink preferences, its node set, partition and --switches), then
// each chosen victim, dearest first, is spared if job still fits without
// it. The result is minimal (no victim can be spared) though not always
// the cheapest of all sets. Victims is pure: v and the jobs are not
// modified.
func Victims(v *View, job *cluster.Job, candidates []*cluster.Job, now time.Time) ([]cluster.JobID, bool) {
	if v == nil || job == nil {
		return nil, false
	}
	type victim struct {
		id   cluster.JobID
		h    *holder
		cost float64
	}
	var vs []victim
	for _, c := range candidates {
		if c == nil || c.ID == job.ID {
			continue
		}
		h := v.holderOf(c.ID)
		if h == nil {
			continue // holds nothing: freeing it gains nothing
		}
		gpus := 0
		for _, hn := range h.nodes {
			gpus += len(hn.gpus)
		}
		ran := max(now.Sub(c.StartTime), 0)
		vs = append(vs, victim{id: c.ID, h: h, cost: float64(gpus) * ran.Hours()})
	}
	// Cheapest first; among equals the newest (it has lost least).
	slices.SortFunc(vs, func(a, b victim) int { return cmp.Or(cmp.Compare(a.cost, b.cost), cmp.Compare(b.id, a.id)) })

	base := newState(v, []*cluster.Job{job})
	fits := func(set []victim) bool {
		f := base.clone()
		f.maxLeaves = switchLimit(job, now)
		for _, x := range set {
			for _, hn := range x.h.nodes {
				f.give(hn)
				f.vacate(hn.node, x.h.excl)
			}
		}
		_, _, ok := f.start(job.ID, job.Spec.Request, true, nil, false)
		return ok
	}
	n := 0
	for n < len(vs) && !fits(vs[:n]) {
		n++
	}
	if !fits(vs[:n]) {
		return nil, false
	}
	chosen := slices.Clone(vs[:n])
	for i := len(chosen) - 1; i >= 0; i-- {
		without := slices.Delete(slices.Clone(chosen), i, i+1)
		if fits(without) {
			chosen = without
		}
	}
	ids := make([]cluster.JobID, len(chosen))
	for i, x := range chosen {
		ids[i] = x.id
	}
	slices.Sort(ids)
	return ids, true
}

// holderOf returns the holder of job id, or nil.
func (v *View) holderOf(id cluster.JobID) *holder {
	for i := range v.held {
		if v.held[i].id == id {
			return &v.held[i]
		}
	}
	return nil
}
