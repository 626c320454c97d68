package topology

import (
	"context"
	"log/slog"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// SourceTimeout bounds one source's run in a round (the LLDP source
// bounds lldpcli itself, more tightly).
const SourceTimeout = 20 * time.Second

// Result is what one source gave in a round.
type Result struct {
	Found Found
	Err   error
}

// discoveryState is what the discovery loop carries from one round to
// the next.
type discoveryState struct {
	// found is each source's last good answer, by the sources' order: a
	// source that fails keeps its last answer, so a slow lldpcli does not
	// make the node flap between placed and unplaced.
	found []Found
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
	origins  Origins
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
// operator's place (Merge: the operator wins, field by field),
// and says whether the place changed and what to log. It is pure.
func planDiscovery(s discoveryState, operator cluster.Topology, results []Result) discoveryStep {
	next := discoveryState{
		found:     make([]Found, len(results)),
		errs:      make([]string, len(results)),
		announced: s.announced,
		saidNone:  s.saidNone,
	}
	var step discoveryStep
	for i, r := range results {
		var prev Found
		var prevErr string
		if i < len(s.found) {
			prev, prevErr = s.found[i], s.errs[i]
		}
		err := r.Err
		f := prev
		if err == nil {
			var cerr error
			f, cerr = Checked(r.Found)
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
	step.topology, step.origins = Merge(operator, next.found)
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

// Place is the node's announced place as the discovery loop acts on it
// (the agent, package node, implements it over its gossip).
type Place interface {
	// Set makes t the node's place, which its gossip metadata and its
	// heartbeat's node record carry from then on.
	Set(t cluster.Topology)
	// Gossiped is the place the node's gossip metadata carries now;
	// false when gossip does not list the node itself.
	Gossiped() (cluster.Topology, bool)
	// Regossip announces the node's metadata again, with the place set;
	// nil once gossip has shut down.
	Regossip(ctx context.Context) error
}

// Discoverer is the agent's discovery loop: it runs Sources now and every
// Interval, decides with planDiscovery, and announces the node's place
// through Place when it changes.
type Discoverer struct {
	Sources  []Source
	Interval time.Duration
	// Operator is the place the operator gave (flags, topology.conf).
	Operator cluster.Topology
	Place    Place
	Log      *slog.Logger
}

// Run is the loop: gather (run the sources), decide (planDiscovery),
// act (set the place, log, and re-gossip while gossip carries another
// place: after a change, after a failed announcement, or when another
// announcement raced with ours). current is the place announced at
// start.
func (d Discoverer) Run(ctx context.Context, current cluster.Topology) {
	if len(d.Sources) == 0 {
		return
	}
	st := discoveryState{announced: current}
	gossipFailed := ""
	t := time.NewTicker(d.Interval)
	defer t.Stop()
	for {
		results := make([]Result, len(d.Sources))
		for i, src := range d.Sources {
			sctx, cancel := context.WithTimeout(ctx, SourceTimeout)
			f, err := src.Discover(sctx)
			cancel()
			if ctx.Err() != nil {
				return
			}
			f.Source = src.Name()
			results[i] = Result{Found: f, Err: err}
		}
		step := planDiscovery(st, d.Operator, results)
		st = step.next
		for _, err := range step.warn {
			d.Log.Warn("topology discovery", "err", err)
		}
		if step.logNone {
			d.Log.Info("no topology found: this node stays unplaced in the switch tree (still schedulable); give --switch or run lldpd",
				"sources", names(d.Sources))
		}
		if step.changed {
			d.Place.Set(step.topology)
			d.Log.Info("topology changed", "switch", step.topology.Switch, "switch_parent", step.topology.SwitchParent,
				"block", step.topology.Block, "switch_from", step.origins.Switch,
				"switch_parent_from", step.origins.SwitchParent, "block_from", step.origins.Block)
		}
		if g, ok := d.Place.Gossiped(); ok && g != step.topology {
			err := d.Place.Regossip(ctx)
			switch {
			case err == nil:
				gossipFailed = ""
			case err.Error() != gossipFailed: // once per kind of failure
				gossipFailed = err.Error()
				d.Log.Warn("announce topology in gossip; retried next round", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func names(sources []Source) []string {
	names := make([]string, len(sources))
	for i, s := range sources {
		names[i] = s.Name()
	}
	return names
}
