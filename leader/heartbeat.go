package leader

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
)

// The leader's side of a node's heartbeat: the lease it grants
// (GrantLease, as far as every live agent agrees to stretch it:
// AgreedStretch), the record of what it granted (LeaseTable, which the
// lease loop judges nodes by), and whether the node's record must be
// written (PlanHeartbeat). The agent gathers, records the lease before it
// answers, and proposes.

// HeartbeatPlan is the leader's answer to one heartbeat.
type HeartbeatPlan struct {
	// Grant is the lease granted; the agent records it (LeaseTable.Renew)
	// before the answer leaves, so that the lease loop never judges the
	// node by less than it was told.
	Grant LeaseGrant
	// Upsert: what the node announces is new, or changed, or the node is
	// not up: propose UpsertNode with it. Register: the node has no record
	// yet.
	Upsert, Register bool
}

// PlanHeartbeat decides the answer to node n's heartbeat on view v:
// the lease for the nodes the log holds (GrantLease with ttl, perSecond
// and the agreed stretch), and whether its record is written. A name that
// is not a valid node name is refused. It is pure.
func PlanHeartbeat(v *fsm.View, n cluster.Node, ttl time.Duration, perSecond, stretch int) (HeartbeatPlan, error) {
	if !cluster.ValidNodeName(n.Name) {
		return HeartbeatPlan{}, invalid(fmt.Errorf("heartbeat: node name %q is not valid", n.Name))
	}
	p := HeartbeatPlan{Grant: GrantLease(len(v.Nodes()), ttl, perSecond, stretch)}
	cur, ok := v.Node(n.Name)
	p.Register = !ok
	p.Upsert = !ok || cur.Status != cluster.NodeUp || !SameAnnouncement(cur, &n)
	return p, nil
}

// AgreedStretch is how far the leader may stretch a lease (GrantLease):
// the least LeaseStretch any live member announces (announced: one entry
// a live member, 0 for an agent that announces none), none (0) while an
// agent older than stretched leases is alive, since it could be elected
// and would judge a node by --lease-ttl alone; never more than
// MaxLeaseStretch. It is pure.
func AgreedStretch(announced []int) int {
	stretch := MaxLeaseStretch
	for _, s := range announced {
		stretch = min(stretch, s)
	}
	return stretch
}

// SameAnnouncement compares what two records of a node say the node
// announces about itself (its addresses, resources, place and version;
// not its status, drain or indexes, which the cluster sets).
func SameAnnouncement(a, b *cluster.Node) bool {
	if a.APIAddr != b.APIAddr || a.RaftAddr != b.RaftAddr || a.GossipAddr != b.GossipAddr ||
		a.CPUs != b.CPUs || a.MemoryMiB != b.MemoryMiB || a.Topology != b.Topology ||
		a.Sockets != b.Sockets || a.CoresPerSocket != b.CoresPerSocket || a.ThreadsPerCore != b.ThreadsPerCore ||
		a.Version != b.Version || len(a.GPUs) != len(b.GPUs) || !slices.Equal(a.Features, b.Features) {
		return false
	}
	for i := range a.GPUs {
		ga, gb := a.GPUs[i], b.GPUs[i]
		if ga.Index != gb.Index || ga.UUID != gb.UUID || ga.Model != gb.Model || ga.MemoryMiB != gb.MemoryMiB ||
			ga.NUMA != gb.NUMA || !slices.Equal(ga.NVLinkPeers, gb.NVLinkPeers) {
			return false
		}
	}
	return true
}

// LeaseTable records the leases this leader granted (Heartbeats): for
// each node, the latest end of any (a later renewal granted a shorter
// TTL, when the cluster shrank, may not have reached the node, which then
// still holds the longer one). Its zero value is empty; it is safe for
// concurrent use.
type LeaseTable struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// Renew records a lease granted to node for ttl, on a heartbeat received
// at at (after the node sent it, from when the node counts it).
func (l *LeaseTable) Renew(node string, at time.Time, ttl time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.until == nil {
		l.until = map[string]time.Time{}
	}
	if end := at.Add(ttl); end.After(l.until[node]) {
		l.until[node] = end
	}
}

// HeldUntil is when the latest lease granted node ends (the zero time for
// none).
func (l *LeaseTable) HeldUntil(node string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until[node]
}
