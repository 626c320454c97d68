package gossip

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestPlanReconnect: failed members are dialled least recently tried
// first, at most max a round, the alive members sharing the dials (each
// failed member about once a round, by the whole cluster), and forgotten
// after the timeout (DESIGN: membership heals after a partition without
// an operator).
func TestPlanReconnect(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	lm := func(name string, failedAgo, triedAgo time.Duration) lostMember {
		l := lostMember{name: name, addr: name + ":7072", since: t0.Add(-failedAgo)}
		if triedAgo >= 0 {
			l.tried = t0.Add(-triedAgo)
		}
		return l
	}
	tests := []struct {
		name       string
		lost       []lostMember
		max        int
		alive      int     // live members, this node included (0: 1)
		roll       float64 // the round's roll
		wantDial   []string
		wantForget []string
	}{
		{name: "none", max: 3},
		{name: "never tried first, then by name", max: 3,
			lost:     []lostMember{lm("c", time.Minute, 5*time.Second), lm("b", time.Minute, -1), lm("a", time.Minute, -1)},
			wantDial: []string{"a", "b", "c"}},
		{name: "bounded, oldest try first", max: 2,
			lost:     []lostMember{lm("a", time.Minute, time.Second), lm("b", time.Minute, 10*time.Second), lm("c", time.Minute, 5*time.Second)},
			wantDial: []string{"b", "c"}},
		{name: "given up after the timeout", max: 3,
			lost:       []lostMember{lm("old", 2*time.Hour, time.Second), lm("new", time.Second, -1)},
			wantDial:   []string{"new"},
			wantForget: []string{"old"}},
		{name: "one of two alive: a roll under one half dials the failed one", max: 3, alive: 2, roll: 0.4,
			lost: []lostMember{lm("a", time.Minute, -1)}, wantDial: []string{"a"}},
		{name: "one of two alive: a roll over one half leaves it to the other", max: 3, alive: 2, roll: 0.6,
			lost: []lostMember{lm("a", time.Minute, -1)}},
		{name: "a storm: 3 failed of 9 live, each node dials one with a chance of a third", max: 3, alive: 9, roll: 0.2,
			lost:     []lostMember{lm("c", time.Minute, -1), lm("b", time.Minute, -1), lm("a", time.Minute, -1)},
			wantDial: []string{"a"}},
		{name: "more failed than alive: a share each, bounded", max: 3, alive: 2, roll: 0.9,
			lost:     []lostMember{lm("a", time.Minute, -1), lm("b", time.Minute, -1), lm("c", time.Minute, -1), lm("d", time.Minute, -1), lm("e", time.Minute, -1)},
			wantDial: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dial, forget := planReconnect(tt.lost, t0, time.Hour, tt.max, tt.alive, tt.roll)
			var names []string
			for _, l := range dial {
				names = append(names, l.name)
			}
			if d := cmp.Diff(tt.wantDial, names); d != "" {
				t.Errorf("dial (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantForget, forget); d != "" {
				t.Errorf("forget (-want +got):\n%s", d)
			}
		})
	}
}

// TestReconnectFailedMember: a member declared failed that comes back
// without joining anyone (its peers no longer probe it, it knows nobody)
// is found again by the survivors' reconnect dial, and both see each other
// alive (DESIGN: membership heals after a partition without an operator).
func TestReconnectFailedMember(t *testing.T) {
	reconnect := func(c *Config) { c.ReconnectInterval = 200 * time.Millisecond }
	a := startNode(t, "a", fastProbes(), reconnect)
	b, err := New(Config{Name: "b", BindAddr: "127.0.0.1", Logger: quietLogger(), ProbeInterval: 200 * time.Millisecond, SuspicionMult: 2})
	if err != nil {
		t.Fatal(err)
	}
	join(t, b, a)
	status := func(g *Gossip, name string) MemberStatus {
		for _, m := range g.Members() {
			if m.Name == name {
				return m.Status
			}
		}
		return ""
	}
	waitFor(t, 5*time.Second, "a to see b alive", func() bool { return status(a, "b") == StatusAlive })
	_, port, err := net.SplitHostPort(b.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Shutdown(); err != nil { // no Leave: a sees a failure
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "a to see b failed", func() bool { return status(a, "b") == StatusFailed })
	// a's own probes of b went unanswered (b was not merely suspected
	// by someone else: there is no one else).
	if a.ProbeFailures() == 0 {
		t.Errorf("a counted no failed probe of the stopped b")
	}

	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	b2 := startNode(t, "b", fastProbes(), func(c *Config) { c.BindPort = p })
	waitFor(t, 10*time.Second, "the restarted b, which joined nobody, and a to see each other alive", func() bool {
		return status(a, "b") == StatusAlive && status(b2, "a") == StatusAlive
	})
}
