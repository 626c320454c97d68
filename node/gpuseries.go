package node

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/httpapi"
)

// handleJobGPU answers GET /v1/jobs/{id}/gpu: what the job's GPUs did over
// time on each of its nodes, asked of those nodes (the series are theirs,
// never replicated). A node that cannot answer has an entry with Error.
func (a *Agent) handleJobGPU(w http.ResponseWriter, r *http.Request) {
	id, err := jobID(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	v, err := a.readView(r.Context())
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	j, ok := v.Job(id)
	if !ok {
		j, ok = v.ArchivedJob(id)
	}
	if !ok {
		httpapi.WriteError(w, notFound(fmt.Errorf("job %d: no such job", id)))
		return
	}
	if err := mayTouch(v, "read the GPU use of", j, callerOf(r)); err != nil {
		httpapi.WriteError(w, err)
		return
	}
	out := []api.JobGPU{}
	if j.Alloc != nil {
		for _, name := range j.Alloc.NodeNames() {
			got, err := a.nodeGPU(r.Context(), v, name, id)
			if err != nil {
				out = append(out, api.JobGPU{Node: name, Incarnation: j.Incarnation, Error: err.Error()})
				continue
			}
			out = append(out, got...)
		}
	}
	slices.SortStableFunc(out, func(x, y api.JobGPU) int {
		return cmp.Or(cmp.Compare(x.Incarnation, y.Incarnation), cmp.Compare(x.Node, y.Node))
	})
	httpapi.WriteJSON(w, http.StatusOK, v.Index, out)
}

// nodeGPU reads a job's GPU series from the node that sampled them.
func (a *Agent) nodeGPU(ctx context.Context, v *fsm.View, node string, id cluster.JobID) ([]api.JobGPU, error) {
	if node == a.cfg.Name {
		return a.localGPU(id), nil
	}
	n, ok := v.Node(node)
	if !ok || n.APIAddr == "" {
		return nil, fmt.Errorf("node %s: address unknown", node)
	}
	c, err := a.peers.get(node, n.APIAddr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, forwardTimeout)
	defer cancel()
	var out []api.JobGPU
	if _, err := c.Do(ctx, http.MethodGet, fmt.Sprintf("/v1/internal/gpu/%d", id), nil, &out); err != nil {
		return nil, fmt.Errorf("node %s: %w", node, err)
	}
	return out, nil
}

// handleLocalGPU answers another agent's GET /v1/internal/gpu/{id}.
func (a *Agent) handleLocalGPU(w http.ResponseWriter, r *http.Request) {
	if err := a.http.RequireNode(r, ""); err != nil {
		httpapi.WriteError(w, err)
		return
	}
	id, err := jobID(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, 0, a.localGPU(id))
}

// localGPU is this node's series of job id, one per run sampled here.
func (a *Agent) localGPU(id cluster.JobID) []api.JobGPU {
	series := a.gpuUsage.seriesOf(id)
	out := make([]api.JobGPU, 0, len(series))
	for _, inc := range slices.Sorted(maps.Keys(series)) {
		out = append(out, api.JobGPU{Node: a.cfg.Name, Incarnation: inc, Series: series[inc]})
	}
	return out
}
