package leader

import (
	"context"
	"log/slog"
	"time"
)

// Transfers is raft's leadership transfer: one attempt.
type Transfers interface {
	// TransferLeadership hands leadership to another voter; it fails
	// while no other voter is caught up.
	TransferLeadership(ctx context.Context) error
}

// HandOver is a diverged leader's hand-off (Leadership): nothing may be
// scheduled from its replica, so it transfers leadership away, trying
// again every Interval until an attempt works or ctx ends (leadership
// lost).
type HandOver struct {
	Raft     Transfers
	Clock    Clock
	Log      *slog.Logger
	Interval time.Duration
}

// HandOff transfers leadership away, retrying until it works or ctx ends.
func (h HandOver) HandOff(ctx context.Context) {
	for {
		err := h.Raft.TransferLeadership(ctx)
		if err == nil {
			return
		}
		h.Log.Error("hand leadership over from a diverged replica", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-h.Clock.After(h.Interval):
		}
	}
}
