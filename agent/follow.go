package agent

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/consensus"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/gossip"
	"github.com/shoal-sched/shoal/internal/clock"
	"github.com/shoal-sched/shoal/worker"
)

// A worker is a node outside the raft configuration (beyond the voters
// and the --raft-replicas non-voters, consensus.PlanVoters). Its raft
// instance stays unconfigured, ready to be added, and its replica is not
// used: it follows the jobs that hold it from a server with a blocking
// query (GET /v1/internal/follow), reaches the leader through the hints
// the servers give, and forwards the API's replica reads to the leader.

// Bounds of following.
const (
	// followWait is how long a server holds a worker's follow query when
	// nothing of the worker's changes.
	followWait = 30 * time.Second
	// followTimeout bounds one follow call, its wait included.
	followTimeout = followWait + 10*time.Second
	// memberPoll is how often a raft server checks it still is one.
	memberPoll = time.Second
	// memberTimeout bounds reading the raft configuration; memberCache is
	// how long core.member reuses its answer (every read and follow query
	// asks it).
	memberTimeout = 2 * time.Second
	memberCache   = 250 * time.Millisecond
	// removedGrace is how long a node its own raft configuration names
	// must have known no leader before it follows a server as a worker:
	// longer than an election, short enough that a removed server soon
	// follows its jobs again.
	removedGrace = 5 * time.Second
)

// membershipCache is core.member's answer at memberAt.
type membershipCache struct {
	mu               sync.Mutex
	member, inConfig bool
	memberAt         time.Time
}

// follower is this node's follow loop (worker.Follower) over its raft
// membership, its remote view and its peers.
func (w *workerSide) follower() worker.Follower {
	return worker.Follower{
		Self: w.cfg.Name, Membership: agentFollow{w}, Upstream: agentFollow{w}, Clock: clock.Wall{}, Log: w.log,
		Roll: rand.IntN, Poll: memberPoll, Grace: removedGrace,
	}
}

// agentFollow is the agent as its follow loop sees it: worker.Membership
// and worker.Upstream.
type agentFollow struct{ w *workerSide }

func (f agentFollow) Member(ctx context.Context) (member, inConfig bool) { return f.w.member(ctx) }
func (f agentFollow) Following() bool                                    { return f.w.remote.Current() != nil }
func (f agentFollow) Drop()                                              { f.w.remote.Drop() }
func (f agentFollow) Behind()                                            { f.w.ready.Store(false) }
func (f agentFollow) Known() worker.Known                                { return f.w.remote.Known() }
func (f agentFollow) PassOver(name string, at time.Time)                 { f.w.remote.PassOver(name, at) }

// Alive are the live gossip members and their API addresses.
func (f agentFollow) Alive() []worker.Server {
	var alive []worker.Server
	for _, m := range f.w.gossip.Members() {
		if m.Status == gossip.StatusAlive {
			alive = append(alive, worker.Server{Name: m.Name, APIAddr: m.Meta.APIAddr, Raft: m.Meta.RaftAddr != ""})
		}
	}
	return alive
}

// Follow makes one follow call to s (GET /v1/internal/follow) and takes
// its answer in.
func (f agentFollow) Follow(ctx context.Context, s worker.Server, hintsOnly bool) (worker.FollowOutcome, error) {
	a, r := f.w, &f.w.remote
	c, err := a.peers.get(s.Name, s.APIAddr)
	if err != nil {
		return worker.OutcomeNoClient, err
	}
	c = c.WithHeader(api.HeaderForwardedBy, a.cfg.Name)
	rctx, cancel := context.WithTimeout(ctx, followTimeout)
	defer cancel()
	fq, wait := r.Begin(cancel, hintsOnly, followWait)
	q := url.Values{}
	q.Set("node", a.cfg.Name)
	q.Set("index", fmt.Sprint(fq.Index))
	q.Set("digest", fq.Digest)
	q.Set("lease", fmt.Sprint(a.currentLease().Index))
	q.Set("wait", wait.String())
	var reply api.FollowReply
	_, err = c.Do(rctx, http.MethodGet, "/v1/internal/follow?"+q.Encode(), nil, &reply)
	r.Done()
	if err != nil {
		return worker.OutcomeFailed, fmt.Errorf("follow %s at %s: %w", s.Name, s.APIAddr, err)
	}
	if hintsOnly {
		reply.Server = false
	}
	took, err := decodeFollowReply(reply)
	if err != nil {
		return worker.OutcomeFailed, fmt.Errorf("follow %s: %w", s.Name, err)
	}
	r.Take(took)
	if !reply.Server {
		return worker.OutcomeHints, nil
	}
	return worker.OutcomeServed, nil
}

// decodeFollowReply is a follow reply as worker.Remote takes it in, its
// state decoded.
func decodeFollowReply(reply api.FollowReply) (worker.Reply, error) {
	took := worker.Reply{Server: reply.Server, Member: reply.Member, Index: reply.Index, Digest: reply.Digest,
		Leader: reply.Leader, LeaderAddr: reply.LeaderAddr}
	for _, s := range reply.Servers {
		took.Servers = append(took.Servers, worker.HintServer(s))
	}
	if reply.Server {
		if err := msgpack.Unmarshal(reply.State, &took.State); err != nil {
			return worker.Reply{}, fmt.Errorf("decode state at %d: %w", reply.Index, err)
		}
	}
	return took, nil
}

// Follow is a server's side of GET /v1/internal/follow (api.FollowReply):
// the hints, and, from a server, the worker's state once
// worker.FollowHolder says.
func (c *core) Follow(ctx context.Context, node string, index uint64, digest string, lease uint64, wait time.Duration) (api.FollowReply, error) {
	reply := c.followHints(ctx, node)
	if member, _ := c.member(ctx); !member || c.Readable() != nil {
		return reply, nil // hints only
	}
	reply.Server = true
	holder := worker.FollowHolder{Source: followSource{c}, Clock: clock.Wall{}, Poll: memberPoll}
	ans, err := holder.Hold(ctx, node, worker.FollowQuery{Index: index, Digest: digest, Lease: lease}, reply.Leader, wait)
	switch {
	case err != nil:
		return reply, err
	case ans.Removed:
		return c.followHints(ctx, node), nil // hints only
	case ans.Rehint:
		hints := c.followHints(ctx, node)
		reply.Leader, reply.LeaderAddr, reply.Servers, reply.Member = hints.Leader, hints.LeaderAddr, hints.Servers, hints.Member
	}
	data, err := encodeFollowState(ans.State, node)
	if err != nil {
		return reply, err
	}
	reply.Index, reply.Digest, reply.State = ans.Index, ans.Digest, data
	return reply, nil
}

// followSource is the agent's replica and place as a held follow query
// sees them (worker.FollowSource).
type followSource struct{ c *core }

func (f followSource) View() *fsm.View { return f.c.state.View() }
func (f followSource) Leader() string {
	name, _, _, _ := f.c.leaderAPI()
	return name
}
func (f followSource) Member(ctx context.Context) bool {
	member, _ := f.c.member(ctx)
	return member
}

// followHints are the leader and the servers this node knows, and
// whether node is one of them (worker.FollowHints).
func (c *core) followHints(ctx context.Context, node string) api.FollowReply {
	var reply api.FollowReply
	if name, addr, _, err := c.leaderAPI(); err == nil {
		reply.Leader, reply.LeaderAddr = name, addr
	}
	ctx, cancel := context.WithTimeout(ctx, memberTimeout)
	defer cancel()
	servers, err := c.raft.Servers(ctx)
	id, _ := c.raft.Leader()
	knowsLeader := err == nil && id != "" // else not a server, or one cut off
	var config []worker.ConfigServer
	apiAddr := map[string]string{}
	if knowsLeader {
		for _, s := range servers {
			config = append(config, worker.ConfigServer{Name: s.ID, Voter: s.Suffrage == consensus.Voter})
		}
		for _, m := range c.gossip.Members() {
			apiAddr[m.Name] = m.Meta.APIAddr
		}
	}
	hints, member := worker.FollowHints(node, knowsLeader, config, apiAddr, c.remote.Servers())
	reply.Member = member
	for _, h := range hints {
		reply.Servers = append(reply.Servers, api.FollowServer(h))
	}
	return reply
}

// encodeFollowState encodes st for a follow reply.
func encodeFollowState(st worker.FollowState, node string) ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(&st); err != nil {
		return nil, fmt.Errorf("encode the state of node %s: %w", node, err)
	}
	return buf.Bytes(), nil
}
