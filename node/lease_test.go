package node

import (
	"testing"
	"time"

	"github.com/shoal-sched/shoal/gossip"
	"github.com/shoal-sched/shoal/leader"
)

// TestLeaseTableKeepsTheLatestEnd: the leader judges a node by the latest
// end of any lease it granted it. A later renewal granted a shorter TTL
// (the cluster shrank) may not have reached the node, which then still
// holds the longer lease: it must not bring the end forward.
func TestLeaseTableKeepsTheLatestEnd(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var l leaseTable
	if got := l.HeldUntil("n1"); !got.IsZero() {
		t.Fatalf("HeldUntil before any renewal = %v; want zero", got)
	}
	l.renew("n1", t0, 60*time.Second)
	l.renew("n1", t0.Add(10*time.Second), 10*time.Second) // shorter, may be lost
	if got, want := l.HeldUntil("n1"), t0.Add(60*time.Second); !got.Equal(want) {
		t.Errorf("HeldUntil = %v; want %v (the longer grant)", got, want)
	}
	l.renew("n1", t0.Add(55*time.Second), 10*time.Second)
	if got, want := l.HeldUntil("n1"), t0.Add(65*time.Second); !got.Equal(want) {
		t.Errorf("HeldUntil = %v; want %v", got, want)
	}
	if got := l.HeldUntil("n2"); !got.IsZero() {
		t.Errorf("HeldUntil(n2) = %v; want zero", got)
	}
}

// TestAgreedStretch: leases stretch only as far as every live agent
// announces it would wait as a new leader; an older agent (none
// announced) alive stops stretching, a dead one does not count.
func TestAgreedStretch(t *testing.T) {
	m := func(name string, st gossip.MemberStatus, stretch int) gossip.Member {
		return gossip.Member{Name: name, Status: st, Meta: gossip.Meta{LeaseStretch: stretch}}
	}
	for _, tc := range []struct {
		name    string
		members []gossip.Member
		want    int
	}{
		{"none", nil, leader.MaxLeaseStretch},
		{"all new", []gossip.Member{m("n1", gossip.StatusAlive, 10), m("n2", gossip.StatusAlive, 10)}, 10},
		{"an older agent alive", []gossip.Member{m("n1", gossip.StatusAlive, 10), m("n2", gossip.StatusAlive, 0)}, 0},
		{"an older agent dead", []gossip.Member{m("n1", gossip.StatusAlive, 10), m("n2", gossip.StatusFailed, 0)}, 10},
		{"a lower announcement", []gossip.Member{m("n1", gossip.StatusAlive, 10), m("n2", gossip.StatusAlive, 4)}, 4},
		{"a higher one is not believed", []gossip.Member{m("n1", gossip.StatusAlive, 50)}, leader.MaxLeaseStretch},
	} {
		if got := agreedStretch(tc.members); got != tc.want {
			t.Errorf("%s: agreedStretch = %d; want %d", tc.name, got, tc.want)
		}
	}
}
