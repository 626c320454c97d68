package agent

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

// JobGPU is what job id's GPUs did over time on each of its nodes, asked
// of those nodes (the series are theirs, never replicated). A node that
// cannot answer has an entry with Error.
func (r relayAPI) JobGPU(ctx context.Context, id cluster.JobID, who cluster.Identity) ([]api.JobGPU, uint64, error) {
	v, j, err := r.jobFor(id, "read the GPU use of", who)
	if err != nil {
		return nil, 0, err
	}
	out := []api.JobGPU{}
	if j.Alloc == nil {
		return out, v.Index, nil
	}
	for _, name := range j.Alloc.Hosts() {
		if name == r.cfg.Name {
			out = append(out, r.LocalGPU(id)...)
			continue
		}
		var got []api.JobGPU
		if err := r.askNode(ctx, v, name, fmt.Sprintf("/v1/internal/gpu/%d", id), &got); err != nil {
			out = append(out, api.JobGPU{Node: name, Incarnation: j.Incarnation, Error: err.Error()})
			continue
		}
		out = append(out, got...)
	}
	return out, v.Index, nil
}

// LocalGPU is this node's series of job id, one per run sampled here.
func (r relayAPI) LocalGPU(id cluster.JobID) []api.JobGPU {
	series := r.work.gpuUsage.SeriesOf(id)
	out := make([]api.JobGPU, 0, len(series))
	for _, inc := range slices.Sorted(maps.Keys(series)) {
		out = append(out, api.JobGPU{Node: r.cfg.Name, Incarnation: inc, Series: series[inc]})
	}
	return out
}
