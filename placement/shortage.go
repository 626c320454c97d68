package placement

import (
	"fmt"

	"github.com/shoal-sched/shoal/cluster"
)

// Shortage says what a job pending with Resources waits for, which
// Slurm's one word leaves unsaid: GPUs, CPUs or memory, with the counts
// that show it, or "" when there are enough nodes with all three free (the
// job then waits on something else: --switches, a reservation, the order
// of the queue). It counts the view's usable nodes the job may use (its
// partition and node set, not held whole by another job) and never
// modifies the view.
func Shortage(v *View, j *cluster.Job) string {
	if v == nil || j == nil {
		return ""
	}
	req := j.Spec.Request
	var c *cluster.Constraint
	if req.Constraint != "" {
		var err error
		if c, err = cluster.ParseConstraint(req.Constraint); err != nil {
			return ""
		}
	}
	may, gpus, cpus, mem := 0, 0, 0, 0
	for i := range v.nodes {
		n := &v.nodes[i]
		if !n.usable || n.excl > 0 || !fitsNode(n.node, req, c) || !v.inPartition(i, req.Partition) {
			continue
		}
		may++
		if req.Exclusive && n.jobs > 0 {
			continue
		}
		if n.free < req.GPUsPerNode {
			continue
		}
		gpus++
		if n.cfree < req.CPUsOn(n.node) {
			continue
		}
		cpus++
		if n.mfree >= req.MemOn(n.node) {
			mem++
		}
	}
	need := req.Nodes
	switch {
	case gpus < need && req.Exclusive:
		return fmt.Sprintf("nodes: %d of the %d nodes it may use are idle, it needs %d whole", gpus, may, need)
	case gpus < need:
		return fmt.Sprintf("GPUs: %d of the %d nodes it may use have %d free GPUs, it needs %d", gpus, may, req.GPUsPerNode, need)
	case cpus < need:
		return fmt.Sprintf("CPUs: %d of the %d nodes with %d free GPUs have %d free CPUs, it needs %d", cpus, gpus, req.GPUsPerNode, req.CPUsPerNode(), need)
	case mem < need:
		return fmt.Sprintf("memory: %d of the %d nodes with its GPUs and CPUs free have %d MiB free, it needs %d", mem, cpus, req.MemPerNode(), need)
	}
	return ""
}
