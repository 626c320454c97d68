package leader

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Takeover is what a node that raft just elected does.
type Takeover int

const (
	// TakeoverWait: the barrier failed; do nothing until the next
	// leadership change.
	TakeoverWait Takeover = iota
	// TakeoverHandOff: the replica diverged; lead nothing and hand
	// leadership over.
	TakeoverHandOff
	// TakeoverLead: register, then start the leader-only loops.
	TakeoverLead
)

// TakeoverOf decides what a node elected leader does, from the outcome of
// its barrier (nil once its FSM holds everything committed before the
// election) and its replica's divergence (nil while it applies the log).
// It is pure.
func TakeoverOf(barrier, diverged error) Takeover {
	switch {
	case barrier != nil:
		return TakeoverWait
	case diverged != nil:
		// Raft elected us, but our state machine stopped applying the
		// log: leading would schedule from a state nobody else has.
		return TakeoverHandOff
	}
	return TakeoverLead
}

// Elections is raft's leadership as the lead loop follows it
// (*consensus.Raft).
type Elections interface {
	// LeaderCh delivers true on gaining leadership and false on losing it
	// (true twice: lost and regained); it is closed at shutdown.
	LeaderCh() <-chan bool
	// Barrier returns once the FSM has applied everything committed.
	Barrier(ctx context.Context) error
}

// Duties is what the agent does as leader: the lead loop calls them.
type Duties interface {
	// RegisterSelf records this node in the state now rather than at its
	// next heartbeat, so a fresh cluster can take submits at once.
	RegisterSelf(ctx context.Context) error
	// ProposePolicy proposes the configured queue policy, if it changed.
	ProposePolicy(ctx context.Context)
	// Loops are the leader-only loops for the leadership gained at since;
	// each runs until its context ends.
	Loops(since time.Time) []func(ctx context.Context)
}

// Lead is the agent's lead loop: it starts the leader-only loops on
// gaining leadership (TakeoverOf decides, after a barrier) and stops
// them, waiting, on losing it (STYLE.md section 5). A diverged replica
// leads nothing and hands leadership over instead.
type Lead struct {
	Raft   Elections
	State  State
	Lead   Leadership
	Duties Duties
	Clock  Clock
	Log    *slog.Logger
	// BarrierTimeout bounds the barrier after an election;
	// RegisterTimeout bounds RegisterSelf.
	BarrierTimeout, RegisterTimeout time.Duration
}

// Run follows leadership until ctx ends or LeaderCh closes, and returns
// once the loops it started have stopped.
func (l Lead) Run(ctx context.Context) {
	var wg sync.WaitGroup
	var stopLeading context.CancelFunc
	stop := func() {
		if stopLeading != nil {
			stopLeading()
			wg.Wait()
			stopLeading = nil
		}
	}
	defer stop()
	leaderCh := l.Raft.LeaderCh()
	for {
		var isLeader, ok bool
		select {
		case <-ctx.Done():
			return
		case isLeader, ok = <-leaderCh:
			if !ok {
				return
			}
		}
		stop() // lose, or lose-then-regain: stop first
		if !isLeader {
			l.Log.Info("lost leadership")
			continue
		}
		bctx, cancel := context.WithTimeout(ctx, l.BarrierTimeout)
		barrier := l.Raft.Barrier(bctx)
		cancel()
		diverged := l.State.Diverged()
		switch TakeoverOf(barrier, diverged) {
		case TakeoverWait:
			l.Log.Warn("barrier after election", "err", barrier)
			continue
		case TakeoverHandOff:
			l.Log.Error("elected with a diverged replica: refusing to lead, handing leadership over", "err", diverged)
			lctx, cancelLead := context.WithCancel(ctx)
			stopLeading = cancelLead
			wg.Go(func() { l.Lead.HandOff(lctx) })
			continue
		}
		lctx, cancelLead := context.WithCancel(ctx)
		stopLeading = cancelLead
		l.Log.Info("became leader", "index", l.State.View().Index)
		since := l.Clock.Now()
		hctx, cancelHB := context.WithTimeout(ctx, l.RegisterTimeout)
		if err := l.Duties.RegisterSelf(hctx); err != nil {
			l.Log.Warn("register self as leader", "err", err)
		}
		cancelHB()
		l.Duties.ProposePolicy(ctx)
		for _, loop := range l.Duties.Loops(since) {
			wg.Go(func() { loop(lctx) })
		}
	}
}
