package httpapi

import (
	"net/http"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

// HandleBcast is PUT /v1/jobs/{id}/bcast?node=N&path=P&mode=M[&force=1]
// [&mtime=T]: the body is written to P on node N of the job's
// allocation (sbcast).
func (s *Server) HandleBcast(w http.ResponseWriter, r *http.Request) {
	id, err := PathJobID(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	f, err := api.ParseBcastFile(r.URL.Query())
	if err != nil {
		WriteError(w, cluster.Mark(cluster.ErrInvalid, err))
		return
	}
	who, ok := s.AcceptRelay(w, r)
	if !ok {
		return
	}
	// The server's read deadline bounds a request's headers and small
	// bodies, not a file: the body is read as long as it flows.
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	if err := s.Relays.Bcast(r.Context(), id, f, r.Body, who.Who(), r.Header.Get(api.HeaderForwardedBy) != ""); err != nil {
		WriteError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, 0, struct{}{})
}
