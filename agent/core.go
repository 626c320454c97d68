package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/consensus"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/gossip"
	"github.com/shoal-sched/shoal/internal/clock"
	"github.com/shoal-sched/shoal/leader"
	"github.com/shoal-sched/shoal/metrics"
	"github.com/shoal-sched/shoal/pki"
	"github.com/shoal-sched/shoal/worker"
)

// core is what every component of the agent shares: the node's
// configuration and record, its security, its replica and raft, gossip,
// the remote view it follows while it is a worker, and its peer clients;
// and the one way each reads the cluster's state (view, Readable) and
// writes it (apply on the leader, callLeader from anywhere).
type core struct {
	cfg  Config
	log  *slog.Logger
	self cluster.Node
	// sec is the node's TLS material; its bundle is nil with --insecure.
	sec *security

	state  *fsm.State
	raft   *consensus.Raft
	gossip *gossip.Gossip
	peers  peerClients

	// ready is set once the replica has caught up after start (caughtUp).
	ready atomic.Bool
	// remote is what this node knows from the servers while it is a
	// worker, outside the raft configuration (follow.go).
	remote worker.Remote
	// membership caches whether this node is a raft server (member).
	membership membershipCache
	// topo is the node's place now: the operator's, merged with what
	// discovery found (topology.go).
	topo currentTopology
	// metrics is the /metrics exposition (metrics.go).
	metrics *metrics.Metrics
}

// peerClients caches one API client per peer: its name and address.
type peerClients struct {
	mu      sync.Mutex
	clients map[string]*api.Client
	// bundle, when set, is the node certificate peers are dialled with;
	// each peer must present a certificate naming it.
	bundle *pki.Bundle
}

func (p *peerClients) get(name, addr string) (*api.Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := name + "@" + addr
	if c, ok := p.clients[key]; ok {
		return c, nil
	}
	var c *api.Client
	var err error
	if p.bundle != nil {
		c, err = api.NewTLSClient("https://"+addr, p.bundle.ClientConfig(name))
	} else {
		c, err = api.NewClient("http://" + addr)
	}
	if err != nil {
		return nil, err
	}
	if len(p.clients) >= maxPeerClients {
		clear(p.clients) // nodes come and go; idle connections close on their own
	}
	p.clients[key] = c
	return c, nil
}

// reset drops every cached client and closes its idle connections: a TLS
// connection keeps the certificate it was opened with, so after a renewal
// new ones must be made.
func (p *peerClients) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.clients {
		c.CloseIdleConnections()
	}
	clear(p.clients)
}

// maxPeerClients bounds the peer client cache.
const maxPeerClients = 1024

// errNoLeader is returned when no leader is known to forward to.
// Clients send any write again after it (api.NoLeaderMessage).
var errNoLeader = cluster.Mark(cluster.ErrUnavailable, errors.New(api.NoLeaderMessage+": the cluster is forming or has lost its quorum; retry"))

// leaderAPI returns the leader's name and API address, and whether we are
// it.
func (c *core) leaderAPI() (name, addr string, self bool, err error) {
	if c.raft.IsLeader() {
		return c.cfg.Name, c.cfg.apiAdvert(), true, nil
	}
	id, _ := c.raft.Leader()
	if id == "" {
		// A worker's raft knows no leader: the servers it follows name it.
		if name, addr := c.remote.LeaderHint(); name != "" && name != c.cfg.Name && addr != "" {
			return name, addr, false, nil
		}
		c.remote.Kick()
		return "", "", false, errNoLeader
	}
	if id == c.cfg.Name {
		return id, c.cfg.apiAdvert(), true, nil
	}
	if m, ok := c.gossip.Member(id); ok && m.Meta.APIAddr != "" {
		return id, m.Meta.APIAddr, false, nil
	}
	if n, ok := c.state.View().Node(id); ok && n.APIAddr != "" {
		return id, n.APIAddr, false, nil
	}
	return "", "", false, fmt.Errorf("leader %s: API address unknown: %w", id, errNoLeader)
}

// noReply is the reply of the leader's internal calls that answer
// nothing.
type noReply struct{}

// callLeader is the one place a node's own loops talk to the leader: when
// this node leads, local runs here; otherwise req is posted to path on
// the leader's internal API and its JSON answer is the reply.
func callLeader[Req, Reply any](ctx context.Context, c *core, path string, req Req, local func(context.Context, Req) (Reply, error)) (Reply, error) {
	var reply Reply
	_, _, self, err := c.leaderAPI()
	if err != nil {
		return reply, err
	}
	if self {
		return local(ctx, req)
	}
	cl, err := c.LeaderClient()
	if err != nil {
		return reply, err
	}
	var out any = &reply
	if _, none := out.(*noReply); none {
		out = nil
	}
	if _, err := cl.Do(ctx, http.MethodPost, path, req, out); err != nil {
		c.remote.Kick() // a worker's leader hint may be stale: ask the servers again
		return reply, err
	}
	return reply, nil
}

// noReplyFrom adapts a leader-side function that answers nothing to
// callLeader.
func noReplyFrom[Req any](f func(context.Context, Req) error) func(context.Context, Req) (noReply, error) {
	return func(ctx context.Context, r Req) (noReply, error) { return noReply{}, f(ctx, r) }
}

// LeaderClient returns a client for the leader that marks requests as
// forwarded by this node and sends each once (api.Client.Forwarding):
// the caller's own client, or loop, sends it again.
func (c *core) LeaderClient() (*api.Client, error) {
	name, addr, _, err := c.leaderAPI()
	if err != nil {
		return nil, err
	}
	cl, err := c.peers.get(name, addr)
	if err != nil {
		return nil, err
	}
	return cl.Forwarding(c.cfg.Name), nil
}

func (c *core) meta(hasRaftState bool) gossip.Meta {
	topo := c.topology()
	m := gossip.Meta{
		APIAddr:         c.cfg.apiAdvert(),
		RaftAddr:        c.cfg.raftSeat(),
		GPUs:            len(c.cfg.GPUs),
		CPUs:            c.cfg.CPUs,
		MemoryMiB:       c.cfg.MemoryMiB,
		Switch:          topo.Switch,
		SwitchParent:    topo.SwitchParent,
		Block:           topo.Block,
		Features:        strings.Join(c.cfg.Features, ","),
		Version:         c.cfg.Version[:min(len(c.cfg.Version), gossip.MaxVersionLen)],
		Protocol:        c.cfg.protocol(),
		BootstrapExpect: c.bootstrapExpect(),
		HasRaftState:    hasRaftState,
		LeaseStretch:    leader.MaxLeaseStretch,
	}
	if len(c.cfg.GPUs) > 0 {
		// Gossip only summarises the model; the FSM's record has it whole.
		m.GPUModel = c.cfg.GPUs[0].Model[:min(len(c.cfg.GPUs[0].Model), gossip.MaxModelLen)]
		m.GPUMemoryMiB = c.cfg.GPUs[0].MemoryMiB
	}
	return m
}

// bootstrapExpect is the --bootstrap-expect in force: a lone agent (no
// --join, no --bootstrap-expect) is a one-node cluster.
func (c *core) bootstrapExpect() int {
	if c.cfg.BootstrapExpect == 0 && len(c.cfg.Join) == 0 {
		return 1
	}
	return c.cfg.BootstrapExpect
}

// member reports whether this node is a raft server now: its raft knows
// a leader, and the configuration names this node; and whether its own
// configuration names it (also true of a server in an election, or of
// one removed: a server removed from the configuration never hears of it,
// as the leader stops replicating to it, but it loses its leader within
// an election timeout).
func (c *core) member(ctx context.Context) (member, inConfig bool) {
	r := &c.membership
	r.mu.Lock()
	if time.Since(r.memberAt) < memberCache {
		member, inConfig = r.member, r.inConfig
		r.mu.Unlock()
		return member, inConfig
	}
	r.mu.Unlock()
	member, inConfig = c.readMember(ctx)
	r.mu.Lock()
	r.member, r.inConfig, r.memberAt = member, inConfig, time.Now()
	r.mu.Unlock()
	return member, inConfig
}

// readMember is member without the cache.
func (c *core) readMember(ctx context.Context) (member, inConfig bool) {
	ctx, cancel := context.WithTimeout(ctx, memberTimeout)
	defer cancel()
	servers, err := c.raft.Servers(ctx)
	if err != nil {
		return false, false
	}
	for _, s := range servers {
		inConfig = inConfig || s.ID == c.cfg.Name
	}
	if c.raft.IsLeader() {
		return true, true
	}
	id, _ := c.raft.Leader()
	return inConfig && id != "", inConfig
}

// Outside reports whether this node acts as a worker: it is not a raft
// server with a leader, and either it follows a server already or its
// own configuration does not name it. A server in an election (no remote
// view) keeps reading its replica, as before.
func (c *core) Outside() bool {
	member, inConfig := c.member(context.Background())
	return !member && (c.remote.Current() != nil || !inConfig)
}

// view is the newest state this node knows: its replica's, or, when a
// server sent a newer one (this node is a worker), that one, which holds
// only this node's jobs, their nodes, the policy and the security state.
// Loops that wait on its Changed must also poll (a worker's replica never
// changes; a server's remote view never comes).
func (c *core) view() *fsm.View {
	v := c.state.View()
	if r := c.remote.Current(); r != nil && r.Index > v.Index {
		return r
	}
	return v
}

// Readable returns nil when reads may be served, or an error while the
// replica has not yet caught up with the log it had before a restart: an
// empty or stale answer then would look like lost jobs.
func (c *core) Readable() error {
	if err := c.state.Diverged(); err != nil {
		// This replica could not apply a committed entry: what it holds is
		// not the cluster's state, so it must not answer for it.
		return cluster.Mark(fsm.ErrDiverged, fmt.Errorf("this agent's replica diverged and serves no reads; ask another agent: %w", err))
	}
	if !c.caughtUp() {
		return unavailable(errCatchingUp)
	}
	return nil
}

// caughtUp reports whether this replica has once applied every command
// the cluster had committed when it first heard from a leader (the
// entries its state machine never sees — no-ops, barriers,
// configuration changes — need no applying). It stays true
// while this node is a raft server (the follow loop clears it when the node
// becomes a worker, whose replica falls behind).
func (c *core) caughtUp() bool {
	if c.ready.Load() {
		return true
	}
	if id, _ := c.raft.Leader(); id == "" {
		return false
	}
	commit := c.raft.CommitIndex()
	if commit == 0 || !c.raft.CommandsAppliedBy(c.state.Index(), commit) {
		return false
	}
	c.ready.Store(true)
	return true
}

// apply encodes and applies one command through raft.
func (c *core) apply(ctx context.Context, t fsm.CmdType, body any) (fsm.Result, error) {
	data, err := fsm.Encode(t, body)
	if err != nil {
		return fsm.Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, applyTimeout)
	defer cancel()
	if err := c.mayPropose(ctx, t, fsm.Needs(t, body)); err != nil { // versions.go
		return fsm.Result{}, err
	}
	start := time.Now()
	res, _, err := c.raft.Apply(ctx, data)
	c.metrics.Applied(time.Since(start))
	if err != nil {
		return res, fmt.Errorf("apply %s: %w", t, err)
	}
	return res, nil
}

// topology is the node's place now.
func (c *core) topology() cluster.Topology { return c.topo.get() }

// selfNode is the node's record as its heartbeat announces it: a.self
// with the place it has now.
func (c *core) selfNode() cluster.Node {
	n := c.self
	n.Topology = c.topology()
	return n
}

// mayPropose is the check before this agent proposes a command of type t:
// its own replica must not have diverged (a replica that could not apply
// an entry, an older one among them, proposes against state it no longer
// has), and every server must speak t's protocol (checkProtocol). A diverged
// replica does not lead either (the lead loop, leader.Lead, hands leadership over).
func (c *core) mayPropose(ctx context.Context, t fsm.CmdType, need int) error {
	if err := c.state.Diverged(); err != nil {
		// It wraps fsm.ErrDiverged: 500 as for reads (Readable), not 503,
		// which clients retry here.
		return fmt.Errorf("propose %s: this agent's replica diverged and proposes nothing; ask another agent: %w", t, err)
	}
	return c.checkProtocol(ctx, t, need)
}

// checkProtocol is the gate on this leader's proposal of a command of type
// t: gather the members and the raft configuration, then decide with
// protocolGate. Types of the oldest protocol are spoken by every agent
// that can announce anything, so they skip the gathering: the hot
// commands (heartbeats, allocations, task reports) never ask raft.
func (c *core) checkProtocol(ctx context.Context, t fsm.CmdType, need int) error {
	if t.Known() && need <= fsm.ProtocolOldest {
		return nil
	}
	servers, err := c.raft.Servers(ctx)
	if err != nil {
		return fmt.Errorf("propose %s: read raft configuration for the protocol check: %w", t, err)
	}
	return protocolGateNeed(t, need, c.gossip.Members(), servers)
}

// checkProtocolEvery is checkProtocol counting every raft server, alive
// in gossip or not (protocolGateEvery).
func (c *core) checkProtocolEvery(ctx context.Context, t fsm.CmdType, need int) error {
	servers, err := c.raft.Servers(ctx)
	if err != nil {
		return fmt.Errorf("propose %s: read raft configuration for the protocol check: %w", t, err)
	}
	return protocolGateEvery(t, need, c.gossip.Members(), servers)
}

// bootstrapper is the agent's bootstrap loop (consensus.Bootstrapper)
// over its raft and gossip.
func (c *core) bootstrapper() consensus.Bootstrapper {
	return consensus.Bootstrapper{
		Raft: c.raft, Peers: agentBootstrapPeers{c}, Self: c.cfg.Name, Expect: c.bootstrapExpect(),
		Clock: clock.Wall{}, Log: c.log, Interval: bootstrapPoll,
	}
}

// bootstrapPoll is how often the bootstrap loop looks at gossip.
const bootstrapPoll = 250 * time.Millisecond

// agentBootstrapPeers is gossip as the bootstrap loop sees it
// (consensus.BootstrapPeers).
type agentBootstrapPeers struct{ c *core }

func (p agentBootstrapPeers) BootstrapMembers() []consensus.BootstrapMember {
	var ms []consensus.BootstrapMember
	for _, m := range p.c.gossip.Members() {
		ms = append(ms, consensus.BootstrapMember{
			ID: m.Name, RaftAddr: m.Meta.RaftAddr, Expect: m.Meta.BootstrapExpect,
			HasRaftState: m.Meta.HasRaftState, Alive: m.Status == gossip.StatusAlive,
		})
	}
	return ms
}

func (p agentBootstrapPeers) AnnounceRaftState(ctx context.Context) error {
	return p.c.gossip.UpdateMeta(ctx, p.c.meta(true))
}
