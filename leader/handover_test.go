package leader

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoal-sched/shoal/internal/clock"
)

// transfers fails its first fails attempts.
type transfers struct {
	fails    int32
	attempts atomic.Int32
}

func (f *transfers) TransferLeadership(context.Context) error {
	if f.attempts.Add(1) <= f.fails {
		return errors.New("no other voter is caught up")
	}
	return nil
}

// TestHandOver: a diverged leader tries to hand leadership over every
// Interval until an attempt works, and stops trying once it lost
// leadership (DESIGN: a replica that diverged never leads).
func TestHandOver(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name     string
		fails    int32
		cancelAt time.Duration // 0: never
		attempts int32
		took     time.Duration
	}{
		{"at once", 0, 0, 1, 0},
		{"after three failures", 3, 0, 4, 3 * time.Second},
		{"leadership lost meanwhile", 100, 2500 * time.Millisecond, 3, 2500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if tc.cancelAt > 0 {
					time.AfterFunc(tc.cancelAt, cancel)
				}
				f := &transfers{fails: tc.fails}
				start := time.Now()
				HandOver{Raft: f, Clock: clock.Wall{}, Log: log, Interval: time.Second}.HandOff(ctx)
				if got := f.attempts.Load(); got != tc.attempts || time.Since(start) != tc.took {
					t.Errorf("HandOff: %d attempts in %v; want %d in %v", got, time.Since(start), tc.attempts, tc.took)
				}
			})
		})
	}
}
