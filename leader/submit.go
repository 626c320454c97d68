package leader

import (
	"fmt"
	"slices"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/placement"
)

// CheckSubmit validates spec and judges it against its partition's nodes
// among nodes (the nodes the log holds and the live agents that have not
// registered yet: a submit is judged against the cluster as it is about
// to be); it returns the spec as the FSM will record it (the FSM names
// the partition again when it applies the submit). It is pure.
func CheckSubmit(v *fsm.View, nodes []*cluster.Node, spec cluster.Spec) (cluster.Spec, error) {
	if err := spec.Validate(); err != nil {
		return spec, invalid(err)
	}
	resolved, part, err := v.Policy().ResolvePartition(spec)
	if err != nil {
		return spec, invalid(err)
	}
	if part != nil && len(part.Nodes) > 0 {
		nodes = slices.DeleteFunc(slices.Clone(nodes), func(n *cluster.Node) bool { return !part.Has(n.Name) })
	}
	if err := placement.Check(nodes, resolved.Request); err != nil {
		if part != nil {
			err = fmt.Errorf("partition %s: %w", part.Name, err)
		}
		return spec, invalid(err)
	}
	return resolved, nil
}

// TestOnly is sbatch --test-only's answer: the id the job would get, its
// spec as recorded, and when and where it could start.
type TestOnly struct {
	Job   cluster.JobID
	Spec  cluster.Spec
	Start time.Time
	Nodes []string
	CPUs  int
}

// PlanTestOnly checks spec as a submit would be (CheckSubmit) and
// estimates when and where it could start at now
// (placement.EarliestStart), without submitting it; a conflict when no
// start can be estimated (the answer still names the job). It is pure.
func PlanTestOnly(v *fsm.View, nodes []*cluster.Node, spec cluster.Spec, now time.Time) (TestOnly, error) {
	resolved, err := CheckSubmit(v, nodes, spec)
	if err != nil {
		return TestOnly{}, err
	}
	j := &cluster.Job{ID: v.LastJobID() + 1, Spec: resolved, State: cluster.JobPending, SubmitTime: now}
	var parts []cluster.Partition
	if p := v.Policy(); p != nil {
		parts = p.Partitions
	}
	start, at, ok := placement.EarliestStart(placement.NewView(v.Nodes(), v.Jobs()).WithPartitions(parts).WithSwitchLinks(v.SwitchLinks()), j, now)
	out := TestOnly{Job: j.ID, Spec: resolved, Nodes: []string{}}
	if !ok {
		return out, conflict(fmt.Errorf("job %d: no start can be estimated: it waits on jobs without a time limit or on nodes that are down", j.ID))
	}
	out.Start = start
	for _, n := range at {
		out.Nodes = append(out.Nodes, n.Node)
	}
	out.CPUs = resolved.Request.Ranks(resolved.Request.Nodes) * max(1, resolved.Request.CPUsPerTask)
	return out, nil
}

// SpreadGPUs turns --gpus g without --nodes into the fewest nodes that
// can hold g evenly (n nodes of g/n GPUs, the smallest n for which g/n is
// a whole number that n of the nodes' GPU counts, sizes, reach), as
// Slurm's -G spreads. A g no such split fits is left on one node, for
// the submit check to refuse with its reason; a g out of range is
// refused. It is pure.
func SpreadGPUs(g int, sizes []int) (nodes, perNode int, err error) {
	if g < 0 || g > cluster.MaxNodesPerJob*cluster.MaxGPUsPerNode {
		return 0, 0, invalid(fmt.Errorf("gpus_total %d: want 1 to %d", g, cluster.MaxNodesPerJob*cluster.MaxGPUsPerNode))
	}
	for n := 1; n <= min(g, len(sizes)); n++ {
		if g%n != 0 {
			continue
		}
		per, enough := g/n, 0
		for _, s := range sizes {
			if s >= per {
				enough++
			}
		}
		if enough >= n {
			return n, per, nil
		}
	}
	return 1, g, nil
}

// QueueFields checks a submit's queue-policy fields for c: a negative
// nice raises priority, so only root may ask for one (Slurm's rule); a
// QoS the policy on v does not name is accepted with a warning, which the
// answer carries. It is pure.
func QueueFields(v *fsm.View, spec cluster.Spec, c Caller) (warnings []string, err error) {
	if spec.Nice < 0 && c.UID != 0 {
		return nil, forbidden(fmt.Errorf("nice %d: %w: only root may set a negative nice", spec.Nice, cluster.ErrForbidden))
	}
	if p := QueuePolicy(v); spec.QoS != "" && !p.HasQoS(spec.QoS) {
		warnings = append(warnings, fmt.Sprintf("--qos %s: the queue policy names no such QoS; the job gets QoS priority 0", spec.QoS))
	}
	return warnings, nil
}
