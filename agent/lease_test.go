package agent

import (
	"testing"

	"github.com/shoal-sched/shoal/gossip"
	"github.com/shoal-sched/shoal/leader"
)

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
