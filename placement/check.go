package placement

import (
	"errors"
	"fmt"
	"strings"

	"github.com/shoal-sched/shoal/cluster"
)

// ErrInfeasible is wrapped by Check's errors: the request can never run on
// this cluster as it is known, even with every node idle and up.
var ErrInfeasible = errors.New("request can never fit the cluster")

// infeasibleError carries Check's message and unwraps to ErrInfeasible.
type infeasibleError struct{ msg string }

func (e *infeasibleError) Error() string { return e.msg }
func (e *infeasibleError) Unwrap() error { return ErrInfeasible }

func infeasible(format string, args ...any) error {
	return &infeasibleError{msg: fmt.Sprintf(format, args...)}
}

// plural writes n and noun, adding an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Check is the submit-time feasibility test: could req ever run on these
// nodes, counting every known node (down and drained ones included, not
// those that left)? It returns an error wrapping ErrInfeasible that names
// the field, for example
//
//	nodes 5: the cluster has 4 nodes
//	gpus_per_node 16: the largest node has 8 GPUs
//	nodes 3 with gpus_per_node 8: only 2 nodes have 8 or more GPUs
//
// A request that only down or drained nodes could satisfy passes (it will
// pend with ReqNodeNotAvail). A request with Nodes below 1 or negative
// GPUsPerNode gets a plain validation error, as cluster.Request.Validate
// words it.
func Check(nodes []*cluster.Node, req cluster.Request) error {
	switch {
	case req.Nodes < 1:
		return fmt.Errorf("nodes %d: want at least 1", req.Nodes)
	case req.GPUsPerNode < 0:
		return fmt.Errorf("gpus_per_node %d: want 0 or more", req.GPUsPerNode)
	}
	if req.Constrained() || req.MemPerNode() > 0 || req.CPUsPerNode() > 1 {
		return checkNodeSet(nodes, req)
	}
	seen := make(map[string]bool, len(nodes))
	known, largest, enough := 0, 0, 0
	for _, n := range nodes {
		if n == nil || n.Status == cluster.NodeLeft || seen[n.Name] {
			continue
		}
		seen[n.Name] = true
		known++
		largest = max(largest, len(n.GPUs))
		if len(n.GPUs) >= req.GPUsPerNode {
			enough++
		}
	}
	switch {
	case req.Nodes > known:
		return infeasible("nodes %d: the cluster has %s", req.Nodes, plural(known, "node"))
	case req.GPUsPerNode > largest:
		return infeasible("gpus_per_node %d: the largest node has %s", req.GPUsPerNode, plural(largest, "GPU"))
	case req.Nodes > enough:
		verb := "have"
		if enough == 1 {
			verb = "has"
		}
		return infeasible("nodes %d with gpus_per_node %d: only %s %s %d or more GPUs",
			req.Nodes, req.GPUsPerNode, plural(enough, "node"), verb, req.GPUsPerNode)
	}
	return nil
}

// checkNodeSet is Check for a request with a node set: every listed node
// known and able to hold a rank, some node with the features, and enough
// nodes that match everything. The messages follow Slurm's
// "Requested node configuration is not available", naming what is
// missing.
func checkNodeSet(nodes []*cluster.Node, req cluster.Request) error {
	c, err := cluster.ParseConstraint(req.Constraint)
	if req.Constraint == "" {
		c, err = nil, nil
	}
	if err != nil {
		return err
	}
	byName := make(map[string]*cluster.Node, len(nodes))
	var known []*cluster.Node
	for _, n := range nodes {
		if n == nil || n.Status == cluster.NodeLeft || byName[n.Name] != nil {
			continue
		}
		byName[n.Name] = n
		known = append(known, n)
	}
	for _, name := range req.NodeList {
		n := byName[name]
		switch {
		case n == nil:
			return infeasible("node_list: node %q is not in the cluster", name)
		case len(n.GPUs) < req.GPUsPerNode:
			return infeasible("node_list: node %q has %s, gpus_per_node is %d", name, plural(len(n.GPUs), "GPU"), req.GPUsPerNode)
		case !c.Match(n.Features):
			return infeasible("node_list: node %q lacks the features of constraint %q (it has %q)", name, req.Constraint, strings.Join(n.Features, ","))
		}
	}
	if c != nil {
		featured := false
		for _, n := range known {
			featured = featured || c.Match(n.Features)
		}
		if !featured {
			return infeasible("constraint %q: no node has these features; requested node configuration is not available", req.Constraint)
		}
	}
	fit := 0
	for _, n := range known {
		if fitsNode(n, req, c) {
			fit++
		}
	}
	if fit < req.Nodes {
		mem := ""
		if m := req.MemPerNode(); m > 0 && !req.MemWholeNode {
			largest := uint64(0)
			for _, n := range known {
				largest = max(largest, n.MemoryMiB)
			}
			mem = fmt.Sprintf(", mem %d MiB per node (the largest node has %d MiB)", m, largest)
		}
		if c := req.CPUsPerNode(); c > 1 {
			largest := 0
			for _, n := range known {
				largest = max(largest, n.CPUs)
			}
			mem += fmt.Sprintf(", %d CPUs per node (tasks_per_node x cpus_per_task, or gpus x cpus_per_gpu; the largest node has %d)", c, largest)
		}
		return infeasible("nodes %d: only %s match gpus_per_node %d%s, the constraint and the exclude list; requested node configuration is not available",
			req.Nodes, plural(fit, "node"), req.GPUsPerNode, mem)
	}
	return nil
}
