package leader

import (
	"context"
	"log/slog"
	"time"

	"github.com/shoal-sched/shoal/fsm"
)

// Heartbeats is what the leader granted each node.
type Heartbeats interface {
	// HeldUntil is when the latest lease this leader granted node ends
	// (the zero time for none).
	HeldUntil(node string) time.Time
}

// LeaseWatch is the leader's lease loop: every Interval it asks
// ExpiredLeases which nodes' leases ran out more than Grace ago and
// declares them down through Propose. A new leader gives every node the
// longest lease a predecessor could have granted (GrantLease with TTL,
// PerSecond and MaxLeaseStretch over the nodes the log holds) from Since
// before judging it.
// It runs while this node leads: its owner cancels Run's context on
// losing leadership.
//
// Why the failover wait is safe: GrantLease depends only on the number of
// node records, and the log never removes one, so that number only grows
// along the log. A predecessor granted from its replica, at an index that
// was committed, which this leader has applied (it starts its loops after
// a barrier); so no predecessor ever granted more than GrantLease of the
// count this leader sees (nor more than MaxLeaseStretch, which bounds
// what any agent announces). A leader cut off from its quorum stops
// answering heartbeats when its raft leader lease ends, before another
// can be elected (within Grace's margin). An older agent as leader grants
// only --lease-ttl, less. Every agent must run with the same --lease-ttl,
// as before.
type LeaseWatch struct {
	State      State
	Propose    Proposer
	Clock      Clock
	Log        *slog.Logger
	Heartbeats Heartbeats
	// Self is this node, never declared down by itself.
	Self string
	// Since is when this node became leader.
	Since time.Time
	// TTL (--lease-ttl) and PerSecond are GrantLease's arguments, for
	// the failover wait.
	TTL       time.Duration
	PerSecond int
	// Grace is how long after its lease ended a node is down: the
	// node's kill grace and a margin.
	Grace    time.Duration
	Interval time.Duration
}

// Run watches the leases until ctx ends. It decides nothing from a
// diverged replica (the scheduler hands leadership over).
func (w LeaseWatch) Run(ctx context.Context) {
	tick, stop := w.Clock.NewTicker(w.Interval)
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
		if w.State.Diverged() != nil {
			continue // the scheduler hands leadership over
		}
		now := w.Clock.Now()
		nodes := w.State.View().Nodes()
		failover := GrantLease(len(nodes), w.TTL, w.PerSecond, MaxLeaseStretch).TTL
		for _, e := range ExpiredLeases(nodes, w.Self, w.Heartbeats.HeldUntil, w.Since, now, failover, w.Grace) {
			w.Log.Warn("node lease expired", "node", e.Node, "lease_end", e.Until, "grace", w.Grace)
			if _, err := w.Propose.Apply(ctx, fsm.CmdNodeDown, fsm.NodeDown{Node: e.Node, Time: now}); err != nil {
				w.Log.Warn("declare node down", "node", e.Node, "err", err)
			}
		}
	}
}
