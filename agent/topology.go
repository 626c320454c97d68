package agent

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/gossip"
	"github.com/shoal-sched/shoal/topology"
)

// DefaultTopologyInterval is how often the agent runs its topology
// sources (--topology-interval).
const DefaultTopologyInterval = 30 * time.Second

// currentTopology is the node's place as it announces it now: the
// operator's (Config.Topology) merged with what discovery found. meta()
// and the heartbeat's node record read it.
type currentTopology struct {
	mu sync.Mutex
	t  cluster.Topology
}

func (c *currentTopology) get() cluster.Topology {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *currentTopology) set(t cluster.Topology) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// discoverer is the topology discovery loop (topology.Discoverer) over
// this agent's place and gossip. Without sources
// (--discover-topology=off) the node announces the operator's place and
// the loop returns at once.
func (c *core) discoverer() topology.Discoverer {
	return topology.Discoverer{Sources: c.cfg.TopologySources, Interval: c.cfg.TopologyInterval,
		Operator: c.cfg.Topology, Place: announcedPlace{c}, Log: c.log}
}

// announcedPlace is topology.Place over the agent's current place and
// its gossip.
type announcedPlace struct{ c *core }

func (p announcedPlace) Set(t cluster.Topology) { p.c.topo.set(t) }

func (p announcedPlace) Gossiped() (cluster.Topology, bool) {
	m, ok := p.c.gossip.Member(p.c.cfg.Name)
	if !ok {
		return cluster.Topology{}, false
	}
	return cluster.Topology{Switch: m.Meta.Switch, SwitchParent: m.Meta.SwitchParent, Block: m.Meta.Block}, true
}

func (p announcedPlace) Regossip(ctx context.Context) error {
	err := p.c.gossip.UpdateMeta(ctx, p.c.meta(p.c.hasRaftState()))
	if errors.Is(err, gossip.ErrShutdown) {
		return nil // the agent is stopping
	}
	return err
}

// hasRaftState is what the node's gossip meta says of its raft state:
// on disk, or a leader seen (as the bootstrap loop announces it).
func (c *core) hasRaftState() bool {
	if c.raft.HasState() {
		return true
	}
	id, _ := c.raft.Leader()
	return id != ""
}
