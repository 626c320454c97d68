package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
)

// The server's side of a follow query (GET /v1/internal/follow): what a
// server sends a worker (FollowStateOf) and when (AnswerFollow). The
// agent holds the query, gathers a fresh view, the leader it knows and
// its clock on each change, and answers when AnswerFollow says.

// FollowState is the state in a follow reply (api.FollowReply.State,
// msgpack).
type FollowState struct {
	Jobs   []*cluster.Job  `msgpack:"jobs"`
	Nodes  []*cluster.Node `msgpack:"nodes"`
	Policy *cluster.Policy `msgpack:"policy,omitempty"`
	// Security is the cluster's security state (CA certificate, token
	// key, gossip keyring, revocations) without the CA's key, which only
	// a raft server (a node that may lead and sign) holds: the worker's
	// API checks tokens and revocations with it, and its gossip follows
	// the keyring.
	Security *cluster.Security `msgpack:"security,omitempty"`
}

// FollowStateOf is what node needs of view v: the jobs that hold it (the
// ones Reconcile acts on; the view indexes them by node once for all its
// readers), the nodes of their allocations and the policy; and a digest
// of it, from the records' ModifyIndex (every command that changes a
// record stamps it), cheap enough to compute on every applied entry while
// a follow query waits: its cost is the node's own jobs, not the
// cluster's.
func FollowStateOf(v *fsm.View, node string) (FollowState, string) {
	st := FollowState{Policy: v.Policy()}
	if sec := v.Security(); sec != nil {
		worker := *sec // the records it shares are never modified once stored
		worker.CAKey = nil
		st.Security = &worker
	}
	seen := map[string]bool{}
	h := sha256.New()
	for _, j := range v.JobsOn(node) {
		st.Jobs = append(st.Jobs, j)
		fmt.Fprintf(h, "j%d@%d;", j.ID, j.ModifyIndex)
		for _, na := range j.Alloc.Nodes {
			if seen[na.Node] {
				continue
			}
			seen[na.Node] = true
			if n, ok := v.Node(na.Node); ok {
				st.Nodes = append(st.Nodes, n)
				fmt.Fprintf(h, "n%s@%d;", n.Name, n.ModifyIndex)
			}
		}
	}
	// A security state is never modified once stored: a new one is a new
	// record (the digest only wakes a worker, so a pointer will do).
	fmt.Fprintf(h, "c%s;s%p", st.Policy.Name(), v.Security())
	return st, hex.EncodeToString(h.Sum(nil)[:16])
}

// FollowQuery is a worker's follow query: the index and digest of the
// state it holds, and the lease index its last heartbeat was committed
// at.
type FollowQuery struct {
	Index  uint64
	Digest string
	Lease  uint64
}

// FollowWake is what a server holding a follow query sees when it wakes
// (an applied entry, or its wait over).
type FollowWake struct {
	// Index and Digest are the view's applied index and FollowStateOf's
	// digest of it for the worker.
	Index  uint64
	Digest string
	// Leader is the leader the server knows now ("" none); Told is the
	// leader the reply's hints name.
	Leader, Told string
	// WaitOver: the query's wait is over (or it asked for none).
	WaitOver bool
}

// AnswerFollow decides whether a server answers a held follow query now:
// when the worker's state changed, when the query's wait is over, when
// the lease index the worker waits for is applied (its heartbeat's entry:
// it learns the lease is renewed), or when a new leader is known (rehint:
// the reply's hints are taken again), so that a worker learns it without
// waiting for its next lease renewal to fail: those are seconds apart in
// a big cluster. It is pure.
func AnswerFollow(q FollowQuery, w FollowWake) (answer, rehint bool) {
	rehint = w.Leader != "" && w.Leader != w.Told
	leased := q.Index < q.Lease && w.Index >= q.Lease
	return w.Digest != q.Digest || rehint || leased || w.WaitOver, rehint
}

// FollowSource is a raft server's replica and place as a held follow
// query sees them.
type FollowSource interface {
	// View is the replica's view now.
	View() *fsm.View
	// Leader names the leader this server knows now ("" none).
	Leader() string
	// Member says whether this node is a raft server now.
	Member(ctx context.Context) bool
}

// FollowAnswer is how a held follow query ends.
type FollowAnswer struct {
	// Removed: this node stopped being a raft server while it held the
	// query (a server removed applies nothing more); the answer is hints
	// only, and the worker asks another.
	Removed bool
	// Rehint: a new leader is known; the reply's hints are taken again.
	Rehint bool
	// Index, Digest and State are the worker's state as of the answer
	// (FollowStateOf).
	Index  uint64
	Digest string
	State  FollowState
}

// FollowHolder holds follow queries on a raft server: on every applied
// entry, its wait's end and every Poll it gathers (a view, the leader,
// its membership) and AnswerFollow decides.
type FollowHolder struct {
	Source FollowSource
	Clock  interface {
		Timer
		Clock
	}
	// Poll is how often it checks that this node still is a server.
	Poll time.Duration
}

// Hold holds node's query q until AnswerFollow says to answer, told being
// the leader the reply's hints name and wait how long the worker asked it
// to wait; it ends early when this node stops being a server, or with
// ctx's error.
func (h FollowHolder) Hold(ctx context.Context, node string, q FollowQuery, told string, wait time.Duration) (FollowAnswer, error) {
	waitOver := h.Clock.After(wait)
	check, stop := h.Clock.NewTicker(h.Poll)
	defer stop()
	for {
		v := h.Source.View()
		st, sum := FollowStateOf(v, node)
		// A new leader's election's first entry wakes this loop.
		answer, rehint := AnswerFollow(q, FollowWake{Index: v.Index, Digest: sum, Leader: h.Source.Leader(), Told: told, WaitOver: wait <= 0})
		if answer {
			return FollowAnswer{Rehint: rehint, Index: v.Index, Digest: sum, State: st}, nil
		}
		select {
		case <-v.Changed():
		case <-waitOver:
			wait = 0
		case <-check:
			if !h.Source.Member(ctx) {
				return FollowAnswer{Removed: true}, nil
			}
		case <-ctx.Done():
			return FollowAnswer{}, ctx.Err()
		}
	}
}

// ConfigServer is a raft server as the configuration names it.
type ConfigServer struct {
	Name  string
	Voter bool
}

// HintServer is a raft server as follow hints name it.
type HintServer struct {
	Name, APIAddr string
	Voter         bool
}

// FollowHints are the servers a follow reply names, from the raft
// configuration config with each one's API address from gossip
// (apiAddr), and whether node is one of them (then it reads its own
// replica). A server that knows no leader passes on what the servers
// told it instead (heard). It is pure.
func FollowHints(node string, knowsLeader bool, config []ConfigServer, apiAddr map[string]string, heard []HintServer) (servers []HintServer, member bool) {
	if !knowsLeader {
		return heard, false
	}
	for _, s := range config {
		servers = append(servers, HintServer{Name: s.Name, APIAddr: apiAddr[s.Name], Voter: s.Voter})
		member = member || s.Name == node
	}
	return servers, member
}
