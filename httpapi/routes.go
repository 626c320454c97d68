package httpapi

import (
	"fmt"
	"net/http"

	"github.com/shoal-sched/shoal/cluster"
)

// Handlers are the endpoints whose work is the agent's own: writes the
// leader carries out (they start with Server.AcceptWrite), a job's logs
// and steps, joins, certificates and keys, and a node's own log reads. Routes serves the rest itself. Every field must be set.
type Handlers struct {
	Submit, Job, Cancel, Hold, Release, Requeue, SetPriority http.HandlerFunc
	Update                                                   http.HandlerFunc
	Logs, JobGPU, StartStep, CancelStep, Signal, Pty         http.HandlerFunc
	Priority, FairShare, Policy, SetPolicy                   http.HandlerFunc
	CreateJoinToken, CreateUserToken, RevokeUserToken        http.HandlerFunc
	Keyring, ChangeKeyring, Join, Revoke                     http.HandlerFunc
	Renew, ClusterCA                                         http.HandlerFunc
	AgentLeave, LocalLogs, LocalGPU                          http.HandlerFunc
	// Metrics is the Prometheus exposition (package metrics); UI the web
	// view's files (package ui), public.
	Metrics, UI http.Handler
}

// Routes is the API's route table: every path it answers, and a 404
// naming the method and path for any other.
func (s *Server) Routes(h Handlers) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/jobs", s.HandleJobs)
	mux.HandleFunc("POST /v1/jobs", h.Submit)
	mux.HandleFunc("GET /v1/jobs/{id}", h.Job)
	mux.HandleFunc("DELETE /v1/jobs/{id}", h.Cancel)
	mux.HandleFunc("POST /v1/jobs/{id}/cancel", h.Cancel)
	mux.HandleFunc("POST /v1/jobs/{id}/hold", h.Hold)
	mux.HandleFunc("POST /v1/jobs/{id}/release", h.Release)
	mux.HandleFunc("POST /v1/jobs/{id}/requeue", h.Requeue)
	mux.HandleFunc("POST /v1/jobs/{id}/priority", h.SetPriority)
	mux.HandleFunc("POST /v1/jobs/{id}/update", h.Update)
	mux.HandleFunc("GET /v1/jobs/{id}/logs", h.Logs)
	mux.HandleFunc("GET /v1/jobs/{id}/gpu", h.JobGPU)
	mux.HandleFunc("POST /v1/jobs/{id}/steps", h.StartStep)
	mux.HandleFunc("POST /v1/jobs/{id}/steps/{step}/cancel", h.CancelStep)
	mux.HandleFunc("POST /v1/jobs/{id}/signal", h.Signal)
	mux.HandleFunc("GET /v1/jobs/{id}/pty", h.Pty)
	mux.HandleFunc("GET /v1/nodes", s.HandleNodes)
	mux.HandleFunc("POST /v1/nodes/{name}/drain", s.HandleDrain)
	mux.HandleFunc("POST /v1/nodes/{name}/resume", s.HandleResume)
	mux.HandleFunc("GET /v1/members", s.HandleMembers)
	mux.HandleFunc("GET /v1/leader", s.HandleLeader)
	mux.HandleFunc("GET /v1/status", s.HandleStatus)
	mux.HandleFunc("GET /v1/priority", h.Priority)
	mux.HandleFunc("GET /v1/fairshare", h.FairShare)
	mux.HandleFunc("GET /v1/policy", h.Policy)
	mux.HandleFunc("POST /v1/policy", h.SetPolicy)
	mux.HandleFunc("POST /v1/join-tokens", h.CreateJoinToken)
	mux.HandleFunc("POST /v1/tokens", h.CreateUserToken)
	mux.HandleFunc("GET /v1/keyring", h.Keyring)
	mux.HandleFunc("POST /v1/keyring", h.ChangeKeyring)
	mux.HandleFunc("POST /v1/tokens/revoke", h.RevokeUserToken)
	mux.HandleFunc("POST /v1/join", h.Join)
	mux.HandleFunc("POST /v1/nodes/{name}/revoke", h.Revoke)
	mux.HandleFunc("POST /v1/internal/renew", h.Renew)
	mux.HandleFunc("POST /v1/internal/cluster-ca", h.ClusterCA)
	mux.HandleFunc("POST /v1/internal/heartbeat", s.HandleHeartbeat)
	mux.HandleFunc("POST /v1/internal/task", s.HandleTaskEvent)
	mux.HandleFunc("POST /v1/internal/leave", s.HandleLeave)
	mux.HandleFunc("POST /v1/internal/drain", s.HandleDrainSelf)
	mux.HandleFunc("POST /v1/agent/leave", h.AgentLeave)
	mux.HandleFunc("GET /v1/internal/logs/{id}", h.LocalLogs)
	mux.HandleFunc("GET /v1/internal/gpu/{id}", h.LocalGPU)
	mux.Handle("GET /metrics", h.Metrics)
	mux.Handle("GET /ui", h.UI)
	mux.Handle("GET /ui/", h.UI)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, cluster.Mark(cluster.ErrNotFound, fmt.Errorf("%s %s: no such endpoint", r.Method, r.URL.Path)))
	})
	return mux
}
