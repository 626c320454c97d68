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
	renewed time.Time
	running int
	fences  int
}

func (f *fakeLessee) Heartbeat(context.Context) (uint64, error) {
	if !f.up {
		return 0, errors.New("leader unreachable")
	}
	return 7, nil
}

func (f *fakeLessee) Renewed(sent time.Time, _ uint64) { f.renewed = sent }
func (f *fakeLessee) LastRenewed() time.Time           { return f.renewed }
func (f *fakeLessee) Running() int                     { return f.running }
func (f *fakeLessee) Fence()                           { f.fences++ }

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

func (c *countingLessee) Heartbeat(ctx context.Context) (uint64, error) {
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
		Interval: time.Second, TTL: 10 * time.Second, RenewEvery: func() time.Duration { return 3 * time.Second }}
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
