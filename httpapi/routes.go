package httpapi

import (
	"fmt"
	"net/http"

	"github.com/shoal-sched/shoal/cluster"
)

// Handlers are the endpoints the API does not serve itself: the
// Prometheus exposition (package metrics) and the web view's files
// (package ui, public). Every field must be set.
type Handlers struct {
	Metrics, UI http.Handler
}

// Routes is the API's route table: every path it answers, and a 404
// naming the method and path for any other.
func (s *Server) Routes(h Handlers) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/jobs", s.replicaRead(s.HandleJobs))
	mux.HandleFunc("POST /v1/jobs", s.HandleSubmit)
	mux.HandleFunc("GET /v1/jobs/{id}", s.replicaRead(s.HandleJob))
	mux.HandleFunc("DELETE /v1/jobs/{id}", s.HandleCancel)
	mux.HandleFunc("POST /v1/jobs/{id}/cancel", s.HandleCancel)
	mux.HandleFunc("POST /v1/jobs/{id}/hold", s.HandleHold)
	mux.HandleFunc("POST /v1/jobs/{id}/release", s.HandleRelease)
	mux.HandleFunc("POST /v1/jobs/{id}/requeue", s.HandleRequeue)
	mux.HandleFunc("POST /v1/jobs/{id}/priority", s.HandleSetPriority)
	mux.HandleFunc("POST /v1/jobs/{id}/update", s.HandleUpdate)
	mux.HandleFunc("GET /v1/jobs/{id}/logs", s.replicaRead(s.HandleLogs))
	mux.HandleFunc("GET /v1/jobs/{id}/gpu", s.replicaRead(s.HandleJobGPU))
	mux.HandleFunc("POST /v1/jobs/{id}/steps", s.HandleStartStep)
	mux.HandleFunc("POST /v1/jobs/{id}/steps/{step}/cancel", s.HandleCancelStep)
	mux.HandleFunc("POST /v1/jobs/{id}/signal", s.HandleSignal)
	mux.HandleFunc("GET /v1/jobs/{id}/pty", s.HandlePty)
	mux.HandleFunc("GET /v1/jobs/{id}/stdin", s.HandleStdin)
	mux.HandleFunc("GET /v1/jobs/{id}/pmix", s.HandlePMIx)
	mux.HandleFunc("PUT /v1/jobs/{id}/bcast", s.HandleBcast)
	mux.HandleFunc("GET /v1/nodes", s.replicaRead(s.HandleNodes))
	mux.HandleFunc("GET /v1/topology/switches", s.replicaRead(s.HandleSwitchReports))
	mux.HandleFunc("POST /v1/topology/switches", s.HandleReportSwitch)
	mux.HandleFunc("POST /v1/nodes/{name}/drain", s.HandleDrain)
	mux.HandleFunc("POST /v1/nodes/{name}/resume", s.HandleResume)
	mux.HandleFunc("GET /v1/members", s.HandleMembers)
	mux.HandleFunc("GET /v1/leader", s.HandleLeader)
	mux.HandleFunc("GET /v1/status", s.HandleStatus)
	mux.HandleFunc("GET /v1/priority", s.replicaRead(s.HandlePriority))
	mux.HandleFunc("GET /v1/fairshare", s.replicaRead(s.HandleFairShare))
	mux.HandleFunc("GET /v1/policy", s.replicaRead(s.HandlePolicy))
	mux.HandleFunc("POST /v1/policy", s.HandleSetPolicy)
	mux.HandleFunc("POST /v1/join-tokens", s.HandleCreateJoinToken)
	mux.HandleFunc("POST /v1/tokens", s.HandleCreateUserToken)
	mux.HandleFunc("GET /v1/keyring", s.HandleKeyring)
	mux.HandleFunc("POST /v1/keyring", s.HandleChangeKeyring)
	mux.HandleFunc("POST /v1/tokens/revoke", s.HandleRevokeUserToken)
	mux.HandleFunc("POST /v1/join", s.HandleJoin)
	mux.HandleFunc("POST /v1/nodes/{name}/revoke", s.HandleRevoke)
	mux.HandleFunc("POST /v1/internal/renew", s.HandleRenew)
	mux.HandleFunc("POST /v1/internal/cluster-ca", s.HandleClusterCA)
	mux.HandleFunc("POST /v1/internal/heartbeat", s.HandleHeartbeat)
	mux.HandleFunc("POST /v1/internal/task", s.HandleTaskEvent)
	mux.HandleFunc("POST /v1/internal/leave", s.HandleLeave)
	mux.HandleFunc("POST /v1/internal/drain", s.HandleDrainSelf)
	mux.HandleFunc("POST /v1/agent/leave", s.HandleAgentLeave)
	mux.HandleFunc("GET /v1/internal/follow", s.HandleFollow)
	mux.HandleFunc("GET /v1/internal/logs/{id}", s.HandleLocalLogs)
	mux.HandleFunc("GET /v1/internal/gpu/{id}", s.HandleLocalGPU)
	mux.Handle("GET /metrics", h.Metrics)
	mux.Handle("GET /ui", h.UI)
	mux.Handle("GET /ui/", h.UI)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, cluster.Mark(cluster.ErrNotFound, fmt.Errorf("%s %s: no such endpoint", r.Method, r.URL.Path)))
	})
	return mux
}
