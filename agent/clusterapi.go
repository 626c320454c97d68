package agent

import (
	"encoding/hex"

	"github.com/shoal-sched/shoal/api"
)

// core's side of the HTTP API: it is httpapi.Cluster (who leads, the
// replica's progress, the leader-only checks; core.go has Readable,
// LeaderClient and Outside) and httpapi.Info (this agent's status, the
// leader, the members; follow.go has Follow).

// Leads reports whether this agent leads, or why no leader is known.
func (c *core) Leads() (bool, error) {
	_, _, self, err := c.leaderAPI()
	return self, err
}

// Applied is the replica's applied index and a channel closed when it
// applies more.
func (c *core) Applied() (uint64, <-chan struct{}) {
	v := c.state.View()
	return v.Index, v.Changed()
}

// Status is this agent's own status.
func (c *core) Status() api.Status {
	v := c.state.View()
	leader, _ := c.raft.Leader()
	if leader == "" {
		leader, _ = c.remote.LeaderHint() // a worker: the leader the servers name
	}
	hashIndex, sum := c.state.Hash()
	st := api.Status{
		Name: c.cfg.Name, Version: c.cfg.Version, RaftState: c.raft.State(), Leader: leader,
		AppliedIndex: v.Index, Nodes: len(v.Nodes()), Jobs: len(v.Jobs()),
		StateHash: hex.EncodeToString(sum[:]), HashIndex: hashIndex,
	}
	if err := c.state.Diverged(); err != nil {
		st.Diverged = err.Error()
	}
	st.Worker = c.Outside()
	st.Security = "insecure"
	if b := c.sec.bundle; b != nil {
		st.Security, st.CertExpires = "tls", api.FormatTime(b.NotAfter())
	}
	return st
}

// CurrentLeader names the leader and its API address.
func (c *core) CurrentLeader() (api.Leader, error) {
	id, addr, _, err := c.leaderAPI()
	if err != nil {
		return api.Leader{}, err
	}
	return api.Leader{Name: id, Address: addr}, nil
}

// Members are the cluster's gossip members as this agent sees them.
func (c *core) Members() []api.Member {
	ms := c.gossip.Members()
	out := make([]api.Member, 0, len(ms))
	for _, m := range ms {
		out = append(out, api.Member{Name: m.Name, Address: m.Addr, Status: string(m.Status), APIAddr: m.Meta.APIAddr,
			GPUs: m.Meta.GPUs, Switch: m.Meta.Switch, Version: m.Meta.Version})
	}
	return out
}

// IsLeader reports whether this agent is the raft leader now.
func (c *core) IsLeader() bool { return c.raft.IsLeader() }

// Index is the replica's applied index (Applied without a view).
func (c *core) Index() uint64 { return c.state.Index() }
