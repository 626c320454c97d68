package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

// Bounds of the HTTP API.
const (
	// DefaultWait and MaxWait bound a blocking read (?index=N&wait=D).
	DefaultWait = 30 * time.Second
	MaxWait     = 5 * time.Minute
	// ForwardTimeout bounds a request passed on to the leader or a node.
	ForwardTimeout = 15 * time.Second
	// readFloorWait bounds how long a read waits for the replica to reach
	// the read floor; past it the read answers 503 rather than an older
	// state.
	readFloorWait = 5 * time.Second
)

// Cluster is this agent's hold on the cluster that every group of routes
// leans on: forwarding writes (who leads, a client for it), the read
// floor and blocking reads (how far the replica is), a worker's reads
// (Outside) and the internal routes only the leader answers (IsLeader).
type Cluster interface {
	// Leads reports whether this agent is the leader; an error when no
	// leader is known (marked cluster.ErrUnavailable).
	Leads() (bool, error)
	// LeaderClient is a client for the leader that marks requests as
	// forwarded by this agent (api.HeaderForwardedBy).
	LeaderClient() (*api.Client, error)
	// IsLeader reports whether this agent is the raft leader now.
	IsLeader() bool
	// Outside reports whether this node is a worker, outside the raft
	// configuration: its reads of the replicated state go to the leader.
	Outside() bool
	// Readable returns nil when the replica may answer reads, else why
	// not (it diverged, or it is catching up with the cluster).
	Readable() error
	// Applied returns the index the replica has applied and a channel
	// closed once it applies more.
	Applied() (index uint64, changed <-chan struct{})
	// Index is the replica's applied index, the X-Shoal-Index of a
	// write's answer (Applied without building a view).
	Index() uint64
	// KeepsRequestIDs reports whether, as this agent sees the cluster,
	// the leader keeps the request id of write w: every live agent
	// speaks the protocol that does.
	KeepsRequestIDs(w IDWrite) bool
}

// Roles are the parts of the agent the API calls: one interface per
// group of routes, each declared beside its routes, taking and returning
// plain values, the caller as a cluster.Identity, and marked errors. A
// test sets only the roles the routes it sends reach (Cluster nearly
// always: forwarding and the read floor).
type Roles struct {
	Cluster  Cluster   // forwarding, the read floor, blocking reads (server.go)
	Auth     Authority // who a request acts for (caller.go)
	Info     Info      // this agent's status, leader and members; a worker's follow query (reads.go, follow.go)
	Queue    Queue     // jobs: submits, reads, queue operations, steps, signals (jobs.go)
	Admin    Admin     // nodes: records, drains, policy, priorities, switches, leave (admin.go)
	Security Security  // joins, renewals, revocations, tokens, the keyring (security.go)
	Relays   Relays    // what lives on a job's nodes: output, GPU series, terminals, stdin, PMIx, sbcast (relays.go)
	Internal Internal  // a node agent's calls to the leader (internal.go)
}

// Server is the agent's HTTP front: authentication, leader forwarding and
// the read floor (read your writes through the same agent), over the
// agent's Roles.
type Server struct {
	Roles
	// readFloor is the highest leader index of a write this agent
	// forwarded and acknowledged; reads wait for the replica to reach it.
	readFloor atomic.Uint64
	// sessions are the srun --pty sessions in progress.
	sessions relays
	log      *slog.Logger
}

// NewServer returns the API front of the agent's roles, logging terminal
// sessions to log.
func NewServer(roles Roles, log *slog.Logger) *Server { return &Server{Roles: roles, log: log} }

// Handler wraps routes with authentication.
func (s *Server) Handler(routes http.Handler) http.Handler { return Authenticate(s.Auth, routes) }

// RequireNode refuses a request about node name that does not come from
// that node itself (see the package function).
func (s *Server) RequireNode(r *http.Request, name string) error { return RequireNode(s.Auth, r, name) }

// AcceptRelay is the common front of the requests served on the node that
// holds a job's tasks, or relayed to it (a terminal, srun's stdin, an
// sbcast copy): the caller must be proven, and this replica must have
// applied what the client has seen (WaitReadable). It returns the caller
// and whether to go on; when not, the request has been answered.
func (s *Server) AcceptRelay(w http.ResponseWriter, r *http.Request) (Caller, bool) {
	who := CallerOf(r)
	if err := RequireProven(who); err != nil {
		WriteError(w, err)
		return who, false
	}
	if err := s.WaitReadable(r.Context()); err != nil {
		WriteError(w, err)
		return who, false
	}
	return who, true
}

// AcceptWrite is the common front of every write: the caller must be
// proven, body (a pointer, or nil when the request has none) is decoded,
// and a follower forwards the request to the leader. It returns the caller
// and whether this node, the leader, is to carry the write out; when not,
// the request has been answered.
func (s *Server) AcceptWrite(w http.ResponseWriter, r *http.Request, body any) (Caller, bool) {
	who := CallerOf(r)
	if err := RequireProven(who); err != nil {
		WriteError(w, err)
		return who, false
	}
	if body != nil {
		if err := DecodeBody(r, body); err != nil {
			WriteError(w, err)
			return who, false
		}
	}
	if s.Forward(w, r, who, body) {
		return who, false
	}
	return who, true
}

// Forward sends a write to the leader when this node is not it. It
// returns handled=true when it answered the request itself.
func (s *Server) Forward(w http.ResponseWriter, r *http.Request, who Caller, body any) (handled bool) {
	self, err := s.Cluster.Leads()
	if err != nil {
		WriteError(w, err)
		return true
	}
	if self {
		return false
	}
	if r.Header.Get(api.HeaderForwardedBy) != "" {
		// Forwarded to us, but we are not the leader (any more): let the
		// original node's client retry rather than bounce between nodes.
		WriteError(w, cluster.Mark(cluster.ErrUnavailable, errors.New(api.LeadershipMovedMessage+"; retry")))
		return true
	}
	c, err := s.Cluster.LeaderClient()
	if err != nil {
		WriteError(w, err)
		return true
	}
	ctx, cancel := context.WithTimeout(r.Context(), ForwardTimeout)
	defer cancel()
	var out json.RawMessage
	index, err := c.WithIdentity(who.Identity).Do(ctx, r.Method, r.URL.RequestURI(), body, &out)
	if err != nil {
		var se *api.StatusError
		var op *net.OpError
		switch {
		case errors.As(err, &se): // the leader's own answer
		case errors.As(err, &op) && op.Op == "dial":
			// Nothing was sent (net/http resends a request only when
			// nothing of it was written): the client may send any write
			// again (api.LeaderUnreachableMessage).
			err = cluster.Mark(cluster.ErrUnavailable, fmt.Errorf("forward to leader: %s: %w; retry", api.LeaderUnreachableMessage, err))
		default:
			err = cluster.Mark(ErrUpstream, fmt.Errorf("forward to leader: %w", err))
			if iw, ok := idWriteOf(r); ok && iw.ActsTwice(body) && !s.Cluster.KeepsRequestIDs(iw) {
				err = DroppedIDOutcome(err, iw)
			}
		}
		WriteError(w, err)
		return true
	}
	// Read your writes through the same agent: later reads here wait
	// until this replica has applied what the leader did for us. The
	// write itself does not wait: a follower learns the commit only with
	// the leader's next message.
	s.RaiseReadFloor(index)
	WriteRaw(w, index, out)
	return true
}

// RaiseReadFloor records that this agent acknowledged a write the leader
// applied at index: reads here must not show an older state.
func (s *Server) RaiseReadFloor(index uint64) {
	for {
		cur := s.readFloor.Load()
		if index <= cur || s.readFloor.CompareAndSwap(cur, index) {
			return
		}
	}
}

// WaitReadable returns once reads may be served from the replica: it is
// readable, and it has applied every write this agent acknowledged, so a
// client reads its own writes through the same agent.
func (s *Server) WaitReadable(ctx context.Context) error {
	if err := s.Cluster.Readable(); err != nil {
		return err
	}
	floor := s.readFloor.Load()
	ctx, cancel := context.WithTimeout(ctx, readFloorWait)
	defer cancel()
	for {
		index, changed := s.Cluster.Applied()
		if index >= floor {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return cluster.Mark(cluster.ErrUnavailable,
				fmt.Errorf("this agent's replica is at index %d, behind a write it acknowledged at %d; retry", index, floor))
		}
	}
}

// WaitIndex is the blocking query of a read: once the replica is readable
// (WaitReadable), it waits until the replica is past ?index=, up to ?wait=
// (DefaultWait, at most MaxWait). Without ?index= it does not wait.
func (s *Server) WaitIndex(r *http.Request) error {
	if err := s.WaitReadable(r.Context()); err != nil {
		return err
	}
	q := r.URL.Query()
	if q.Get("index") == "" {
		return nil
	}
	index, err := strconv.ParseUint(q.Get("index"), 10, 64)
	if err != nil {
		return cluster.Mark(cluster.ErrInvalid, fmt.Errorf("index %q: want a raft index (from %s)", q.Get("index"), api.HeaderIndex))
	}
	wait := DefaultWait
	if v := q.Get("wait"); v != "" {
		if wait, err = time.ParseDuration(v); err != nil || wait < 0 {
			return cluster.Mark(cluster.ErrInvalid, fmt.Errorf("wait %q: want a duration such as 30s", v))
		}
	}
	wait = min(wait, MaxWait)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		applied, changed := s.Cluster.Applied()
		if applied > index {
			return nil
		}
		select {
		case <-changed:
		case <-timer.C:
			return nil
		case <-r.Context().Done():
			return r.Context().Err()
		}
	}
}
