package leader

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
)

// tickClock is a Clock whose ticker the test drives; Now is fixed.
type tickClock struct {
	now  time.Time
	tick chan time.Time
}

func (c tickClock) Now() time.Time                     { return c.now }
func (tickClock) After(time.Duration) <-chan time.Time { return nil }
func (c tickClock) NewTicker(time.Duration) (<-chan time.Time, func()) {
	return c.tick, func() {}
}

type heldUntil map[string]time.Time

func (h heldUntil) HeldUntil(node string) time.Time { return h[node] }

// TestLeaseWatchDeclaresExpiredNodesDown runs the lease loop for rounds
// the test ticks: a node whose lease ran out is declared down through
// the proposer at the clock's time, a fresh one and the leader itself
// are not, and Run returns when its context ends.
func TestLeaseWatchDeclaresExpiredNodesDown(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	h := &harness{s: fsm.New(), now: now.Add(-time.Hour)}
	for _, name := range []string{"n1", "n2", "n3"} {
		n := cluster.Node{Name: name, APIAddr: "127.0.0.1:7000", CPUs: 8}
		if r, err := h.apply(fsm.CmdUpsertNode, fsm.UpsertNode{Node: n, Time: h.now}); err != nil || r.Err != nil {
			t.Fatalf("register %s: %v %v", name, err, r.Err)
		}
	}
	rec := &recorder{h: h}
	var mu sync.Mutex
	var downs []fsm.NodeDown
	prop := proposerFunc(func(ctx context.Context, ct fsm.CmdType, body any) (fsm.Result, error) {
		if nd, ok := body.(fsm.NodeDown); ok {
			mu.Lock()
			downs = append(downs, nd)
			mu.Unlock()
		}
		return rec.Apply(ctx, ct, body)
	})
	clock := tickClock{now: now, tick: make(chan time.Time)}
	w := LeaseWatch{
		State: h.s, Propose: prop, Clock: clock, Log: slog.New(slog.DiscardHandler),
		Heartbeats: heldUntil{"n2": now.Add(9 * time.Second), "n3": now.Add(-50 * time.Second)},
		Self:       "n1", Since: now.Add(-10 * time.Minute), TTL: 10 * time.Second, PerSecond: 50, Grace: 20 * time.Second,
		Interval: time.Second,
	}
	twoRounds(w.Run, clock.tick, now)

	mu.Lock()
	defer mu.Unlock()
	if len(downs) != 1 || downs[0].Node != "n3" || !downs[0].Time.Equal(now) {
		t.Fatalf("proposed %+v; want one NodeDown of n3 at %v", downs, now)
	}
	if n, _ := h.s.View().Node("n3"); n.Status != cluster.NodeDown {
		t.Errorf("n3 is %s after the loop; want %s", n.Status, cluster.NodeDown)
	}
	if len(rec.errs) > 0 {
		t.Errorf("the FSM refused: %q", rec.errs)
	}
}

type proposerFunc func(context.Context, fsm.CmdType, any) (fsm.Result, error)

func (f proposerFunc) Apply(ctx context.Context, t fsm.CmdType, body any) (fsm.Result, error) {
	return f(ctx, t, body)
}
