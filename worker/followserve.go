package worker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

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
