package leader

import (
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// MaxLeaseStretch bounds how far GrantLease stretches a lease: at most
// this many times --lease-ttl. Ten times keeps the renewals a second at
// the leader at the bound up to 3 × 10 × --lease-ttl × the bound nodes
// (1,666 with the default 10 s TTL and 50 a second; 300 a second at
// 10,000 nodes beyond it), while a node whose agent died just before a
// leader change holds its GPUs at most 10 × --lease-ttl (100 s by
// default) + --kill-grace + the margin: Nomad's failover TTL is 5 min.
const MaxLeaseStretch = 10

// LeaseGrant is what the leader answers a heartbeat with: how long the
// renewal holds, counted from when the node sent it, and how long the
// node should wait before the next.
type LeaseGrant struct {
	TTL, RenewEvery time.Duration
}

// GrantLease is the lease the leader grants each node of a cluster of n
// nodes: renewals every n / perSecond, so the leader sees about perSecond
// a second from all of them, and a TTL of three renewal periods (two
// renewals in a row may be lost), never shorter than ttl (--lease-ttl)
// and never longer than stretch × ttl, stretch being at most
// MaxLeaseStretch (the least that every live agent announces: an agent
// older than stretched leases announces none, and then no lease
// stretches); past that cap the TTL stops growing and renewals come every
// TTL / 3, more than perSecond a second. It is monotone in n and in
// stretch, which is what makes a new leader's wait (LeaseWatch: GrantLease
// with MaxLeaseStretch) safe. It is pure.
func GrantLease(n int, ttl time.Duration, perSecond, stretch int) LeaseGrant {
	every := time.Duration(0)
	if perSecond > 0 && n > 0 {
		every = time.Duration(n) * time.Second / time.Duration(perSecond)
	}
	stretch = min(max(stretch, 1), MaxLeaseStretch)
	g := LeaseGrant{TTL: min(max(ttl, 3*every), time.Duration(stretch)*ttl)}
	g.RenewEvery = min(every, g.TTL/3)
	return g
}

// Expired is a node whose lease ran out.
type Expired struct {
	Node string
	// Until is when its lease ended: the end of the last lease this leader
	// granted it, or this leader's election + failover when that is later.
	Until time.Time
}

// ExpiredLeases names the nodes up in nodes, other than self, whose lease
// ended more than grace before now. A node's lease ends at heldUntil(node),
// the latest end this leader granted it (when it received a heartbeat +
// the TTL it answered; zero when none), but never before electedAt +
// failover: a new leader does not know what its predecessors granted, so
// it gives every node the longest lease any of them could have granted
// (GrantLease's TTL for the nodes the log holds) from its own election.
// It is pure.
func ExpiredLeases(nodes []*cluster.Node, self string, heldUntil func(node string) time.Time, electedAt, now time.Time, failover, grace time.Duration) []Expired {
	var out []Expired
	floor := electedAt.Add(failover)
	for _, n := range nodes {
		if n.Status != cluster.NodeUp || n.Name == self {
			continue
		}
		until := heldUntil(n.Name)
		if until.Before(floor) {
			until = floor
		}
		if now.Sub(until) > grace {
			out = append(out, Expired{Node: n.Name, Until: until})
		}
	}
	return out
}
