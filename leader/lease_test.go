package leader

import (
	"testing"
	"time"
)

// TestGrantLease: the TTL is --lease-ttl until renewals every TTL/3 from
// n nodes would pass the bound a second, then three renewal periods, up to
// MaxLeaseStretch × --lease-ttl; renewals come every n / bound, at most a
// third of the TTL. The renewals a second at the leader (n / RenewEvery)
// stay at the bound below the cap.
func TestGrantLease(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		n         int
		ttl       time.Duration
		perSecond int
		stretch   int // 0: MaxLeaseStretch; -1: 0 (an agent announced none)
		want      LeaseGrant
	}{
		{0, 10 * s, 50, 0, LeaseGrant{TTL: 10 * s}},
		{1, 10 * s, 50, 0, LeaseGrant{TTL: 10 * s, RenewEvery: 20 * time.Millisecond}},
		{100, 10 * s, 50, 0, LeaseGrant{TTL: 10 * s, RenewEvery: 2 * s}},
		{166, 10 * s, 50, 0, LeaseGrant{TTL: 10 * s, RenewEvery: 3320 * time.Millisecond}}, // the last one not stretched
		{200, 10 * s, 50, 0, LeaseGrant{TTL: 12 * s, RenewEvery: 4 * s}},                   // stretched
		{1000, 10 * s, 50, 0, LeaseGrant{TTL: 60 * s, RenewEvery: 20 * s}},                 // issue 15's size: 50 a second
		{1666, 10 * s, 50, 0, LeaseGrant{TTL: 99960 * time.Millisecond, RenewEvery: 33320 * time.Millisecond}},
		{2000, 10 * s, 50, 0, LeaseGrant{TTL: 100 * s, RenewEvery: 100 * s / 3}},   // the cap: 10 × --lease-ttl
		{100000, 10 * s, 50, 0, LeaseGrant{TTL: 100 * s, RenewEvery: 100 * s / 3}}, // however many
		{1000, 3 * s, 50, 0, LeaseGrant{TTL: 30 * s, RenewEvery: 10 * s}},          // a short --lease-ttl: its own cap
		{1000, 10 * s, 0, 0, LeaseGrant{TTL: 10 * s}},                              // no bound: not stretched
		{1000, 10 * s, 50, 3, LeaseGrant{TTL: 30 * s, RenewEvery: 10 * s}},         // the agents agree on 3 × at most
		{1000, 10 * s, 50, -1, LeaseGrant{TTL: 10 * s, RenewEvery: 10 * s / 3}},    // an older agent announces none: not stretched
		{1000, 10 * s, 50, 100, LeaseGrant{TTL: 60 * s, RenewEvery: 20 * s}},       // more than MaxLeaseStretch is not believed
		{2000, 10 * s, 50, 100, LeaseGrant{TTL: 100 * s, RenewEvery: 100 * s / 3}},
	} {
		if tc.stretch == 0 {
			tc.stretch = MaxLeaseStretch
		} else if tc.stretch < 0 {
			tc.stretch = 0
		}
		got := GrantLease(tc.n, tc.ttl, tc.perSecond, tc.stretch)
		if got != tc.want {
			t.Errorf("GrantLease(%d, %s, %d, %d) = %+v; want %+v", tc.n, tc.ttl, tc.perSecond, tc.stretch, got, tc.want)
		}
		if got.TTL < tc.ttl || got.TTL > MaxLeaseStretch*tc.ttl || got.RenewEvery > got.TTL/3 {
			t.Errorf("GrantLease(%d, %s, %d) = %+v: TTL out of [ttl, cap] or renewals rarer than TTL/3", tc.n, tc.ttl, tc.perSecond, got)
		}
	}
}

// TestGrantLeaseMonotone: more nodes never grant a shorter TTL, which the
// new leader's failover wait relies on (LeaseWatch).
func TestGrantLeaseMonotone(t *testing.T) {
	prev := time.Duration(0)
	for n := 0; n <= 3000; n++ {
		g := GrantLease(n, 10*time.Second, 50, MaxLeaseStretch)
		if g.TTL < prev {
			t.Fatalf("GrantLease(%d) TTL %s < GrantLease(%d) TTL %s", n, g.TTL, n-1, prev)
		}
		prev = g.TTL
	}
}
