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
	p, ok := preemptWith(v, job, candidates, nil, now)
	if !ok {
		return nil, false
	}
	return p.Victims, true
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

// Plan is how to make room for a preempting job: nodes elastic jobs give
// up (fsm.ShrinkJob), and jobs stopped whole (their grace, then requeue
// or cancel).
type Plan struct {
	Shrinks []Shrink
	Victims []cluster.JobID
}

// Preempt chooses how to make room for job among candidates (running
// jobs the caller may preempt for it), preferring shrinking to stopping:
// shrinks alone (Shrinks) when they make room; else every shrink the
// elastic candidates offer (their nodes above their minimum, never their
// first) and, cheapest first as Victims orders them, as few whole jobs as
// make room with them. The set is then pruned: each victim, dearest
// first, is spared if job still fits without it, then each shrink, last
// first. An elastic job that is stopped gives up no node besides (its
// nodes all go). The result is minimal; false when stopping every
// candidate and shrinking the others would not make room. Preempt is
// pure: v and the jobs are not modified.
func Preempt(v *View, job *cluster.Job, candidates []*cluster.Job, now time.Time) (Plan, bool) {
	if v == nil || job == nil {
		return Plan{}, false
	}
	if shrinks, ok := Shrinks(v, job, candidates, now); ok {
		return Plan{Shrinks: shrinks}, true
	}
	return preemptWith(v, job, candidates, shrinkOffers(v, job, candidates), now)
}

// preemptWith is Preempt given the shrinks on offer (none: Victims): the
// cheapest whole jobs that make room with every offer, then the victims
// and the offers job can do without, pruned as Preempt says.
func preemptWith(v *View, job *cluster.Job, candidates []*cluster.Job, offers []offer, now time.Time) (Plan, bool) {
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
		vs = append(vs, victim{id: c.ID, h: h, cost: float64(gpus) * max(now.Sub(c.StartTime), 0).Hours()})
	}
	slices.SortFunc(vs, func(a, b victim) int { return cmp.Or(cmp.Compare(a.cost, b.cost), cmp.Compare(b.id, a.id)) })

	base := newState(v, []*cluster.Job{job})
	fits := func(shrinks []offer, set []victim) bool {
		f := base.clone()
		f.maxLeaves = switchLimit(job, now)
		for _, x := range set {
			for _, hn := range x.h.nodes {
				f.give(hn)
				f.vacate(hn.node, x.h.excl)
			}
		}
		for _, o := range shrinks {
			if slices.ContainsFunc(set, func(x victim) bool { return x.id == o.s.Job }) {
				continue // stopped whole: its nodes are given already
			}
			f.give(o.hn)
			f.vacate(o.hn.node, o.excl)
		}
		_, _, ok := f.start(job.ID, job.Spec.Request, true, nil, false)
		return ok
	}
	n := 0
	for n < len(vs) && !fits(offers, vs[:n]) {
		n++
	}
	if !fits(offers, vs[:n]) {
		return Plan{}, false
	}
	chosen := slices.Clone(vs[:n])
	for i := len(chosen) - 1; i >= 0; i-- {
		if without := slices.Delete(slices.Clone(chosen), i, i+1); fits(offers, without) {
			chosen = without
		}
	}
	// Shrinks of the jobs stopped whole are moot.
	kept := slices.DeleteFunc(slices.Clone(offers), func(o offer) bool {
		return slices.ContainsFunc(chosen, func(x victim) bool { return x.id == o.s.Job })
	})
	for i := len(kept) - 1; i >= 0; i-- {
		if without := slices.Delete(slices.Clone(kept), i, i+1); fits(without, chosen) {
			kept = without
		}
	}
	var p Plan
	for _, o := range kept {
		p.Shrinks = append(p.Shrinks, o.s)
	}
	for _, x := range chosen {
		p.Victims = append(p.Victims, x.id)
	}
	slices.Sort(p.Victims)
	return p, true
}
