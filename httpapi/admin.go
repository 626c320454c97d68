package httpapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/slurm"
)

// Admin is the cluster's nodes and queue policy: the node records, root's
// drains and resumes, the policy and what it computes (priorities, fair
// share), the switches' own LLDP reports (`shoal topology report`), and
// stopping this agent. Reads come once the replica is readable; writes
// only through AcceptWrite (proven caller, decoded body, a follower
// forwards), and the leader decides who may make them.
type Admin interface {
	// Nodes is what GET /v1/nodes renders.
	Nodes(ctx context.Context) NodeRecords
	// SetDrain drains node (saying why) or resumes it, for who.
	SetDrain(ctx context.Context, node string, drain bool, reason string, who cluster.Identity) error
	// Policy is the queue policy in force and the replica's index.
	Policy() (api.PolicyResponse, uint64)
	// SetPolicy replaces the policy (root only).
	SetPolicy(ctx context.Context, f cluster.PolicyFile, who cluster.Identity) error
	// Priorities are the pending jobs' priorities, of job (0: all) and
	// user ("": all); FairShare the fair-share tree.
	Priorities(job uint64, user string) ([]api.Priority, uint64)
	FairShare() ([]api.ShareAssoc, uint64)
	// SwitchReports are the reports, ascending by switch, and the
	// replica's index.
	SwitchReports() ([]cluster.SwitchReport, uint64)
	// ReportSwitch records a switch's report (root only).
	ReportSwitch(ctx context.Context, r cluster.SwitchReport, who cluster.Identity) error
	// Leave stops this agent (DrainWaitS: draining first); only root or
	// the agent's own user may. Never forwarded.
	Leave(req api.LeaveRequest, who cluster.Identity) (api.LeaveResponse, error)
}

// HandlePolicy is GET /v1/policy.
func (s *Server) HandlePolicy(w http.ResponseWriter, r *http.Request) {
	readableRead(s, w, r, s.Admin.Policy)
}

// HandleSetPolicy is POST /v1/policy: root replaces the policy.
func (s *Server) HandleSetPolicy(w http.ResponseWriter, r *http.Request) {
	bodyWrite(s, w, r, noAnswer(s.Admin.SetPolicy))
}

// HandlePriority is GET /v1/priority[?job=N][&user=U] (sprio).
func (s *Server) HandlePriority(w http.ResponseWriter, r *http.Request) {
	var job uint64
	if v := r.URL.Query().Get("job"); v != "" {
		n, err := slurm.ParseJobID(v)
		if err != nil {
			WriteError(w, cluster.Mark(cluster.ErrInvalid, fmt.Errorf("?job=: %w", err)))
			return
		}
		job = n
	}
	readableRead(s, w, r, func() ([]api.Priority, uint64) {
		return s.Admin.Priorities(job, r.URL.Query().Get("user"))
	})
}

// HandleFairShare is GET /v1/fairshare (sshare).
func (s *Server) HandleFairShare(w http.ResponseWriter, r *http.Request) {
	readableRead(s, w, r, s.Admin.FairShare)
}

// HandleAgentLeave is POST /v1/agent/leave (shoal leave): this agent
// stops; never forwarded.
func (s *Server) HandleAgentLeave(w http.ResponseWriter, r *http.Request) {
	var req api.LeaveRequest
	if err := DecodeBody(r, &req); err != nil {
		WriteError(w, err)
		return
	}
	who := CallerOf(r)
	if err := RequireProven(who); err != nil {
		WriteError(w, err)
		return
	}
	out, err := s.Admin.Leave(req, who.Who())
	if err != nil {
		WriteError(w, err)
		return
	}
	WriteJSON(w, http.StatusAccepted, 0, out)
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

// HandleNodes is GET /v1/nodes: a blocking query.
func (s *Server) HandleNodes(w http.ResponseWriter, r *http.Request) {
	if err := s.WaitIndex(r); err != nil {
		WriteError(w, err)
		return
	}
	rec := s.Admin.Nodes(r.Context())
	WriteJSON(w, http.StatusOK, rec.Index, NodesOf(rec))
}

// HandleDrain is POST /v1/nodes/{name}/drain.
func (s *Server) HandleDrain(w http.ResponseWriter, r *http.Request) {
	var req api.DrainRequest
	who, here := s.AcceptWrite(w, r, &req)
	if !here {
		return
	}
	s.setDrain(w, r, true, req.Reason, who)
}

// HandleResume is POST /v1/nodes/{name}/resume (no body).
func (s *Server) HandleResume(w http.ResponseWriter, r *http.Request) {
	who, here := s.AcceptWrite(w, r, nil)
	if !here {
		return
	}
	s.setDrain(w, r, false, "", who)
}

func (s *Server) setDrain(w http.ResponseWriter, r *http.Request, drain bool, reason string, who Caller) {
	if err := s.Admin.SetDrain(r.Context(), r.PathValue("name"), drain, reason, who.Who()); err != nil {
		WriteError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, s.Cluster.Index(), struct{}{})
}

// HandleSwitchReports is GET /v1/topology/switches.
func (s *Server) HandleSwitchReports(w http.ResponseWriter, r *http.Request) {
	readableRead(s, w, r, s.Admin.SwitchReports)
}

// HandleReportSwitch is POST /v1/topology/switches: root records what a
// switch's lldpd sees.
func (s *Server) HandleReportSwitch(w http.ResponseWriter, r *http.Request) {
	bodyWrite(s, w, r, noAnswer(s.Admin.ReportSwitch))
}
