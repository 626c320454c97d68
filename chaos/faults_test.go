package chaos

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPlanReproducible: one seed is one schedule (a failing seed replays),
// and other seeds give other schedules, for every kind including the
// slow-link and loss faults.
func TestPlanReproducible(t *testing.T) {
	tests := []struct {
		name  string
		nodes int
		kinds []Kind
	}{
		{"slow and loss", 5, []Kind{Slow, Loss}},
		{"slow only, 9 nodes", 9, []Kind{Slow}},
		{"loss only, 3 nodes", 3, []Kind{Loss}},
		{"all", 5, AllKinds},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 20; seed++ {
				a, b := Plan(seed, tt.nodes, tt.kinds, 50), Plan(seed, tt.nodes, tt.kinds, 50)
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("Plan(seed %d) twice gave two schedules:\n%v\n%v", seed, a, b)
				}
				if c := Plan(seed+1000, tt.nodes, tt.kinds, 50); reflect.DeepEqual(a, c) {
					t.Errorf("Plan(seed %d) = Plan(seed %d): seeds do not matter", seed, seed+1000)
				}
			}
		})
	}
}

// TestPlanSlowLoss: the planner draws the new kinds with the shapes their
// faults need: a slow link on a minority at 64 to 512 kbit with a queue
// latency, a loss of 5 to 50 percent on one agent, each held 3 to 10s.
func TestPlanSlowLoss(t *testing.T) {
	for _, nodes := range []int{1, 3, 5, 9} {
		seen := map[Kind]int{}
		rates := map[int]bool{}
		for seed := uint64(1); seed <= 30; seed++ {
			for _, f := range Plan(seed, nodes, []Kind{Slow, Loss}, 20) {
				seen[f.Kind]++
				if f.Duration < 3*time.Second || f.Duration > 10*time.Second {
					t.Errorf("nodes %d seed %d: %s held %s; want 3s to 10s", nodes, seed, f, f.Duration)
				}
				if len(f.Targets) == 0 || !slices.IsSorted(f.Targets) || len(slices.Compact(slices.Clone(f.Targets))) != len(f.Targets) {
					t.Errorf("nodes %d seed %d: %s: targets %v; want some, sorted, distinct", nodes, seed, f, f.Targets)
				}
				for _, i := range f.Targets {
					if i < 0 || i >= nodes {
						t.Errorf("nodes %d seed %d: %s targets agent %d", nodes, seed, f, i)
					}
				}
				switch f.Kind {
				case Slow:
					rates[f.RateKbit] = true
					if minority := max(1, (nodes-1)/2); len(f.Targets) > minority {
						t.Errorf("nodes %d seed %d: %s slows %d agents; want at most %d", nodes, seed, f, len(f.Targets), minority)
					}
					if f.RateKbit < 64 || f.RateKbit > 512 || f.Latency < 100*time.Millisecond || f.Latency >= time.Second || f.Percent != 0 {
						t.Errorf("nodes %d seed %d: %s: rate %d kbit, latency %s, percent %d; want 64-512 kbit, 100ms-1s, 0",
							nodes, seed, f, f.RateKbit, f.Latency, f.Percent)
					}
					if !strings.Contains(f.String(), "kbit latency") {
						t.Errorf("%q does not name its rate", f)
					}
				case Loss:
					if len(f.Targets) != 1 || f.Percent < 5 || f.Percent > 50 || f.RateKbit != 0 {
						t.Errorf("nodes %d seed %d: %s: targets %v, percent %d, rate %d; want one agent, 5-50%%, no rate",
							nodes, seed, f, f.Targets, f.Percent, f.RateKbit)
					}
					if !strings.Contains(f.String(), "dropping") {
						t.Errorf("%q does not name its loss", f)
					}
				default:
					t.Errorf("Plan drew %s, not one of slow, loss", f.Kind)
				}
			}
		}
		if seen[Slow] == 0 || seen[Loss] == 0 {
			t.Errorf("nodes %d: 600 faults drew %v; want both kinds", nodes, seen)
		}
		if len(rates) < 2 {
			t.Errorf("nodes %d: every slow link at the rates %v; want them drawn", nodes, rates)
		}
	}
}

// TestNetKinds: the harness leaves slow and loss out on loopback, and
// --faults accepts them.
func TestNetKinds(t *testing.T) {
	for _, k := range []Kind{Slow, Loss} {
		if !k.NetKind() {
			t.Errorf("%s.NetKind() = false; want true", k)
		}
	}
	got, err := ParseKinds("slow,loss,slow")
	if err != nil || !reflect.DeepEqual(got, []Kind{Slow, Loss}) {
		t.Errorf(`ParseKinds("slow,loss,slow") = %v, %v; want [slow loss]`, got, err)
	}
}
