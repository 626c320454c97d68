package leader

import (
	"errors"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
)

// TestLeaseTableKeepsTheLatestEnd: the leader judges a node by the latest
// end of any lease it granted it. A later renewal granted a shorter TTL
// (the cluster shrank) may not have reached the node, which then still
// holds the longer lease: it must not bring the end forward.
func TestLeaseTableKeepsTheLatestEnd(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var l LeaseTable
	if got := l.HeldUntil("n1"); !got.IsZero() {
		t.Fatalf("HeldUntil before any renewal = %v; want zero", got)
	}
	l.Renew("n1", t0, 60*time.Second)
	l.Renew("n1", t0.Add(10*time.Second), 10*time.Second) // shorter, may be lost
	if got, want := l.HeldUntil("n1"), t0.Add(60*time.Second); !got.Equal(want) {
		t.Errorf("HeldUntil = %v; want %v (the longer grant)", got, want)
	}
	l.Renew("n1", t0.Add(55*time.Second), 10*time.Second)
	if got, want := l.HeldUntil("n1"), t0.Add(65*time.Second); !got.Equal(want) {
		t.Errorf("HeldUntil = %v; want %v", got, want)
	}
	if got := l.HeldUntil("n2"); !got.IsZero() {
		t.Errorf("HeldUntil(n2) = %v; want zero", got)
	}
}

// TestSameAnnouncement: a node's record is written again only when what
// the node announces changes, not what the cluster sets on it.
func TestSameAnnouncement(t *testing.T) {
	base := cluster.Node{Name: "n1", APIAddr: "a:1", CPUs: 8, GPUs: []cluster.GPU{{Index: 0, UUID: "u", NVLinkPeers: []int{1}}},
		Topology: cluster.Topology{Switch: "leaf0"}}
	same := *base.Clone()
	same.Status, same.ModifyIndex, same.Drain = cluster.NodeDown, 99, true // not announced by the node
	if !SameAnnouncement(&base, &same) {
		t.Errorf("status/index/drain differences count as a new announcement")
	}
	for name, change := range map[string]func(*cluster.Node){
		"address":  func(n *cluster.Node) { n.APIAddr = "b:1" },
		"cpus":     func(n *cluster.Node) { n.CPUs = 16 },
		"switch":   func(n *cluster.Node) { n.Topology.Switch = "leaf1" },
		"gpu uuid": func(n *cluster.Node) { n.GPUs[0].UUID = "v" },
		"nvlink":   func(n *cluster.Node) { n.GPUs[0].NVLinkPeers = nil },
		"gpu gone": func(n *cluster.Node) { n.GPUs = nil },
	} {
		c := base.Clone()
		change(c)
		if SameAnnouncement(&base, c) {
			t.Errorf("%s changed but SameAnnouncement = true", name)
		}
	}
}

// TestAgreedStretchOf: leases stretch only as far as every live agent
// announces it would wait as a new leader; an older agent (0 announced)
// stops stretching; a higher announcement than MaxLeaseStretch is not
// believed.
func TestAgreedStretchOf(t *testing.T) {
	for _, tc := range []struct {
		announced []int
		want      int
	}{
		{nil, MaxLeaseStretch},
		{[]int{10, 10}, 10},
		{[]int{10, 0}, 0},
		{[]int{10, 4}, 4},
		{[]int{50}, MaxLeaseStretch},
	} {
		if got := AgreedStretch(tc.announced); got != tc.want {
			t.Errorf("AgreedStretch(%v) = %d; want %d", tc.announced, got, tc.want)
		}
	}
}

// TestPlanHeartbeat: every heartbeat of a valid node gets the lease
// GrantLease gives for the nodes the log holds; the record is written
// when the node is new, not up, or announces something new (DESIGN
// "Leases": the leader grants, and records, before it answers).
func TestPlanHeartbeat(t *testing.T) {
	up := &cluster.Node{Name: "n1", Status: cluster.NodeUp, APIAddr: "a:1", CPUs: 8}
	down := &cluster.Node{Name: "n2", Status: cluster.NodeDown, APIAddr: "b:1", CPUs: 8}
	v := fsm.PartialView(7, nil, []*cluster.Node{up, down}, nil, nil, nil)
	moved := *up
	moved.APIAddr = "a:2"
	tests := []struct {
		name             string
		n                cluster.Node
		upsert, register bool
		refused          bool
	}{
		{"up and the same: lease only", *up, false, false, false},
		{"up and moved", moved, true, false, false},
		{"down: written up again", *down, true, false, false},
		{"new", cluster.Node{Name: "n3"}, true, true, false},
		{"bad name", cluster.Node{Name: "bad name"}, false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := PlanHeartbeat(v, tt.n, 10*time.Second, 50, 10)
			if tt.refused {
				if !errors.Is(err, cluster.ErrInvalid) {
					t.Errorf("PlanHeartbeat = %+v, %v; want invalid", p, err)
				}
				return
			}
			if err != nil || p.Upsert != tt.upsert || p.Register != tt.register || p.Grant != GrantLease(2, 10*time.Second, 50, 10) {
				t.Errorf("PlanHeartbeat = %+v, %v; want upsert %v, register %v, the grant for 2 nodes", p, err, tt.upsert, tt.register)
			}
		})
	}
}
