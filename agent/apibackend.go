package agent

import (
	"context"
	"crypto/tls"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/httpapi"
	"github.com/shoal-sched/shoal/leader"
)

// apiRoles are the parts of the agent the HTTP API (httpapi.Server)
// calls, each the component whose role it naturally is: core answers for
// the node's hold on the cluster (forwarding, the read floor, its status
// and a worker's follow query), leaderSide for the nodes' internal calls
// to the leader, securityAPI for callers' proofs and the cluster's trust
// material, relayAPI for what lives on a job's nodes, and apiBackend for
// the job queue and the nodes' administration, which read the replica
// and propose through the leader.
func apiRoles(c *core, lead *leaderSide, work *workerSide, leave chan<- time.Duration) httpapi.Roles {
	sec := securityAPI{c}
	b := apiBackend{core: c, lead: lead, leave: leave}
	return httpapi.Roles{
		Cluster: c, Info: c, Internal: lead,
		Auth: sec, Security: sec,
		Relays: relayAPI{core: c, work: work},
		Queue:  b, Admin: b,
	}
}

// apiBackend is the API's job queue (httpapi.Queue) and the nodes'
// administration (httpapi.Admin): it gathers the state, calls the plan of
// package leader that decides a request, and carries it out through lead
// (proposing commands); `shoal leave` goes to the agent's Run.
type apiBackend struct {
	*core
	lead *leaderSide
	// leave carries `shoal leave` to the agent's Run.
	leave chan<- time.Duration
}

// securityAPI is the API's side of the cluster's security state over
// core (httpapi.Authority and httpapi.Security): the TLS peer and the
// user tokens a caller proves itself with, joins, renewals, revocations,
// join and user tokens, the gossip keyring and the CA offer (join.go,
// keyring.go, usertoken.go).
type securityAPI struct{ *core }

// relayAPI is the API's side of what lives on a job's nodes
// (httpapi.Relays): its output, its GPU use, a terminal, stdin, a PMIx
// fence and sbcast, served here from work or relayed to the node that
// holds it (relay.go, pty.go, bcast.go, gpuseries.go).
type relayAPI struct {
	*core
	work *workerSide
}

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

// SetDrain drains or resumes a node on behalf of who (root only:
// leader.PlanSetDrain).
func (b apiBackend) SetDrain(ctx context.Context, node string, drain bool, reason string, who cluster.Identity) error {
	v := b.state.View()
	plan, err := leader.PlanSetDrain(v, node, drain, reason, callerOf(v.Policy(), who))
	if _, err = b.lead.proposeOr(ctx, plan, err); err != nil {
		return err
	}
	verb := "resume"
	if drain {
		verb = "drain"
	}
	b.log.Info("node "+verb+"ed", "node", node, "reason", reason, "by", who.User)
	return nil
}
