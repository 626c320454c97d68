package httpapi

import (
	"context"
	"net/http"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

// Records is what the list endpoints read from the agent's replica. Each
// call reads one consistent view, after the Server's blocking query.
type Records interface {
	// Jobs are the jobs who may see: the live ones, or with all the
	// finished and archived ones too (sacct); index is the view's.
	Jobs(who cluster.Identity, all bool) (jobs []*cluster.Job, index uint64)
	// Nodes is what GET /v1/nodes renders.
	Nodes(ctx context.Context) NodeRecords
}

// NodeRecords is one view's nodes and what NodesOf needs to render them.
type NodeRecords struct {
	Index uint64
	Nodes []*cluster.Node
	// Jobs are the live jobs: their allocations make nodes busy.
	Jobs []*cluster.Job
	// FreeGPUs is how many GPUs of each node no job holds.
	FreeGPUs map[string]int
	// Roles maps raft server IDs to leader, voter or nonvoter.
	Roles map[string]string
}

// HandleJobs is GET /v1/jobs[?all=1]: a blocking query.
func (s *Server) HandleJobs(w http.ResponseWriter, r *http.Request) {
	if err := s.WaitIndex(r); err != nil {
		WriteError(w, err)
		return
	}
	jobs, index := s.b.Jobs(CallerOf(r).Who(), r.URL.Query().Get("all") != "")
	out := []api.Job{}
	for _, j := range jobs {
		out = append(out, JobOf(j))
	}
	WriteJSON(w, http.StatusOK, index, out)
}

// HandleNodes is GET /v1/nodes: a blocking query.
func (s *Server) HandleNodes(w http.ResponseWriter, r *http.Request) {
	if err := s.WaitIndex(r); err != nil {
		WriteError(w, err)
		return
	}
	rec := s.b.Nodes(r.Context())
	WriteJSON(w, http.StatusOK, rec.Index, NodesOf(rec))
}

// NodesOf renders the nodes of a view as sinfo and shoal nodes show them.
func NodesOf(rec NodeRecords) []api.Node {
	out := []api.Node{}
	busy := map[string]bool{}
	cpus, mem := map[string]int{}, map[string]uint64{}
	for _, j := range rec.Jobs {
		if j.Alloc == nil {
			continue
		}
		for _, n := range j.Alloc.Nodes {
			if !n.Released {
				busy[n.Node] = true
				cpus[n.Node] += len(n.CPUs)
				mem[n.Node] += n.MemMiB
			}
		}
	}
	for _, n := range rec.Nodes {
		free := rec.FreeGPUs[n.Name]
		out = append(out, api.Node{
			Name: n.Name, State: NodeState(n, free, busy[n.Name]), GPUs: len(n.GPUs), GPUsFree: free,
			GPUModel: GPUModel(n), CPUs: n.CPUs, MemoryMiB: n.MemoryMiB,
			Switch: n.Topology.Switch, SwitchParent: n.Topology.SwitchParent, Block: n.Topology.Block,
			Raft: RoleOr(rec.Roles, n.Name), Address: n.APIAddr, Reason: n.DrainReason, Version: n.Version,
			Features: n.Features, CPUsAlloc: cpus[n.Name], MemAllocMiB: mem[n.Name],
			Sockets: n.Sockets, CoresPerSocket: n.CoresPerSocket, ThreadsPerCore: n.ThreadsPerCore,
		})
	}
	return out
}
