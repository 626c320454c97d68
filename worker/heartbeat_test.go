package worker

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"
)

// stepClock is a LeaseClock the test moves by hand.
type stepClock struct{ now time.Time }

func (c *stepClock) Now() time.Time                                   { return c.now }
func (*stepClock) NewTicker(time.Duration) (<-chan time.Time, func()) { return nil, func() {} }

// fakeLessee answers heartbeats while up, and counts fences.
type fakeLessee struct {
	up      bool
	grant   Grant // answered to each heartbeat (Index 7 when zero)
	lease   Lease
	running int
	fences  int
}

func (f *fakeLessee) Heartbeat(context.Context) (Grant, error) {
	if !f.up {
		return Grant{}, errors.New("leader unreachable")
	}
	g := f.grant
	if g.Index == 0 {
		g.Index = 7
	}
	return g, nil
}

func (f *fakeLessee) Renewed(sent time.Time, index uint64, ttl time.Duration) {
	f.lease = Lease{Renewed: sent, Index: index, TTL: ttl}
}
func (f *fakeLessee) Lease() Lease { return f.lease }
func (f *fakeLessee) Running() int { return f.running }
func (f *fakeLessee) Fence()       { f.fences++ }

// TestHeartbeaterRounds runs the heartbeat loop's rounds one by one:
// renewed, it fences nothing; cut off past the TTL with tasks running, it
// fences every round (counted once); renewed again, it stops fencing.
// With NoFence (the planted bug's build) nothing is fenced.
func TestHeartbeaterRounds(t *testing.T) {
	steps := []struct {
		at      time.Duration // since the start
		up      bool
		fenced  bool // what the round returns
		fences  int  // fences so far
		counted int
	}{
		{0, true, false, 0, 0},
		{5 * time.Second, false, false, 0, 0},
		{10 * time.Second, false, false, 0, 0}, // exactly the TTL: still held
		{11 * time.Second, false, true, 1, 1},
		{12 * time.Second, false, true, 2, 1},
		{13 * time.Second, true, false, 2, 1},
		{30 * time.Second, true, false, 2, 1},
	}
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	clock := &stepClock{now: start}
	node := &fakeLessee{running: 2}
	counted := 0
	h := Heartbeater{Node: node, Clock: clock, Log: slog.New(slog.DiscardHandler),
		Interval: time.Second, TTL: 10 * time.Second, Fenced: func() { counted++ }}
	fenced := false
	for i, s := range steps {
		clock.now, node.up = start.Add(s.at), s.up
		fenced = h.Round(context.Background(), fenced)
		if fenced != s.fenced || node.fences != s.fences || counted != s.counted {
			t.Fatalf("round %d at +%s: fenced %t, %d fences, counted %d; want %t, %d, %d",
				i, s.at, fenced, node.fences, counted, s.fenced, s.fences, s.counted)
		}
	}

	h.NoFence = true
	node.up = false
	clock.now = start.Add(time.Hour)
	if h.Round(context.Background(), false) || node.fences != 2 {
		t.Errorf("with NoFence a round fenced (%d fences); want none", node.fences)
	}
}

// TestRenewEvery: renewals stretch with the cluster's size so the leader
// sees about 50 a second, between --heartbeat and a third of the TTL,
// and spread takes at most a tenth off, never below --heartbeat.
func TestRenewEvery(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		n         int
		base, ttl time.Duration
		spread    float64
		want      time.Duration
	}{
		{n: 0, base: s, ttl: 10 * s, want: s},
		{n: 10, base: s, ttl: 10 * s, want: s},
		{n: 50, base: s, ttl: 10 * s, want: s},
		{n: 100, base: s, ttl: 10 * s, want: 2 * s},
		{n: 150, base: s, ttl: 10 * s, want: 3 * s},
		{n: 1000, base: s, ttl: 10 * s, want: 10 * s / 3},   // a third of the TTL
		{n: 100000, base: s, ttl: 10 * s, want: 10 * s / 3}, // however many
		{n: 1000, base: s, ttl: 60 * s, want: 20 * s},
		{n: 1000, base: 5 * s, ttl: 10 * s, want: 5 * s}, // never more often than --heartbeat
		{n: 100, base: s, ttl: 10 * s, spread: 0.5, want: 1900 * time.Millisecond},
		{n: 100, base: s, ttl: 10 * s, spread: 0.999, want: 1800*time.Millisecond + 200*time.Microsecond},
		{n: 10, base: s, ttl: 10 * s, spread: 0.999, want: s},
		{n: 100, base: s, ttl: 10 * s, spread: 1, want: 2 * s}, // out of [0, 1): ignored
	} {
		got := RenewEvery(tc.n, tc.base, tc.ttl, MaxRenewalsPerSecond, tc.spread)
		if got != tc.want {
			t.Errorf("RenewEvery(%d, %s, %s, %d, %v) = %s; want %s", tc.n, tc.base, tc.ttl, MaxRenewalsPerSecond, tc.spread, got, tc.want)
		}
	}
}

// leaseTickClock is a LeaseClock whose ticks the test sends.
type leaseTickClock struct {
	mu   sync.Mutex
	now  time.Time
	tick chan time.Time
}

func (c *leaseTickClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *leaseTickClock) NewTicker(time.Duration) (<-chan time.Time, func()) {
	return c.tick, func() {}
}

// countingLessee records the time of every renewal attempt.
type countingLessee struct {
	fakeLessee
	mu       sync.Mutex
	clock    *leaseTickClock
	attempts []time.Duration // since start
	start    time.Time
	// rounds is told the end of every round (its lease check asks how
	// many tasks run).
	rounds chan struct{}
}

func (c *countingLessee) Running() int {
	c.rounds <- struct{}{}
	return c.fakeLessee.Running()
}

func (c *countingLessee) Heartbeat(ctx context.Context) (Grant, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.attempts = append(c.attempts, c.clock.Now().Sub(c.start))
	return c.fakeLessee.Heartbeat(ctx)
}

// TestHeartbeaterRenewEvery: with a renewal period of 3 s and a 1 s
// tick, the loop renews at 0 s and 3 s, not in between; a failed renewal
// (at 6 s) is retried at the next tick (7 s), and the period counts again
// from the renewal that succeeded.
func TestHeartbeaterRenewEvery(t *testing.T) {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	clock := &leaseTickClock{now: start, tick: make(chan time.Time)}
	node := &countingLessee{fakeLessee: fakeLessee{up: true}, clock: clock, start: start, rounds: make(chan struct{})}
	h := Heartbeater{Node: node, Clock: clock, Log: slog.New(slog.DiscardHandler),
		Interval: time.Second, TTL: 10 * time.Second, RenewAfter: func(Grant) time.Duration { return 3 * time.Second }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }()
	<-node.rounds // the first, at once
	for s := 1; s <= 11; s++ {
		node.mu.Lock()
		node.up = s != 6 // the renewal due at 6 s fails
		node.mu.Unlock()
		clock.mu.Lock()
		clock.now = start.Add(time.Duration(s) * time.Second)
		clock.mu.Unlock()
		clock.tick <- clock.now
		<-node.rounds
	}
	cancel()
	<-done
	want := []time.Duration{0, 3 * time.Second, 6 * time.Second, 7 * time.Second, 10 * time.Second}
	if !slices.Equal(node.attempts, want) {
		t.Errorf("renewal attempts at %v; want %v", node.attempts, want)
	}
}

// TestGrantedTTL: a renewal holds for what the leader granted, never
// longer, and for --lease-ttl under a leader that grants nothing (an
// older release); a grant beyond the cap is cut to it.
func TestGrantedTTL(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		g    Grant
		ttl  time.Duration
		want time.Duration
	}{
		{Grant{}, 10 * s, 10 * s},                                // an old leader: --lease-ttl
		{Grant{Index: 5}, 10 * s, 10 * s},                        // an old leader's answer has an index only
		{Grant{TTL: 10 * s}, 10 * s, 10 * s},                     // not stretched
		{Grant{TTL: 60 * s, RenewEvery: 20 * s}, 10 * s, 60 * s}, // stretched
		{Grant{TTL: 5 * s}, 10 * s, 5 * s},                       // shorter than ours: the leader's (never longer)
		{Grant{TTL: 100 * s}, 10 * s, 100 * s},                   // the cap
		{Grant{TTL: 500 * s}, 10 * s, 100 * s},                   // beyond it: cut
	} {
		if got := GrantedTTL(tc.g, tc.ttl, 10); got != tc.want {
			t.Errorf("GrantedTTL(%+v, %s, 10) = %s; want %s", tc.g, tc.ttl, got, tc.want)
		}
	}
}

// TestRenewAfter: the node renews when the leader said, at most a third
// of the granted TTL and never more often than --heartbeat, spread as
// RenewEvery; under a leader that said nothing, RenewEvery's rule.
func TestRenewAfter(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		g      Grant
		n      int
		base   time.Duration
		spread float64
		want   time.Duration
	}{
		{g: Grant{}, n: 1000, base: s, want: 10 * s / 3},                                       // old leader: RenewEvery with --lease-ttl
		{g: Grant{}, n: 100, base: s, want: 2 * s},                                             // likewise
		{g: Grant{TTL: 10 * s, RenewEvery: 0}, n: 1000, base: s, want: s},                      // small cluster: every --heartbeat
		{g: Grant{TTL: 10 * s, RenewEvery: 3 * s}, n: 5, base: s, want: 3 * s},                 // the leader's period, whatever gossip counts
		{g: Grant{TTL: 60 * s, RenewEvery: 20 * s}, n: 10, base: s, want: 20 * s},              // stretched
		{g: Grant{TTL: 60 * s, RenewEvery: 50 * s}, n: 10, base: s, want: 20 * s},              // at most a third of the TTL
		{g: Grant{TTL: 60 * s, RenewEvery: 20 * s}, n: 10, base: 30 * s, want: 30 * s},         // never more often than --heartbeat
		{g: Grant{TTL: 60 * s, RenewEvery: 20 * s}, n: 10, base: s, spread: 0.5, want: 19 * s}, // spread
	} {
		got := RenewAfter(tc.g, tc.n, tc.base, 10*s, MaxRenewalsPerSecond, tc.spread)
		if got != tc.want {
			t.Errorf("RenewAfter(%+v, %d, %s, 10s, %v) = %s; want %s", tc.g, tc.n, tc.base, tc.spread, got, tc.want)
		}
	}
}

// TestFence: the lease ends at its renewal + the TTL it was granted, or
// at the inherited end when that is later; only a node running tasks
// fences.
func TestFence(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	s := time.Second
	for _, tc := range []struct {
		l         Lease
		inherited time.Time
		at        time.Duration
		running   int
		want      bool
	}{
		{Lease{Renewed: t0, TTL: 10 * s}, time.Time{}, 10 * s, 1, false},
		{Lease{Renewed: t0, TTL: 10 * s}, time.Time{}, 11 * s, 1, true},
		{Lease{Renewed: t0, TTL: 60 * s}, time.Time{}, 59 * s, 1, false}, // a stretched grant
		{Lease{Renewed: t0, TTL: 60 * s}, time.Time{}, 61 * s, 1, true},
		{Lease{Renewed: t0, TTL: 60 * s}, time.Time{}, 61 * s, 0, false}, // nothing to fence
		{Lease{TTL: 10 * s}, t0.Add(40 * s), 30 * s, 1, false},           // inherited, before any renewal
		{Lease{TTL: 10 * s}, t0.Add(40 * s), 41 * s, 1, true},
		{Lease{Renewed: t0.Add(35 * s), TTL: 10 * s}, t0.Add(40 * s), 44 * s, 1, false}, // renewed: the later end
	} {
		end, got := Fence(tc.l, tc.inherited, t0.Add(tc.at), tc.running)
		if got != tc.want {
			t.Errorf("Fence(%+v, %v, +%s, %d) = %v (end %v); want %v", tc.l, tc.inherited, tc.at, tc.running, got, end, tc.want)
		}
	}
}

// TestHeartbeaterGrantedTTL: a node holds the TTL the leader granted with
// its last acknowledged renewal: granted 60 s, cut off, it is not fenced
// at 59 s and is at 61 s; the renewal is recorded (for the supervisors)
// with that TTL. Under a leader that grants nothing it fences after
// --lease-ttl.
func TestHeartbeaterGrantedTTL(t *testing.T) {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		grant  Grant
		holds  time.Duration
		fences time.Duration
	}{
		{"stretched", Grant{TTL: 60 * time.Second, RenewEvery: 20 * time.Second}, 59 * time.Second, 61 * time.Second},
		{"old leader", Grant{}, 10 * time.Second, 11 * time.Second},
		{"beyond the cap", Grant{TTL: time.Hour}, 100 * time.Second, 101 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &stepClock{now: start}
			node := &fakeLessee{up: true, grant: tc.grant, running: 1}
			h := Heartbeater{Node: node, Clock: clock, Log: slog.New(slog.DiscardHandler),
				Interval: time.Second, TTL: 10 * time.Second, MaxStretch: 10}
			if h.Round(context.Background(), false) {
				t.Fatal("fenced while renewed")
			}
			if want := GrantedTTL(tc.grant, 10*time.Second, 10); node.lease.TTL != want || !node.lease.Renewed.Equal(start) {
				t.Fatalf("renewal recorded as %+v; want sent at %v with TTL %s", node.lease, start, want)
			}
			node.up = false
			clock.now = start.Add(tc.holds)
			if h.Round(context.Background(), false) {
				t.Errorf("fenced at +%s; the lease holds until then", tc.holds)
			}
			clock.now = start.Add(tc.fences)
			if !h.Round(context.Background(), false) || node.fences != 1 {
				t.Errorf("at +%s: %d fences; want 1", tc.fences, node.fences)
			}
		})
	}
}
