package httpapi

import (
	"context"
	"net/http"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

// Internal is what node agents ask of the leader over /v1/internal: only
// the leader answers (a follower says 503 and the agent retries), and only
// a node may speak for its own records (RequireNode).
type Internal interface {
	// Heartbeat renews node's lease and returns the leader's answer: its
	// applied index when it did and the lease it granted.
	Heartbeat(ctx context.Context, node cluster.Node) (api.HeartbeatReply, error)
	// TaskEvent records that a task started or exited.
	TaskEvent(ctx context.Context, ev api.TaskEvent) error
	// NodeLeft records that node's agent left the cluster.
	NodeLeft(ctx context.Context, node string) error
	// DrainSelf drains node at its agent's request (--drain-on-stop).
	DrainSelf(ctx context.Context, node string) error
}

// HandleHeartbeat is POST /v1/internal/heartbeat.
func (s *Server) HandleHeartbeat(w http.ResponseWriter, r *http.Request) {
	hb, ok := leaderBody(s, w, r, func(hb api.Heartbeat) string { return hb.Node.Name })
	if !ok {
		return
	}
	reply, err := s.Internal.Heartbeat(r.Context(), hb.Node)
	if err != nil {
		WriteError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, reply.Index, reply)
}

// HandleTaskEvent is POST /v1/internal/task.
func (s *Server) HandleTaskEvent(w http.ResponseWriter, r *http.Request) {
	ev, ok := leaderBody(s, w, r, func(ev api.TaskEvent) string { return ev.Node })
	if !ok {
		return
	}
	if err := s.Internal.TaskEvent(r.Context(), ev); err != nil {
		WriteError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, 0, struct{}{})
}

// HandleLeave is POST /v1/internal/leave: an agent leaves the cluster.
func (s *Server) HandleLeave(w http.ResponseWriter, r *http.Request) {
	s.nodeRequest(w, r, s.Internal.NodeLeft)
}

// HandleDrainSelf is POST /v1/internal/drain: an agent stopping with
// --drain-on-stop drains its node first.
func (s *Server) HandleDrainSelf(w http.ResponseWriter, r *http.Request) {
	s.nodeRequest(w, r, s.Internal.DrainSelf)
}

// nodeRequest is the leader's side of an agent's request about its own
// node: the body names the node, and only the leader carries it out.
func (s *Server) nodeRequest(w http.ResponseWriter, r *http.Request, do func(ctx context.Context, node string) error) {
	hb, ok := leaderBody(s, w, r, func(hb api.Heartbeat) string { return hb.Node.Name })
	if !ok {
		return
	}
	if err := do(r.Context(), hb.Node.Name); err != nil {
		WriteError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, 0, struct{}{})
}

// leaderBody decodes an internal request's body and refuses it (leaderFor)
// unless it comes from the node it names (node's answer) and reached the
// leader; false: the error is written.
func leaderBody[T any](s *Server, w http.ResponseWriter, r *http.Request, node func(T) string) (T, bool) {
	var body T
	if err := DecodeBody(r, &body); err != nil {
		WriteError(w, err)
		return body, false
	}
	if err := s.leaderFor(r, node(body)); err != nil {
		WriteError(w, err)
		return body, false
	}
	return body, true
}

// leaderFor refuses an internal request about node that does not come
// from that node, or that reached a follower.
func (s *Server) leaderFor(r *http.Request, node string) error {
	if err := s.RequireNode(r, node); err != nil {
		return err
	}
	if !s.Cluster.IsLeader() {
		return cluster.Mark(cluster.ErrUnavailable, cluster.ErrNotLeader)
	}
	return nil
}
