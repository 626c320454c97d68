package placement

import (
	"cmp"
	"slices"

	"github.com/shoal-sched/shoal/cluster"
)

// A request's node set (Request.NodeList, Exclude, Constraint, Exclusive)
// is honoured here. Unconstrained jobs keep the aggregate fast path of
// chooseNodes and firstFit; a constrained job scans every node once to
// find its eligible ones (O(nodes) per attempt), which is the price of
// naming nodes or features, paid only by the jobs that do.

// occupy records one more job on node ni, holding it whole when excl. A
// node held whole leaves the aggregates (hist, atLeast) and tight, so no
// job is offered it.
func (s *state) occupy(ni int, excl bool) {
	s.busy = add(s.busy, ni, +1)
	if !excl {
		return
	}
	s.detach(ni)
	s.excl = add(s.excl, ni, +1)
	s.attach(ni)
}

// vacate undoes occupy.
func (s *state) vacate(ni int, excl bool) {
	s.busy = add(s.busy, ni, -1)
	if !excl {
		return
	}
	s.detach(ni)
	s.excl = add(s.excl, ni, -1)
	s.attach(ni)
}

// busyOf is how many jobs hold node ni in s, exclOf how many of them
// hold it whole.
func (s *state) busyOf(ni int) int { return s.v.nodes[ni].jobs + s.busy[ni] }
func (s *state) exclOf(ni int) int { return s.v.nodes[ni].excl + s.excl[ni] }

// add adds d to m[k], making m when nil.
func add(m map[int]int, k, d int) map[int]int {
	if m == nil {
		m = make(map[int]int)
	}
	m[k] += d
	return m
}

// constraint returns req's parsed Constraint (nil for none, or for one
// that does not parse, which validation makes unreachable; never treats
// that as BadConstraints).
func (s *state) constraint(expr string) (*cluster.Constraint, bool) {
	if expr == "" {
		return nil, true
	}
	if c, ok := s.cons[expr]; ok {
		return c, c != nil
	}
	c, err := cluster.ParseConstraint(expr)
	if s.cons == nil {
		s.cons = make(map[string]*cluster.Constraint)
	}
	s.cons[expr] = c // nil on error
	return c, err == nil
}

// fitsNode reports whether node n could ever hold req's share of a node:
// it matches the constraint, is not excluded and has the GPUs, CPUs and
// memory.
func fitsNode(n *cluster.Node, req cluster.Request, c *cluster.Constraint) bool {
	return len(n.GPUs) >= req.GPUsPerNode && hasMem(n, req) && hasCPUs(n, req) &&
		c.Match(n.Features) && !slices.Contains(req.Exclude, n.Name)
}

// never returns why req cannot run on the usable nodes even were they
// idle, or "": ReqNodeNotAvail when nodes that are down, drained or not
// yet known would be needed (a listed node among them), BadConstraints
// when no node the view knows could ever satisfy it (Check refuses such
// a request at submit; a node leaving can make one here).
func (s *state) never(req cluster.Request) string {
	v := s.v
	if req.Nodes < 1 || req.GPUsPerNode < 0 {
		return ReasonBadConstraints
	}
	if !req.Constrained() && !v.restricts(req.Partition) && !v.memShort(req) && !v.cpuShort(req) && !req.WholeMem() {
		if !v.fitsEmpty(req.Nodes, req.GPUsPerNode) {
			return cluster.ReasonReqNodeNotAvail
		}
		return ""
	}
	c, ok := s.constraint(req.Constraint)
	if !ok {
		return ReasonBadConstraints
	}
	why := ""
	for _, name := range req.NodeList {
		i, known := v.byName[name]
		switch {
		case !known:
			why = cluster.ReasonReqNodeNotAvail
		case !fitsNode(v.nodes[i].node, req, c) || !v.inPartition(i, req.Partition):
			return ReasonBadConstraints
		case !v.nodes[i].usable:
			why = cluster.ReasonReqNodeNotAvail
		}
	}
	usable, known := 0, 0
	for i := range v.nodes {
		if n := v.nodes[i].node; fitsNode(n, req, c) && v.inPartition(i, req.Partition) {
			known++
			if v.nodes[i].usable {
				usable++
			}
		}
	}
	switch {
	case known < req.Nodes && why == "":
		return ReasonBadConstraints
	case usable < req.Nodes:
		return cluster.ReasonReqNodeNotAvail
	}
	return why
}

// eligible reports whether node ni can take one of req's ranks now in s.
func (s *state) eligible(ni int, req cluster.Request, c *cluster.Constraint) bool {
	n := &s.v.nodes[ni]
	switch {
	case !n.usable || s.exclOf(ni) > 0 || !fitsNode(n.node, req, c) || !s.v.inPartition(ni, req.Partition):
		return false
	case req.Exclusive:
		return s.busyOf(ni) == 0 && s.free[ni] == len(n.node.GPUs)
	}
	return s.free[ni] >= req.GPUsPerNode && s.cfree[ni] >= req.CPUsOn(n.node) && s.mfree[ni] >= req.MemOn(n.node)
}

// chooseEligible picks req.Nodes eligible nodes for a constrained job, or
// returns nil: every listed node, then the rest among the other eligible
// ones, by chooseNodes' leaf preferences when topology, else the first by
// name. The result is in rank order, as chooseNodes' or firstFit's.
func (s *state) chooseEligible(req cluster.Request, topology bool) []int {
	c, ok := s.constraint(req.Constraint)
	if !ok {
		return nil
	}
	v := s.v
	var nodes []int
	for _, name := range req.NodeList {
		ni, known := v.byName[name]
		if !known || !s.eligible(ni, req, c) {
			return nil
		}
		nodes = append(nodes, ni)
	}
	rest := req.Nodes - len(nodes)
	var cand []int
	for ni := range v.nodes {
		if rest > 0 && s.eligible(ni, req, c) && !slices.Contains(nodes, ni) {
			cand = append(cand, ni)
			if !topology && len(cand) == rest {
				break
			}
		}
	}
	if len(cand) < rest {
		return nil
	}
	if topology {
		nodes = append(nodes, s.spread(cand, rest)...)
		slices.SortFunc(nodes, func(a, b int) int {
			return cmp.Or(cmp.Compare(v.nodes[a].leaf, v.nodes[b].leaf), cmp.Compare(a, b))
		})
		return nodes
	}
	nodes = append(nodes, cand...)
	slices.Sort(nodes)
	return nodes
}

// spread picks count of the candidate nodes (ascending indices, usable) by
// chooseNodes' preferences: one leaf (best fit), else fewest leaves under
// one parent, else fewest leaves anywhere; inside a leaf the nodes with
// the fewest free GPUs first, ties by name.
func (s *state) spread(cand []int, count int) []int {
	if count == 0 {
		return nil
	}
	v := s.v
	clear(s.q)
	for _, ni := range cand {
		s.q[v.nodes[ni].leaf]++
	}
	best := -1
	for li := range v.leaves {
		if s.q[li] >= count && (best < 0 || s.q[li] < s.q[best]) {
			best = li
		}
	}
	takes := s.leafTakes(best, count)
	var out []int
	for _, t := range takes {
		var in []int
		for _, ni := range cand {
			if v.nodes[ni].leaf == t.leaf {
				in = append(in, ni)
			}
		}
		slices.SortStableFunc(in, func(a, b int) int { return cmp.Compare(s.free[a], s.free[b]) })
		out = append(out, in[:t.n]...)
	}
	return out
}
