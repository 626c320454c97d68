package worker

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/shoal-sched/shoal/fsm"
)

// Remote is what a worker knows from the servers: the view of its jobs it
// last received (FollowState as a partial fsm.View), and where the leader
// and the servers are. Follower.Upstream keeps it; the agent's reads, its
// driver and its cleanup read Current while it is a worker. Its methods
// are safe for concurrent use; its zero value holds nothing.
type Remote struct {
	mu sync.Mutex
	// view is the last state received; nil before the first, or while
	// this node is a server. changed is its Changed channel.
	view    *fsm.View
	changed chan struct{}
	digest  string
	// leader and leaderAddr are the leader the servers last named.
	leader, leaderAddr string
	servers            []HintServer
	// failed is when each server last failed a follow call.
	failed map[string]time.Time
	// cancel ends the follow call in flight; urgent makes the next one
	// answer at once (Kick).
	cancel context.CancelFunc
	urgent bool
}

// Reply is a follow answer as a worker takes it in: the wire's reply
// (api.FollowReply) with its state decoded.
type Reply struct {
	// Server: a raft server answered, with State as of Index; otherwise
	// only the hints (Leader, LeaderAddr, Servers) are set.
	Server bool
	// Member: the asking node is in the raft configuration (it reads its
	// own replica instead).
	Member bool
	Index  uint64
	Digest string
	State  FollowState
	// Leader and LeaderAddr name the leader the answering node knows.
	Leader, LeaderAddr string
	Servers            []HintServer
}

// Current returns the view last received, or nil.
func (r *Remote) Current() *fsm.View {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.view
}

// LeaderHint is the leader the servers last named.
func (r *Remote) LeaderHint() (name, addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.leader, r.leaderAddr
}

// Servers are the raft servers the servers last named.
func (r *Remote) Servers() []HintServer {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.servers
}

// Kick ends the follow call in flight, and makes the next one answer at
// once: a call to the leader failed, so the hints may be stale.
func (r *Remote) Kick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.urgent = true
	if r.cancel != nil {
		r.cancel()
	}
}

// Drop forgets the view: this node is a server and reads its replica.
func (r *Remote) Drop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.view == nil {
		return
	}
	r.view, r.digest = nil, ""
	close(r.changed) // wake whoever waits on it: the replica is newer now
	r.changed = nil
}

// Known is where the servers last said the servers and the leader are: a
// copy, which a later reply or pass-over leaves alone.
func (r *Remote) Known() Known {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := Known{Leader: r.leader, Failed: maps.Clone(r.failed)}
	for _, s := range r.servers {
		k.Servers = append(k.Servers, Server{Name: s.Name, APIAddr: s.APIAddr})
	}
	return k
}

// PassOver spares server name for ServerBackoff from at: it failed a
// follow call or answered with hints only.
func (r *Remote) PassOver(name string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed == nil {
		r.failed = map[string]time.Time{}
	}
	r.failed[name] = at
}

// Begin starts a follow call that cancel ends: the query it makes (the
// index and digest of the view held) and how long it asks the server to
// wait, wait unless no view is held yet, a Kick came, or only hints are
// asked for (then none). Done ends it.
func (r *Remote) Begin(cancel context.CancelFunc, hintsOnly bool, wait time.Duration) (FollowQuery, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := FollowQuery{Digest: r.digest}
	if r.view != nil {
		q.Index = r.view.Index
	}
	if r.urgent || r.view == nil || hintsOnly {
		wait, r.urgent = 0, false
	}
	r.cancel = cancel
	return q, wait
}

// Done ends the follow call Begin started.
func (r *Remote) Done() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cancel = nil
}

// Take takes a follow answer in: its hints, and its state when a server
// sent it, unless the asking node is a member (it reads its replica) or
// the view held is newer (a lagging server answered after a newer one).
// A new view closes the old one's Changed.
func (r *Remote) Take(reply Reply) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if reply.Leader != "" {
		r.leader, r.leaderAddr = reply.Leader, reply.LeaderAddr
	}
	if len(reply.Servers) > 0 {
		r.servers = reply.Servers
	}
	if !reply.Server || reply.Member {
		return
	}
	if r.view != nil && reply.Index < r.view.Index {
		return // a server behind the one that answered before: keep the newer
	}
	old := r.changed
	r.changed = make(chan struct{})
	st := reply.State
	r.view = fsm.PartialView(reply.Index, st.Jobs, st.Nodes, st.Policy, st.Security, r.changed)
	r.digest = reply.Digest
	if old != nil {
		close(old)
	}
}
