package agent

import (
	"context"
	"slices"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/placement"
)

// packSubmit is spec with its ranks packed as Slurm's allocation packs
// them on idle nodes (cluster.Request.Packed: -n 5 on 2 nodes runs 4
// and 1), sized by the CPUs of the nodes its partition has, when the
// packed job fits them and every raft server applies Pack (protocol 4);
// otherwise spec as it is, laid out evenly.
func (l *leaderSide) packSubmit(ctx context.Context, v *fsm.View, spec cluster.Spec) cluster.Spec {
	if spec.Validate() != nil {
		return spec // leader.CheckSubmit says why
	}
	_, part, err := v.Policy().ResolvePartition(spec)
	if err != nil {
		return spec
	}
	nodes := l.knownNodes(v)
	if part != nil && len(part.Nodes) > 0 {
		nodes = slices.DeleteFunc(slices.Clone(nodes), func(n *cluster.Node) bool { return !part.Has(n.Name) })
	}
	cpus := make([]int, 0, len(nodes))
	for _, n := range nodes {
		if n.Status == cluster.NodeUp {
			cpus = append(cpus, n.CPUs)
		}
	}
	packed := spec
	packed.Request = spec.Request.Packed(cpus)
	if !packed.Request.Pack {
		return spec
	}
	resolved, _, err := v.Policy().ResolvePartition(packed)
	if err != nil || placement.Check(nodes, resolved.Request) != nil {
		return spec
	}
	if l.checkProtocol(ctx, fsm.CmdSubmitJob, fsm.Needs(fsm.CmdSubmitJob, fsm.SubmitJob{Spec: packed})) != nil {
		return spec // an older server would lay the ranks out evenly
	}
	return packed
}
