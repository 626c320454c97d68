package node

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/gossip"
	"github.com/shoal-sched/shoal/topology"
)

// DefaultTopologyInterval is how often the agent runs its topology
// sources (--topology-interval).
const DefaultTopologyInterval = 30 * time.Second

// topologySourceTimeout bounds one source's run in a round (the LLDP
// source bounds lldpcli itself, more tightly).
const topologySourceTimeout = 20 * time.Second

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

// topology is the node's place now.
func (a *Agent) topology() cluster.Topology { return a.topo.get() }

// selfNode is the node's record as its heartbeat announces it: a.self
// with the place it has now.
func (a *Agent) selfNode() cluster.Node {
	n := a.self
	n.Topology = a.topology()
	return n
}

// sourceResult is what one source gave in a round.
type sourceResult struct {
	found topology.Found
	err   error
}

// discoveryState is what the discovery loop carries from one round to
// the next.
type discoveryState struct {
	// found is each source's last good answer, by the sources' order: a
	// source that fails keeps its last answer, so a slow lldpcli does not
	// make the node flap between placed and unplaced.
	found []topology.Found
	// errs is each source's last error text ("" none), so a failure
	// repeating every round is logged once.
	errs []string
	// announced is the place the node announces.
	announced cluster.Topology
	// saidNone is set once "no topology found" was logged, until
	// something is found again.
	saidNone bool
}

// discoveryStep is what one round decided.
type discoveryStep struct {
	next discoveryState
	// topology is the merged place and origins where each field came from.
	topology cluster.Topology
	origins  topology.Origins
	// changed: the place differs from the one announced; announce it and
	// log the change.
	changed bool
	// logNone: log, once, that neither the operator nor any source gave a
	// place (the node stays unplaced and schedulable).
	logNone bool
	// warn are the failures and refused names to log: new ones only.
	warn []error
}

// planDiscovery decides a round of topology discovery: it folds the
// sources' results into what they found so far, merges that under the
// operator's place (topology.Merge: the operator wins, field by field),
// and says whether the place changed and what to log. It is pure.
func planDiscovery(s discoveryState, operator cluster.Topology, results []sourceResult) discoveryStep {
	next := discoveryState{
		found:     make([]topology.Found, len(results)),
		errs:      make([]string, len(results)),
		announced: s.announced,
		saidNone:  s.saidNone,
	}
	var step discoveryStep
	for i, r := range results {
		var prev topology.Found
		var prevErr string
		if i < len(s.found) {
			prev, prevErr = s.found[i], s.errs[i]
		}
		err := r.err
		f := prev
		if err == nil {
			var cerr error
			f, cerr = topology.Checked(r.found)
			err = cerr
		}
		next.found[i] = f
		if err != nil {
			next.errs[i] = err.Error()
			if next.errs[i] != prevErr {
				step.warn = append(step.warn, err)
			}
		}
	}
	step.topology, step.origins = topology.Merge(operator, next.found)
	step.changed = step.topology != s.announced
	next.announced = step.topology
	if step.topology == (cluster.Topology{}) {
		step.logNone = !s.saidNone
		next.saidNone = true
	} else {
		next.saidNone = false
	}
	step.next = next
	return step
}

// discoveryLoop runs the topology sources now and every
// TopologyInterval until ctx ends, and announces the node's place (in
// gossip at once, in the node's record with its next heartbeat) when it
// changes. Without sources (--discover-topology=off) the node announces
// the operator's place and the loop returns.
func (a *Agent) discoveryLoop(ctx context.Context) {
	d := discovery{
		sources:  a.cfg.TopologySources,
		interval: a.cfg.TopologyInterval,
		operator: a.cfg.Topology,
		log:      a.log,
		set:      a.topo.set,
		gossiped: func() (cluster.Topology, bool) {
			for _, m := range a.gossip.Members() {
				if m.Name == a.cfg.Name {
					return cluster.Topology{Switch: m.Meta.Switch, SwitchParent: m.Meta.SwitchParent, Block: m.Meta.Block}, true
				}
			}
			return cluster.Topology{}, false
		},
		regossip: func(ctx context.Context) error {
			return a.gossip.UpdateMeta(ctx, a.meta(a.hasRaftState()))
		},
	}
	d.run(ctx, a.topology())
}

// discovery is the discovery loop and what it acts on: the agent's
// place and gossip (discoveryLoop), or a test's fakes.
type discovery struct {
	sources  []topology.Source
	interval time.Duration
	operator cluster.Topology
	log      *slog.Logger
	// set makes t the node's place, which meta() and the heartbeat read.
	set func(t cluster.Topology)
	// gossiped is the place the node's gossip metadata carries now;
	// false when gossip does not list the node itself.
	gossiped func() (cluster.Topology, bool)
	// regossip announces the node's metadata again, with the place set.
	regossip func(ctx context.Context) error
}

// run is the loop: gather (run the sources), decide (planDiscovery),
// act (set the place, log, and re-gossip while gossip carries another
// place: after a change, after a failed announcement, or when another
// announcement raced with ours). current is the place announced at
// start.
func (d discovery) run(ctx context.Context, current cluster.Topology) {
	if len(d.sources) == 0 {
		return
	}
	st := discoveryState{announced: current}
	gossipFailed := ""
	t := time.NewTicker(d.interval)
	defer t.Stop()
	for {
		results := make([]sourceResult, len(d.sources))
		for i, src := range d.sources {
			sctx, cancel := context.WithTimeout(ctx, topologySourceTimeout)
			f, err := src.Discover(sctx)
			cancel()
			if ctx.Err() != nil {
				return
			}
			f.Source = src.Name()
			results[i] = sourceResult{found: f, err: err}
		}
		step := planDiscovery(st, d.operator, results)
		st = step.next
		for _, err := range step.warn {
			d.log.Warn("topology discovery", "err", err)
		}
		if step.logNone {
			d.log.Info("no topology found: this node stays unplaced in the switch tree (still schedulable); give --switch or run lldpd",
				"sources", sourceNames(d.sources))
		}
		if step.changed {
			d.set(step.topology)
			d.log.Info("topology changed", "switch", step.topology.Switch, "switch_parent", step.topology.SwitchParent,
				"block", step.topology.Block, "switch_from", step.origins.Switch,
				"switch_parent_from", step.origins.SwitchParent, "block_from", step.origins.Block)
		}
		if g, ok := d.gossiped(); ok && g != step.topology {
			err := d.regossip(ctx)
			switch {
			case err == nil, errors.Is(err, gossip.ErrShutdown):
				gossipFailed = ""
			case err.Error() != gossipFailed: // once per kind of failure
				gossipFailed = err.Error()
				d.log.Warn("announce topology in gossip; retried next round", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// hasRaftState is what the node's gossip meta says of its raft state:
// on disk, or a leader seen (as the bootstrap loop announces it).
func (a *Agent) hasRaftState() bool {
	if a.raft.HasState() {
		return true
	}
	id, _ := a.raft.Leader()
	return id != ""
}

func sourceNames(sources []topology.Source) []string {
	names := make([]string, len(sources))
	for i, s := range sources {
		names[i] = s.Name()
	}
	return names
}
