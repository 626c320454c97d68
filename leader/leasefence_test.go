package leader

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/internal/clock"
	"github.com/shoal-sched/shoal/worker"
)

// leaseNode is one node's agent as the heartbeat loop sees it, renewing
// with whichever leader leads (its LeaseTable and the nodes it counts),
// while it is not cut off; it records when it renewed and when it fenced.
type leaseNode struct {
	mu      sync.Mutex
	name    string
	nodes   int
	leader  *LeaseTable
	cut     bool
	lease   worker.Lease
	sent    []time.Time // the renewals the leader answered
	fenced  time.Time   // the first fence
	ttl     time.Duration
	perSec  int
	running int
}

func (n *leaseNode) Heartbeat(context.Context) (worker.Grant, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cut {
		return worker.Grant{}, fmt.Errorf("leader unreachable")
	}
	g := GrantLease(n.nodes, n.ttl, n.perSec, MaxLeaseStretch)
	n.leader.Renew(n.name, time.Now(), g.TTL)
	return worker.Grant{Index: 1, TTL: g.TTL, RenewEvery: g.RenewEvery}, nil
}

func (n *leaseNode) Renewed(sent time.Time, index uint64, ttl time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lease = worker.Lease{Renewed: sent, Index: index, TTL: ttl}
	n.sent = append(n.sent, sent)
}

func (n *leaseNode) Lease() worker.Lease {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lease
}

func (n *leaseNode) Running() int { return n.running }

func (n *leaseNode) Fence() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fenced.IsZero() {
		n.fenced = time.Now()
	}
}

// TestStretchedLeaseFencesBeforeDown runs a node's heartbeat loop
// (worker.Heartbeater) and the leader's lease loop (LeaseWatch) on fake
// time, in a cluster of 40 nodes with a bound of one renewal a second:
// the leader grants the cap, 10 × the 10 s --lease-ttl, renewed every
// 33 s. The node is cut off at 70 s. With the same leader, the node is
// not declared down before its 100 s lease + grace has passed since the
// leader last heard it (not after --lease-ttl); when a new leader is
// elected as the node is cut off, knowing nothing of the lease, it waits
// its failover lease (the cap) from its election. Either way the node has
// fenced, and its ranks have had --kill-grace to die, before it is
// declared down.
func TestStretchedLeaseFencesBeforeDown(t *testing.T) {
	const (
		nodes     = 40
		ttl       = 10 * time.Second
		perSecond = 1
		killGrace = 10 * time.Second
		grace     = killGrace + 2*time.Second // node's leaseMargin
		cutAt     = 70 * time.Second
	)
	for _, newLeader := range []bool{false, true} {
		t.Run(fmt.Sprintf("new leader %t", newLeader), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				h := &harness{s: fsm.New(), now: start}
				for i := range nodes {
					n := cluster.Node{Name: fmt.Sprintf("n%02d", i), APIAddr: "127.0.0.1:7000", CPUs: 8}
					if r, err := h.apply(fsm.CmdUpsertNode, fsm.UpsertNode{Node: n, Time: start}); err != nil || r.Err != nil {
						t.Fatalf("register %s: %v %v", n.Name, err, r.Err)
					}
				}
				s := h.s
				var mu sync.Mutex
				downs := map[string]time.Time{} // each leader's first NodeDown of each node, by "leader/node"
				watch := func(table *LeaseTable, since time.Time, name string) LeaseWatch {
					prop := proposerFunc(func(_ context.Context, _ fsm.CmdType, body any) (fsm.Result, error) {
						if nd, ok := body.(fsm.NodeDown); ok {
							mu.Lock()
							if _, seen := downs[name+"/"+nd.Node]; !seen {
								downs[name+"/"+nd.Node] = nd.Time
							}
							mu.Unlock()
						}
						return fsm.Result{}, nil
					})
					return LeaseWatch{State: s, Propose: prop, Clock: clock.Wall{}, Log: slog.New(slog.DiscardHandler),
						Heartbeats: table, Self: "n00", Since: since, TTL: ttl, PerSecond: perSecond, Grace: grace,
						Interval: time.Second}
				}
				old := &LeaseTable{}
				node := &leaseNode{name: "n01", nodes: nodes, leader: old, ttl: ttl, perSec: perSecond, running: 1}
				hb := worker.Heartbeater{Node: node, Clock: clock.Wall{}, Log: slog.New(slog.DiscardHandler),
					Interval: time.Second, TTL: ttl, MaxStretch: MaxLeaseStretch,
					RenewAfter: func(g worker.Grant) time.Duration {
						return worker.RenewAfter(g, nodes, time.Second, ttl, perSecond, 0)
					}}
				ctx, cancel := context.WithCancel(t.Context())
				var wg sync.WaitGroup
				wg.Go(func() { hb.Run(ctx) })
				// The old leader has led for an hour: its failover wait is over.
				octx, ocancel := context.WithCancel(ctx)
				wg.Go(func() { watch(old, start.Add(-time.Hour), "old").Run(octx) })

				time.Sleep(cutAt)
				node.mu.Lock()
				node.cut = true
				node.mu.Unlock()
				elected := time.Now()
				if newLeader {
					ocancel()
					wg.Go(func() { watch(&LeaseTable{}, elected, "new").Run(ctx) })
				}
				time.Sleep(200 * time.Second)
				cancel()
				ocancel()
				wg.Wait()

				node.mu.Lock()
				defer node.mu.Unlock()
				mu.Lock()
				defer mu.Unlock()
				capTTL := MaxLeaseStretch * ttl
				if node.lease.TTL != capTTL {
					t.Fatalf("the node holds a %s lease; want the cap %s (%d nodes, %d a second)", node.lease.TTL, capTTL, nodes, perSecond)
				}
				if len(node.sent) < 3 || len(node.sent) > 4 {
					t.Errorf("renewed at %v before the cut at +%s; want every ~33 s", since(start, node.sent), cutAt)
				}
				last := node.sent[len(node.sent)-1]
				judge := "old"
				if newLeader {
					judge = "new"
				}
				down, ok := downs[judge+"/n01"]
				if !ok {
					t.Fatalf("n01 never declared down (downs %v)", downs)
				}
				if node.fenced.IsZero() {
					t.Fatal("n01 never fenced")
				}
				// The node fences once its granted TTL has passed, no sooner.
				if end := last.Add(capTTL); node.fenced.Before(end) || node.fenced.After(end.Add(time.Second)) {
					t.Errorf("fenced at +%s; want within a tick after its lease's end +%s", node.fenced.Sub(start), end.Sub(start))
				}
				// Down only after the granted TTL + grace since the leader
				// last heard it, and never before a new leader's failover.
				floor := last.Add(capTTL + grace)
				if newLeader {
					floor = elected.Add(GrantLease(nodes, ttl, perSecond, MaxLeaseStretch).TTL + grace)
				}
				if !down.After(floor) {
					t.Errorf("declared down at +%s; want after +%s", down.Sub(start), floor.Sub(start))
				}
				if !node.fenced.Add(killGrace).Before(down) {
					t.Errorf("fenced at +%s, ranks dead by +%s, but declared down at +%s", node.fenced.Sub(start),
						node.fenced.Add(killGrace).Sub(start), down.Sub(start))
				}
				// A node that never renewed with this leader: down only after
				// the failover lease from the election.
				if d, ok := downs["new/n02"]; newLeader && (!ok || !d.After(elected.Add(capTTL+grace))) {
					t.Errorf("n02 (silent) declared down at +%s; want after +%s", d.Sub(start), elected.Add(capTTL+grace).Sub(start))
				}
			})
		})
	}
}

func since(start time.Time, ts []time.Time) []time.Duration {
	var out []time.Duration
	for _, t := range ts {
		out = append(out, t.Sub(start))
	}
	return out
}
