package agent

import (
	"context"
	"crypto/tls"
	"encoding/hex"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/gossip"
	"github.com/shoal-sched/shoal/httpapi"
	"github.com/shoal-sched/shoal/leader"
)

// apiBackend is what the HTTP API's front (httpapi.Server) calls
// (httpapi.Backend): it gathers the state, calls the plan of package
// leader or worker that decides a request, and carries it out through
// lead (proposing commands). The security requests are securityAPI's,
// the ones relayed to the node that holds what they are about relayAPI's.
type apiBackend struct {
	*core
	lead *leaderSide
	// leave carries `shoal leave` to the agent's Run.
	leave chan<- time.Duration
	securityAPI
	relayAPI
}

// securityAPI is the API's side of the cluster's security state over
// core: the TLS peer and the user tokens a caller proves itself with,
// joins, renewals, revocations, join and user tokens, the gossip keyring
// and the CA offer (join.go, keyring.go, usertoken.go).
type securityAPI struct{ *core }

// relayAPI is the API's side of what lives on a job's nodes: its output,
// its GPU use, a terminal, stdin, a PMIx fence and sbcast, served here
// from work or relayed to the node that holds it (relay.go, pty.go,
// bcast.go, gpuseries.go, http.go's Logs).
type relayAPI struct {
	*core
	work *workerSide
}

var _ httpapi.Backend = apiBackend{}

// Secure reports whether the agent runs with TLS.
func (s securityAPI) Secure() bool { return s.sec.bundle != nil }

// PeerNode names the cluster node a mutual-TLS peer proves to be.
func (s securityAPI) PeerNode(cs *tls.ConnectionState) (string, bool) {
	if s.sec.bundle == nil {
		return "", false
	}
	return s.sec.bundle.PeerNode(cs)
}

// TokenState is the security record user tokens are checked against:
// the replica's, or a worker's remote view's.
func (s securityAPI) TokenState() *cluster.Security { return s.view().Security() }

// Leads reports whether this agent leads, or why no leader is known.
func (b apiBackend) Leads() (bool, error) {
	_, _, self, err := b.leaderAPI()
	return self, err
}

// Applied is the replica's applied index and a channel closed when it
// applies more.
func (b apiBackend) Applied() (uint64, <-chan struct{}) {
	v := b.state.View()
	return v.Index, v.Changed()
}

// Status is this agent's own status.
func (b apiBackend) Status() api.Status {
	v := b.state.View()
	leader, _ := b.raft.Leader()
	if leader == "" {
		leader, _ = b.remote.LeaderHint() // a worker: the leader the servers name
	}
	hashIndex, sum := b.state.Hash()
	st := api.Status{
		Name: b.cfg.Name, Version: b.cfg.Version, RaftState: b.raft.State(), Leader: leader,
		AppliedIndex: v.Index, Nodes: len(v.Nodes()), Jobs: len(v.Jobs()),
		StateHash: hex.EncodeToString(sum[:]), HashIndex: hashIndex,
	}
	if err := b.state.Diverged(); err != nil {
		st.Diverged = err.Error()
	}
	st.Worker = b.Outside()
	st.Security = "insecure"
	if b := b.sec.bundle; b != nil {
		st.Security, st.CertExpires = "tls", api.FormatTime(b.NotAfter())
	}
	return st
}

// CurrentLeader names the leader and its API address.
func (b apiBackend) CurrentLeader() (api.Leader, error) {
	id, addr, _, err := b.leaderAPI()
	if err != nil {
		return api.Leader{}, err
	}
	return api.Leader{Name: id, Address: addr}, nil
}

// Members are the cluster's gossip members as this agent sees them.
func (b apiBackend) Members() []gossip.Member { return b.gossip.Members() }

// Jobs are the jobs who may see: live ones, or with all every job the
// replica holds, archived ones included (leader.ListJobs).
func (b apiBackend) Jobs(who cluster.Identity, all bool) ([]*cluster.Job, uint64) {
	v := b.state.View()
	return leader.ListJobs(v, all, viewerOf(v.Policy(), who)), v.Index
}

// Nodes are the replica's nodes with what their rendering needs.
func (b apiBackend) Nodes(ctx context.Context) httpapi.NodeRecords {
	v := b.state.View()
	rec := httpapi.NodeRecords{Index: v.Index, Nodes: v.Nodes(), Jobs: v.Jobs(),
		FreeGPUs: map[string]int{}, Roles: b.raftRoles(ctx)}
	for _, n := range rec.Nodes {
		rec.FreeGPUs[n.Name] = len(v.FreeGPUs(n.Name))
	}
	return rec
}

// IsLeader reports whether this agent is the raft leader now.
func (b apiBackend) IsLeader() bool { return b.raft.IsLeader() }

// Heartbeat renews a node's lease (leader only).
func (b apiBackend) Heartbeat(ctx context.Context, n cluster.Node) (api.HeartbeatReply, error) {
	return b.lead.Heartbeat(ctx, n)
}

// TaskEvent records a task's start or exit (leader only).
func (b apiBackend) TaskEvent(ctx context.Context, ev api.TaskEvent) error {
	return b.lead.TaskEvent(ctx, ev)
}

// NodeLeft records that a node's agent left (leader only).
func (b apiBackend) NodeLeft(ctx context.Context, node string) error {
	return b.lead.NodeLeft(ctx, node)
}

// DrainSelf drains a node at its agent's request (leader only).
func (b apiBackend) DrainSelf(ctx context.Context, node string) error {
	return b.lead.DrainSelf(ctx, node)
}

// Index is the replica's applied index.
func (b apiBackend) Index() uint64 { return b.state.Index() }

// SetDrain drains or resumes a node for who (leader only).
func (b apiBackend) SetDrain(ctx context.Context, node string, drain bool, reason string, who cluster.Identity) error {
	return b.lead.leaderSetDrain(ctx, node, drain, reason, who)
}
