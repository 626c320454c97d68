package topology

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// TestPlanDiscovery runs rounds of discovery through the pure plan: what
// the node announces, when it says it changed, and what it logs.
func TestPlanDiscovery(t *testing.T) {
	lldp := func(leaf string) Result {
		return Result{Found: Found{Source: SourceLLDP, Leaf: leaf}}
	}
	ib := func(leaf, parent string) Result {
		return Result{Found: Found{Source: SourceIB, Leaf: leaf, Parent: parent}}
	}
	failed := func(src, msg string) Result {
		return Result{Found: Found{Source: src}, Err: errors.New(msg)}
	}
	type round struct {
		results  []Result
		want     cluster.Topology
		changed  bool
		logNone  bool
		warnings int
	}
	tests := []struct {
		name     string
		operator cluster.Topology
		rounds   []round
	}{
		{"nothing anywhere: said once, unplaced", cluster.Topology{}, []round{
			{results: []Result{lldp("")}, logNone: true},
			{results: []Result{lldp("")}},
			{results: []Result{lldp("")}},
		}},
		{"leaf found, moved, lost, found", cluster.Topology{}, []round{
			{results: []Result{lldp("leafA")}, want: cluster.Topology{Switch: "leafA"}, changed: true},
			{results: []Result{lldp("leafA")}, want: cluster.Topology{Switch: "leafA"}},
			{results: []Result{lldp("leafB")}, want: cluster.Topology{Switch: "leafB"}, changed: true},
			// Unplugged: unplaced again, and said once more.
			{results: []Result{lldp("")}, changed: true, logNone: true},
			{results: []Result{lldp("")}},
			{results: []Result{lldp("leafA")}, want: cluster.Topology{Switch: "leafA"}, changed: true},
		}},
		{"a failing source keeps its last answer and warns once", cluster.Topology{}, []round{
			{results: []Result{lldp("leafA")}, want: cluster.Topology{Switch: "leafA"}, changed: true},
			{results: []Result{failed("lldp", "lldpcli: no answer in 5s")}, want: cluster.Topology{Switch: "leafA"}, warnings: 1},
			{results: []Result{failed("lldp", "lldpcli: no answer in 5s")}, want: cluster.Topology{Switch: "leafA"}},
			{results: []Result{failed("lldp", "lldpcli: exit status 1")}, want: cluster.Topology{Switch: "leafA"}, warnings: 1},
			{results: []Result{lldp("leafB")}, want: cluster.Topology{Switch: "leafB"}, changed: true},
		}},
		{"failing from the start: unplaced", cluster.Topology{}, []round{
			{results: []Result{failed("lldp", "boom")}, logNone: true, warnings: 1},
		}},
		{"operator's switch wins; nothing to say", cluster.Topology{Switch: "rack7"}, []round{
			{results: []Result{lldp("")}, want: cluster.Topology{Switch: "rack7"}},
			{results: []Result{lldp("leafA")}, want: cluster.Topology{Switch: "rack7"}},
		}},
		{"operator's parent over a discovered leaf", cluster.Topology{SwitchParent: "spine1"}, []round{
			{results: []Result{lldp("leafA")}, want: cluster.Topology{Switch: "leafA", SwitchParent: "spine1"}, changed: true},
		}},
		{"leaf from LLDP, parent from IB", cluster.Topology{}, []round{
			{results: []Result{lldp("leafA"), ib("ibleaf", "spine")}, want: cluster.Topology{Switch: "leafA", SwitchParent: "spine"}, changed: true},
			{results: []Result{lldp(""), ib("ibleaf", "spine")}, want: cluster.Topology{Switch: "ibleaf", SwitchParent: "spine"}, changed: true},
		}},
		{"a name gossip cannot carry is refused", cluster.Topology{}, []round{
			{results: []Result{lldp("my switch")}, logNone: true, warnings: 1},
			{results: []Result{lldp("my switch")}},
			{results: []Result{lldp("leafA")}, want: cluster.Topology{Switch: "leafA"}, changed: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := discoveryState{announced: tt.operator}
			for i, r := range tt.rounds {
				step := planDiscovery(st, tt.operator, r.results)
				st = step.next
				if step.topology != r.want || step.changed != r.changed || step.logNone != r.logNone || len(step.warn) != r.warnings {
					t.Fatalf("round %d: planDiscovery(%+v) = topology %+v, changed %v, logNone %v, warn %v; want %+v, %v, %v, %d warnings",
						i, r.results, step.topology, step.changed, step.logNone, step.warn, r.want, r.changed, r.logNone, r.warnings)
				}
			}
		})
	}
}

// scriptedSource answers from a script, one answer a call, repeating the
// last.
type scriptedSource struct {
	mu      sync.Mutex
	answers []Result
	calls   int
}

func (s *scriptedSource) Name() string { return SourceLLDP }

func (s *scriptedSource) Discover(context.Context) (Found, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.answers[min(s.calls, len(s.answers)-1)]
	s.calls++
	return r.Found, r.Err
}

// TestDiscoveryLoop runs the loop on fake time against a scripted source
// and fake gossip: a place found is set and gossiped at once, a change
// every interval, a failed announcement is retried, and the loop ends
// with its context.
func TestDiscoveryLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		leaf := func(s string) Result { return Result{Found: Found{Leaf: s}} }
		src := &scriptedSource{answers: []Result{leaf("leafA"), leaf("leafA"), leaf("leafB"), leaf("leafB")}}
		var (
			mu       sync.Mutex
			set      []string
			gossiped cluster.Topology
			fails    = 1 // the first announcement of leafB fails
			regossip int
		)
		place := &funcPlace{
			set: func(t cluster.Topology) {
				mu.Lock()
				defer mu.Unlock()
				set = append(set, t.Switch)
			},
			gossiped: func() (cluster.Topology, bool) {
				mu.Lock()
				defer mu.Unlock()
				return gossiped, true
			},
			regossip: func(context.Context) error {
				mu.Lock()
				defer mu.Unlock()
				regossip++
				if len(set) == 2 && fails > 0 {
					fails--
					return errors.New("broadcast timed out")
				}
				gossiped = cluster.Topology{Switch: set[len(set)-1]}
				return nil
			},
		}
		d := Discoverer{Sources: []Source{src}, Interval: 30 * time.Second, Place: place, Log: slog.New(slog.DiscardHandler)}
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { d.Run(ctx, cluster.Topology{}) })
		check := func(when string, wantSet []string, wantGossip string, wantRegossip int) {
			t.Helper()
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(set, wantSet) || gossiped.Switch != wantGossip || regossip != wantRegossip {
				t.Fatalf("%s: set %v, gossiped %q, %d announcements; want %v, %q, %d", when, set, gossiped.Switch, regossip, wantSet, wantGossip, wantRegossip)
			}
		}
		check("at start", []string{"leafA"}, "leafA", 1)
		time.Sleep(30 * time.Second)
		check("same answer", []string{"leafA"}, "leafA", 1)
		time.Sleep(30 * time.Second)
		check("moved, announcement failed", []string{"leafA", "leafB"}, "leafA", 2)
		time.Sleep(30 * time.Second)
		check("announcement retried", []string{"leafA", "leafB"}, "leafB", 3)
		cancel()
		wg.Wait()
		if src.calls != 4 {
			t.Errorf("source ran %d times; want 4", src.calls)
		}
	})
}

// funcPlace is a Place of functions.
type funcPlace struct {
	set      func(cluster.Topology)
	gossiped func() (cluster.Topology, bool)
	regossip func(context.Context) error
}

func (p *funcPlace) Set(t cluster.Topology)             { p.set(t) }
func (p *funcPlace) Gossiped() (cluster.Topology, bool) { return p.gossiped() }
func (p *funcPlace) Regossip(ctx context.Context) error { return p.regossip(ctx) }
