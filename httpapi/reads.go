package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/shoal-sched/shoal/api"
)

// Info is what the agent tells about itself and the cluster it is in:
// its status, the leader, the gossip members, and, to a worker that
// follows it, the hints and its jobs' state (follow.go).
type Info interface {
	// Status is this agent's own status (GET /v1/status).
	Status() api.Status
	// CurrentLeader names the leader and its API address, or says why
	// none is known (marked cluster.ErrUnavailable).
	CurrentLeader() (api.Leader, error)
	// Members are the cluster's gossip members as this agent sees them,
	// rendered.
	Members() []api.Member
	// Follow is a server's side of GET /v1/internal/follow
	// (api.FollowReply): it waits up to wait for node's jobs to differ
	// from digest, or for the replica to reach lease while index is
	// behind it.
	Follow(ctx context.Context, node string, index uint64, digest string, lease uint64, wait time.Duration) (api.FollowReply, error)
}

// HandleStatus is GET /v1/status: public, served from this agent alone
// (no read floor: it says how far this replica is).
func (s *Server) HandleStatus(w http.ResponseWriter, r *http.Request) {
	st := s.Info.Status()
	WriteJSON(w, http.StatusOK, st.AppliedIndex, st)
}

// HandleLeader is GET /v1/leader: public.
func (s *Server) HandleLeader(w http.ResponseWriter, r *http.Request) {
	l, err := s.Info.CurrentLeader()
	if err != nil {
		WriteError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, 0, l)
}

// HandleMembers is GET /v1/members.
func (s *Server) HandleMembers(w http.ResponseWriter, r *http.Request) {
	out := append([]api.Member{}, s.Info.Members()...) // [] rather than null when none
	WriteJSON(w, http.StatusOK, 0, out)
}
