package sim

import (
	"fmt"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// MaxNodes bounds the simulated cluster.
const MaxNodes = 1_000_000

// Cluster is the simulated cluster's shape; see the package doc.
type Cluster struct {
	Nodes          int // nodes in all
	GPUsPerNode    int // GPUs on every node
	LeafSize       int // nodes per leaf switch
	LeavesPerSpine int // leaf switches per spine
}

// Validate names the first field out of range.
func (c Cluster) Validate() error {
	switch {
	case c.Nodes < 1 || c.Nodes > MaxNodes:
		return fmt.Errorf("nodes %d: want 1 to %d", c.Nodes, MaxNodes)
	case c.GPUsPerNode < 1 || c.GPUsPerNode > cluster.MaxGPUsPerNode:
		return fmt.Errorf("gpus-per-node %d: want 1 to %d", c.GPUsPerNode, cluster.MaxGPUsPerNode)
	case c.LeafSize < 1:
		return fmt.Errorf("leaf-size %d: want at least 1", c.LeafSize)
	case c.LeavesPerSpine < 1:
		return fmt.Errorf("leaves-per-spine %d: want at least 1", c.LeavesPerSpine)
	}
	return nil
}

// String describes the shape in words.
func (c Cluster) String() string {
	return fmt.Sprintf("%d nodes x %d GPUs, %d nodes per leaf, %d leaves per spine",
		c.Nodes, c.GPUsPerNode, c.LeafSize, c.LeavesPerSpine)
}

// TotalGPUs is the cluster's GPU count.
func (c Cluster) TotalGPUs() int { return c.Nodes * c.GPUsPerNode }

// digits is how many decimal digits n-1 needs, at least min.
func digits(n, min int) int {
	d := 1
	for x := n - 1; x >= 10; x /= 10 {
		d++
	}
	return max(d, min)
}

// NodeName is node i's name: n0000, n0001, ...; zero-padded so that names
// sort in index order.
func (c Cluster) NodeName(i int) string { return fmt.Sprintf("n%0*d", digits(c.Nodes, 4), i) }

// Leaf is the index of node i's leaf switch.
func (c Cluster) Leaf(i int) int { return i / c.LeafSize }

// Build returns the cluster's nodes, all up, in index order. It assumes
// a valid Cluster.
func (c Cluster) Build() []*cluster.Node {
	leaves := (c.Nodes + c.LeafSize - 1) / c.LeafSize
	leafW, spineW := digits(leaves, 4), digits((leaves+c.LeavesPerSpine-1)/c.LeavesPerSpine, 3)
	gpus := make([]cluster.GPU, c.Nodes*c.GPUsPerNode)
	nodes := make([]*cluster.Node, c.Nodes)
	for i := range nodes {
		g := gpus[i*c.GPUsPerNode : (i+1)*c.GPUsPerNode : (i+1)*c.GPUsPerNode]
		for k := range g {
			g[k] = cluster.GPU{Index: k, NUMA: -1}
		}
		leaf := c.Leaf(i)
		nodes[i] = &cluster.Node{
			Name:   c.NodeName(i),
			GPUs:   g,
			Status: cluster.NodeUp,
			Topology: cluster.Topology{
				Switch:       fmt.Sprintf("leaf%0*d", leafW, leaf),
				SwitchParent: fmt.Sprintf("spine%0*d", spineW, leaf/c.LeavesPerSpine),
			},
		}
	}
	return nodes
}

// Request is the cluster.Request the simulator submits for trace job j;
// see the package doc for how a shape the trace leaves out is derived.
// Its time limit is the job's duration, at least 1 s (Replay replaces it
// under LimitsNoisy).
func (c Cluster) Request(j Job) cluster.Request {
	r := cluster.Request{Nodes: j.Nodes, GPUsPerNode: j.GPUsPerNode, TasksPerNode: 1, CPUsPerTask: 1,
		TimeLimit: time.Duration(max(j.Duration, 1)) * time.Second}
	if r.Nodes > 0 && r.GPUsPerNode > 0 {
		return r
	}
	g := max(c.GPUsPerNode, 1)
	if j.GPUs <= g {
		r.Nodes, r.GPUsPerNode = 1, j.GPUs
		return r
	}
	r.Nodes = (j.GPUs + g - 1) / g
	r.GPUsPerNode = g
	if j.GPUs%r.Nodes == 0 {
		r.GPUsPerNode = j.GPUs / r.Nodes
	}
	return r
}
