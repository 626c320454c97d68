package httpapi

import (
	"context"
	"net/http"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

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
