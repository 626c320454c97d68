package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

// HandleFollow is GET /v1/internal/follow: a worker's blocking query for
// its own jobs. Only the node itself may ask.
func (s *Server) HandleFollow(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	node := q.Get("node")
	if err := s.RequireNode(r, node); err != nil {
		WriteError(w, err)
		return
	}
	var nums [2]uint64
	for i, k := range []string{"index", "lease"} {
		if v := q.Get(k); v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				WriteError(w, cluster.Mark(cluster.ErrInvalid, fmt.Errorf("%s %q: want a raft index", k, v)))
				return
			}
			nums[i] = n
		}
	}
	wait := DefaultWait
	if v := q.Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			WriteError(w, cluster.Mark(cluster.ErrInvalid, fmt.Errorf("wait %q: want a duration such as 30s", v)))
			return
		}
		wait = d
	}
	reply, err := s.Info.Follow(r.Context(), node, nums[0], q.Get("digest"), nums[1], min(wait, MaxWait))
	if err != nil {
		WriteError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, reply.Index, reply)
}

// replicaRead serves a read of the replicated state from this agent's
// replica, or, on a worker (outside the raft configuration, so with no
// replica kept current), from the leader, with the caller's identity.
func (s *Server) replicaRead(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(api.HeaderForwardedBy) != "" || !s.Cluster.Outside() {
			h(w, r)
			return
		}
		c, err := s.Cluster.LeaderClient()
		if err != nil {
			WriteError(w, err)
			return
		}
		timeout := ForwardTimeout
		if v := r.URL.Query().Get("wait"); v != "" {
			if d, err := time.ParseDuration(v); err == nil && d > 0 {
				timeout += min(d, MaxWait)
			}
		} else if r.URL.Query().Get("index") != "" {
			timeout += DefaultWait
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		var out json.RawMessage
		index, err := c.WithIdentity(CallerOf(r).Identity).Do(ctx, r.Method, r.URL.RequestURI(), nil, &out)
		if err != nil {
			var se *api.StatusError
			if !errors.As(err, &se) {
				err = cluster.Mark(ErrUpstream, fmt.Errorf("read from the leader: %w", err))
			}
			WriteError(w, err)
			return
		}
		WriteRaw(w, index, out)
	}
}
