package fsm

import (
	"fmt"
	"slices"

	"github.com/shoal-sched/shoal/cluster"
)

// checkNodeSet returns why decision d breaks its job's node set, or "":
// placement honours NodeList, Exclude, Constraint and Exclusive, and the
// FSM checks them again on apply (defence in depth, as for GPUs). The
// caller has checked that d's nodes are distinct, known and up.
func (s *State) checkNodeSet(req cluster.Request, d Decision) string {
	if !req.Constrained() && req.MemPerNode() == 0 && !req.MemWholeNode && req.CPUsPerNode() <= 1 {
		return s.exclusiveHolder(d)
	}
	for _, name := range req.NodeList {
		if !slices.ContainsFunc(d.Nodes, func(p Placement) bool { return p.Node == name }) {
			return fmt.Sprintf("node %q: in the job's node list, not in the decision", name)
		}
	}
	var c *cluster.Constraint
	if req.Constraint != "" {
		var err error
		if c, err = cluster.ParseConstraint(req.Constraint); err != nil {
			return err.Error()
		}
	}
	for _, p := range d.Nodes {
		n := s.node(p.Node)
		switch {
		case slices.Contains(req.Exclude, p.Node):
			return fmt.Sprintf("node %q: excluded by the job", p.Node)
		case n.CPUs > 0 && n.CPUs < req.CPUsPerNode():
			return fmt.Sprintf("node %q: %d CPUs, job's ranks ask for %d", p.Node, n.CPUs, req.CPUsPerNode())
		case !req.MemWholeNode && n.MemoryMiB < req.MemPerNode():
			return fmt.Sprintf("node %q: %d MiB of memory, job requests %d", p.Node, n.MemoryMiB, req.MemPerNode())
		case !c.Match(n.Features):
			return fmt.Sprintf("node %q: features %v do not match constraint %q", p.Node, n.Features, req.Constraint)
		case req.Exclusive && len(n.GPUs) < req.GPUsPerNode:
			return fmt.Sprintf("node %q: %d gpus, job requests %d per node", p.Node, len(n.GPUs), req.GPUsPerNode)
		case req.Exclusive && len(s.res.live[p.Node]) > 0:
			return fmt.Sprintf("node %q: in use by job %d, exclusive job wants it idle", p.Node, minJob(s.res.live[p.Node]))
		}
	}
	return s.exclusiveHolder(d)
}

// exclusiveHolder returns why d may not use a node an exclusive job holds.
func (s *State) exclusiveHolder(d Decision) string {
	for _, p := range d.Nodes {
		var excl []cluster.JobID
		for id := range s.res.live[p.Node] {
			if _, j := s.job(id); j != nil && j.Spec.Request.Exclusive {
				excl = append(excl, id)
			}
		}
		if len(excl) > 0 {
			return fmt.Sprintf("node %q: held whole by exclusive job %d", p.Node, slices.Min(excl))
		}
	}
	return ""
}

// minJob returns the lowest job ID in a set (for a message that does not
// depend on map order).
func minJob(set map[cluster.JobID]struct{}) cluster.JobID {
	var lo cluster.JobID
	for id := range set {
		if lo == 0 || id < lo {
			lo = id
		}
	}
	return lo
}
