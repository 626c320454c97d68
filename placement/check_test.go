package placement

import (
	"errors"
	"testing"

	"github.com/shoal-sched/shoal/cluster"
)

func TestCheck(t *testing.T) {
	four := cat(mkLeaf("n", 2, 8, "a", "s0"), mkLeaf("m", 2, 4, "b", "s0"))
	mixed := []*cluster.Node{
		mkNode("n1", 8, "a", "s0"), withStatus(mkNode("n2", 8, "a", "s0"), cluster.NodeDown),
		drained(mkNode("n3", 8, "a", "s0")), withStatus(mkNode("n4", 16, "a", "s0"), cluster.NodeLeft),
		nil,
	}
	tests := []struct {
		name       string
		nodes      []*cluster.Node
		req        cluster.Request
		want       string // "" for no error
		infeasible bool
	}{
		{"fits", four, cluster.Request{Nodes: 4, GPUsPerNode: 4}, "", false},
		{"no GPUs", four, cluster.Request{Nodes: 4}, "", false},
		{"too many nodes", four, cluster.Request{Nodes: 5, GPUsPerNode: 1}, "nodes 5: the cluster has 4 nodes", true},
		{"too many GPUs", four, cluster.Request{Nodes: 1, GPUsPerNode: 16}, "gpus_per_node 16: the largest node has 8 GPUs", true},
		{"too few big nodes", four, cluster.Request{Nodes: 3, GPUsPerNode: 8}, "nodes 3 with gpus_per_node 8: only 2 nodes have 8 or more GPUs", true},
		// Only down and drained nodes can hold it: it passes and pends
		// with ReqNodeNotAvail.
		{"down and drained count", mixed, cluster.Request{Nodes: 3, GPUsPerNode: 8}, "", false},
		{"left nodes do not count", mixed, cluster.Request{Nodes: 1, GPUsPerNode: 16}, "gpus_per_node 16: the largest node has 8 GPUs", true},
		{"one node", mixed[:1], cluster.Request{Nodes: 2}, "nodes 2: the cluster has 1 node", true},
		{"one big node", cat(mkLeaf("n", 1, 8, "a", "s0"), mkLeaf("m", 1, 4, "a", "s0")), cluster.Request{Nodes: 2, GPUsPerNode: 8}, "nodes 2 with gpus_per_node 8: only 1 node has 8 or more GPUs", true},
		{"one GPU", []*cluster.Node{mkNode("n1", 1, "a", "s0")}, cluster.Request{Nodes: 1, GPUsPerNode: 2}, "gpus_per_node 2: the largest node has 1 GPU", true},
		{"empty cluster", nil, cluster.Request{Nodes: 1}, "nodes 1: the cluster has 0 nodes", true},
		{"zero nodes", four, cluster.Request{Nodes: 0}, "nodes 0: want at least 1", false},
		{"negative GPUs", four, cluster.Request{Nodes: 1, GPUsPerNode: -1}, "gpus_per_node -1: want 0 or more", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.nodes, tt.req)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Check(%+v) = %q; want %q", tt.req, got, tt.want)
			}
			if errors.Is(err, ErrInfeasible) != tt.infeasible {
				t.Errorf("errors.Is(Check(%+v), ErrInfeasible) = %v; want %v", tt.req, !tt.infeasible, tt.infeasible)
			}
		})
	}
}
