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
	// returns the leader's applied index (see MayStart).
	Heartbeat(ctx context.Context) (index uint64, err error)
	// Renewed records a renewal sent at sent and answered at index: for
	// the tasks' supervisors first (a task started once MayStart sees the
	// renewal must find it), then index, then sent.
	Renewed(sent time.Time, index uint64)
	// LastRenewed is the last renewal recorded (Unix 0 for none).
	LastRenewed() time.Time
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
// task) when it has not managed to for TTL (Fence decides). Each renewal
// is also written for the tasks' supervisors (Lessee.Renewed), whose
// watchdogs fence their tasks on their own when it stops coming: the
// agent may be hung or stopped, and this loop then never runs.
type Heartbeater struct {
	Node  Lessee
	Clock LeaseClock
	Log   *slog.Logger
	// Interval is how often the lease is renewed, TTL how long a renewal
	// holds.
	Interval, TTL time.Duration
	// Inherited is what a restarted agent inherits of its predecessor's
	// lease, which its reattached tasks run under: the lease counts from
	// it until the first renewal (Fence).
	Inherited time.Time
	// Fenced, when set, counts each time the node starts fencing.
	Fenced func()
	// NoFence leaves a node whose lease ran out running (a planted bug,
	// test builds only).
	NoFence bool
	// RenewEvery, when set, is how long to wait after a renewal the leader
	// accepted before the next (RenewEvery, the rule, with the cluster's
	// size): the loop still wakes every Interval to check the lease, and
	// retries a failed renewal at once. Nil renews every Interval.
	RenewEvery func() time.Duration
}

// Run renews and fences until ctx ends.
func (h Heartbeater) Run(ctx context.Context) {
	tick, stop := h.Clock.NewTicker(h.Interval)
	defer stop()
	fenced := false
	var next time.Time // when the next renewal is due
	for {
		// A tick may come a little early: due within half an interval.
		if now := h.Clock.Now(); h.RenewEvery == nil || !now.Add(h.Interval/2).Before(next) {
			var renewed bool
			renewed, fenced = h.renew(ctx, fenced)
			if renewed && h.RenewEvery != nil {
				next = now.Add(h.RenewEvery())
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

// renew renews the lease once; renewed says whether the leader accepted.
func (h Heartbeater) renew(ctx context.Context, fenced bool) (renewed, stillFenced bool) {
	sent := h.Clock.Now()
	index, err := h.Node.Heartbeat(ctx)
	if err != nil {
		if ctx.Err() == nil {
			h.Log.Debug("heartbeat", "err", err)
		}
		return false, fenced
	}
	h.Node.Renewed(sent, index)
	if fenced {
		h.Log.Info("lease renewed again")
	}
	return true, false
}

// check fences the node if its lease ran out; fenced says whether it
// was fenced already, and check returns whether it is now.
func (h Heartbeater) check(fenced bool) bool {
	l := Lease{Renewed: h.Node.LastRenewed(), TTL: h.TTL}
	last, fence := Fence(l, h.Inherited, h.Clock.Now(), h.Node.Running())
	if fence && !h.NoFence {
		if !fenced {
			h.Log.Warn("lease expired: stopping every rank on this node", "last_renewed", last, "lease_ttl", h.TTL)
			if h.Fenced != nil {
				h.Fenced()
			}
		}
		fenced = true
		h.Node.Fence()
	}
	return fenced
}
