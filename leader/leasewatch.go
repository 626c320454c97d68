package leader

import (
	"context"
	"log/slog"
	"time"

	"github.com/shoal-sched/shoal/fsm"
)

// Heartbeats is when the leader last heard from each node (the zero time
// for never).
type Heartbeats interface {
	Last(node string) time.Time
}

// LeaseWatch is the leader's lease loop: every Interval it asks
// ExpiredLeases which nodes' leases ran out and declares them down
// through Propose. A lease is counted from the later of the node's last
// heartbeat and Since (this node's election), so a new leader gives every
// node a full lease before judging it. It runs while this node leads: its
// owner cancels Run's context on losing leadership.
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
	// Expiry is how long after its last heartbeat a node is down.
	Expiry   time.Duration
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
		for _, e := range ExpiredLeases(w.State.View().Nodes(), w.Self, w.Heartbeats.Last, w.Since, now, w.Expiry) {
			w.Log.Warn("node lease expired", "node", e.Node, "last_heartbeat", e.Last, "expiry", w.Expiry)
			if _, err := w.Propose.Apply(ctx, fsm.CmdNodeDown, fsm.NodeDown{Node: e.Node, Time: now}); err != nil {
				w.Log.Warn("declare node down", "node", e.Node, "err", err)
			}
		}
	}
}
