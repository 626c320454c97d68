package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

// ErrUpstream marks an error of a request this agent passed on (to the
// leader, to another node) that got no answer.
var ErrUpstream = errors.New("no answer from the agent a request was passed to")

// statuses is the one map from refusals to HTTP statuses, checked in
// order with errors.Is.
var statuses = []struct {
	err  error
	code int
}{
	{cluster.ErrInvalid, http.StatusBadRequest},
	{cluster.ErrUnauthenticated, http.StatusUnauthorized},
	{cluster.ErrForbidden, http.StatusForbidden},
	{cluster.ErrNotFound, http.StatusNotFound},
	{cluster.ErrConflict, http.StatusConflict},
	{cluster.ErrUnsupported, http.StatusConflict}, // a rolling upgrade is not finished
	{cluster.ErrLimit, http.StatusTooManyRequests},
	{cluster.ErrDiverged, http.StatusInternalServerError},
	{ErrUpstream, http.StatusBadGateway},
	{cluster.ErrUnavailable, http.StatusServiceUnavailable},
	{cluster.ErrNotLeader, http.StatusServiceUnavailable},
	{context.DeadlineExceeded, http.StatusGatewayTimeout},
}

// Status is the HTTP status err answers with: that of its outermost
// cluster.Mark, else the leader's own for an answer forwarded from it,
// else the first sentinel of the table err wraps, else 500.
func Status(err error) int {
	if kind := cluster.KindOf(err); kind != nil {
		if code, ok := lookup(kind); ok {
			return code
		}
	}
	var se *api.StatusError
	if errors.As(err, &se) {
		return se.Code // forwarded from the leader as it answered
	}
	if code, ok := lookup(err); ok {
		return code
	}
	return http.StatusInternalServerError
}

func lookup(err error) (int, bool) {
	for _, s := range statuses {
		if errors.Is(err, s.err) {
			return s.code, true
		}
	}
	return 0, false
}

// WriteError answers err with its status and an api.Error body.
func WriteError(w http.ResponseWriter, err error) {
	WriteJSON(w, Status(err), 0, api.Error{Error: err.Error()})
}
