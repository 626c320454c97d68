package httpapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/slurm"
)

// Queue is the queue policy and what it computes, read from this agent's
// replica once it is readable, and replaced by root through the leader.
type Queue interface {
	// Policy is the queue policy in force and the replica's index.
	Policy() (api.PolicyResponse, uint64)
	// SetPolicy replaces the policy (root only).
	SetPolicy(ctx context.Context, f cluster.PolicyFile, who cluster.Identity) error
	// Priorities are the pending jobs' priorities, of job (0: all) and
	// user ("": all); FairShare the fair-share tree.
	Priorities(job uint64, user string) ([]api.Priority, uint64)
	FairShare() ([]api.ShareAssoc, uint64)
}

// HandlePolicy is GET /v1/policy.
func (s *Server) HandlePolicy(w http.ResponseWriter, r *http.Request) {
	if err := s.WaitReadable(r.Context()); err != nil {
		WriteError(w, err)
		return
	}
	out, index := s.b.Policy()
	WriteJSON(w, http.StatusOK, index, out)
}

// HandleSetPolicy is POST /v1/policy: root replaces the policy.
func (s *Server) HandleSetPolicy(w http.ResponseWriter, r *http.Request) {
	bodyWrite(s, w, r, noAnswer(s.b.SetPolicy))
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
	if err := s.WaitReadable(r.Context()); err != nil {
		WriteError(w, err)
		return
	}
	out, index := s.b.Priorities(job, r.URL.Query().Get("user"))
	WriteJSON(w, http.StatusOK, index, out)
}

// HandleFairShare is GET /v1/fairshare (sshare).
func (s *Server) HandleFairShare(w http.ResponseWriter, r *http.Request) {
	if err := s.WaitReadable(r.Context()); err != nil {
		WriteError(w, err)
		return
	}
	out, index := s.b.FairShare()
	WriteJSON(w, http.StatusOK, index, out)
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
	out, err := s.b.Leave(req, who.Who())
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
	rec := s.b.Nodes(r.Context())
	WriteJSON(w, http.StatusOK, rec.Index, NodesOf(rec))
}

// Writes are the changes the leader carries out for a caller. A write
// reaches them only through AcceptWrite: proven caller, decoded body, and
// on a follower forwarded to the leader instead.
type Writes interface {
	// Index is the replica's applied index, the X-Shoal-Index of a
	// write's answer.
	Index() uint64
	// SetDrain drains node (saying why) or resumes it, for who.
	SetDrain(ctx context.Context, node string, drain bool, reason string, who cluster.Identity) error
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
	if err := s.b.SetDrain(r.Context(), r.PathValue("name"), drain, reason, who.Who()); err != nil {
		WriteError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, s.b.Index(), struct{}{})
}

// Switches are the switches' own LLDP reports (`shoal topology report`),
// read from this agent's replica and recorded by root through the
// leader.
type Switches interface {
	// SwitchReports are the reports, ascending by switch, and the
	// replica's index.
	SwitchReports() ([]cluster.SwitchReport, uint64)
	// ReportSwitch records a switch's report (root only).
	ReportSwitch(ctx context.Context, r cluster.SwitchReport, who cluster.Identity) error
}

// HandleSwitchReports is GET /v1/topology/switches.
func (s *Server) HandleSwitchReports(w http.ResponseWriter, r *http.Request) {
	if err := s.WaitReadable(r.Context()); err != nil {
		WriteError(w, err)
		return
	}
	out, index := s.b.SwitchReports()
	WriteJSON(w, http.StatusOK, index, out)
}

// HandleReportSwitch is POST /v1/topology/switches: root records what a
// switch's lldpd sees.
func (s *Server) HandleReportSwitch(w http.ResponseWriter, r *http.Request) {
	bodyWrite(s, w, r, noAnswer(s.b.ReportSwitch))
}
