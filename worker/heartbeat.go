package worker

import (
	"context"
	"log/slog"
	"time"
)

// Lessee is the agent as the heartbeat loop sees it: its lease with the
// leader and the tasks the lease covers.
type Lessee interface {
	// Heartbeat renews the lease with the leader, local or remote, and
	// returns the leader's answer: its applied index (see MayStart) and
	// the lease it granted.
	Heartbeat(ctx context.Context) (Grant, error)
	// Renewed records a renewal sent at sent, answered at index and
	// holding for ttl: for the tasks' supervisors first (a task started
	// once MayStart sees the renewal must find it), then the rest.
	Renewed(sent time.Time, index uint64, ttl time.Duration)
	// Lease is the last renewal recorded (Renewed Unix 0 for none).
	Lease() Lease
	// Running is how many tasks run here.
	Running() int
	// Fence stops every task here, with cause fenced.
	Fence()
}

// LeaseClock is the time the heartbeat loop reads and waits on.
type LeaseClock interface {
	Clock
	Now() time.Time
}

// Heartbeater is the worker's heartbeat loop: every Interval it renews
// the node's lease with the leader, and fences the node (stops every
// task) when its last renewal's TTL ran out (Fence decides). The TTL is
// what the leader granted with that renewal (GrantedTTL): TTL, the
// node's --lease-ttl, from a leader that grants none. Each renewal, with
// its TTL, is also written for the tasks' supervisors (Lessee.Renewed),
// whose watchdogs fence their tasks on their own when it stops coming:
// the agent may be hung or stopped, and this loop then never runs.
type Heartbeater struct {
	Node  Lessee
	Clock LeaseClock
	Log   *slog.Logger
	// Interval is how often the lease is checked (and at most how often
	// it is renewed), TTL the node's --lease-ttl.
	Interval, TTL time.Duration
	// MaxStretch caps a granted TTL at MaxStretch × TTL (GrantedTTL);
	// zero takes the leader's grant as it is up to 1 × TTL.
	MaxStretch int
	// Inherited is the end of the lease a restarted agent inherits from
	// its predecessor, which its reattached tasks run under (Fence).
	Inherited time.Time
	// Fenced, when set, counts each time the node starts fencing.
	Fenced func()
	// NoFence leaves a node whose lease ran out running (a planted bug,
	// test builds only).
	NoFence bool
	// RenewAfter, when set, is how long to wait after a renewal the
	// leader answered with g before the next (RenewAfter, the rule, with
	// the cluster's size): the loop still wakes every Interval to check
	// the lease, and retries a failed renewal at once. Nil renews every
	// Interval.
	RenewAfter func(g Grant) time.Duration
}

// Run renews and fences until ctx ends.
func (h Heartbeater) Run(ctx context.Context) {
	tick, stop := h.Clock.NewTicker(h.Interval)
	defer stop()
	fenced := false
	var next time.Time // when the next renewal is due
	for {
		// A tick may come a little early: due within half an interval.
		if now := h.Clock.Now(); h.RenewAfter == nil || !now.Add(h.Interval/2).Before(next) {
			var g *Grant
			g, fenced = h.renew(ctx, fenced)
			if g != nil && h.RenewAfter != nil {
				next = now.Add(h.RenewAfter(*g))
			}
		}
		fenced = h.check(fenced)
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
	}
}

// Round renews the lease once and fences the node if the lease ran out;
// fenced says whether the previous round fenced, and Round returns
// whether this one did or the node stays fenced.
func (h Heartbeater) Round(ctx context.Context, fenced bool) bool {
	_, fenced = h.renew(ctx, fenced)
	return h.check(fenced)
}

// renew renews the lease once; g is the leader's answer, nil when it did
// not accept.
func (h Heartbeater) renew(ctx context.Context, fenced bool) (g *Grant, stillFenced bool) {
	sent := h.Clock.Now()
	grant, err := h.Node.Heartbeat(ctx)
	if err != nil {
		if ctx.Err() == nil {
			h.Log.Debug("heartbeat", "err", err)
		}
		return nil, fenced
	}
	h.Node.Renewed(sent, grant.Index, GrantedTTL(grant, h.TTL, max(h.MaxStretch, 1)))
	if fenced {
		h.Log.Info("lease renewed again")
	}
	return &grant, false
}

// check fences the node if its lease ran out; fenced says whether it
// was fenced already, and check returns whether it is now.
func (h Heartbeater) check(fenced bool) bool {
	l := h.Node.Lease()
	end, fence := Fence(l, h.Inherited, h.Clock.Now(), h.Node.Running())
	if fence && !h.NoFence {
		if !fenced {
			h.Log.Warn("lease expired: stopping every rank on this node", "lease_end", end, "lease_ttl", l.TTL)
			if h.Fenced != nil {
				h.Fenced()
			}
		}
		fenced = true
		h.Node.Fence()
	}
	return fenced
}
