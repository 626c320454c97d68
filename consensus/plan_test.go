package consensus

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Candidate builders: voter, non-voter, and a node not in the config.
func voter(id, sw string) Candidate {
	return Candidate{ID: id, Addr: id + ":7000", Switch: sw, Alive: true, InConfig: true, Suffrage: Voter}
}
func nonvoter(id, sw string) Candidate {
	return Candidate{ID: id, Addr: id + ":7000", Switch: sw, Alive: true, InConfig: true, Suffrage: Nonvoter}
}
func outsider(id, sw string) Candidate {
	return Candidate{ID: id, Addr: id + ":7000", Switch: sw, Alive: true}
}
func failed(c Candidate, ago time.Duration) Candidate {
	c.Alive, c.FailedSince = false, t0.Add(-ago)
	return c
}
func left(c Candidate) Candidate {
	c.Alive, c.Left = false, true
	return c
}

// change renders a plan compactly: "promote n2".
func kinds(plan []Change) []string {
	out := []string{}
	for _, c := range plan {
		out = append(out, fmt.Sprintf("%s %s", c.Kind, c.ID))
	}
	return out
}

func nodes(n int, mk func(id, sw string) Candidate) []Candidate {
	var cs []Candidate
	for i := 1; i <= n; i++ {
		cs = append(cs, mk(fmt.Sprintf("n%d", i), "sw"))
	}
	return cs
}

// Membership planning protects DESIGN "Membership and roles": an odd number
// of voters spread over switches, and invariant 2 (an acknowledged submit
// survives a minority of failures) through a quorum that stays safe.
func TestPlanVoters(t *testing.T) {
	grace := time.Minute
	one := []Candidate{voter("n1", "sw")}
	tests := []struct {
		name   string
		cfg    VoterConfig
		raw    bool // use cfg as is; otherwise a zero grace becomes grace
		leader string
		cands  []Candidate
		want   []string
	}{
		{name: "1 node: nothing to do", leader: "n1", cands: one, want: []string{}},
		{name: "2 nodes: second joins as nonvoter", leader: "n1",
			cands: []Candidate{voter("n1", "sw"), outsider("n2", "sw")},
			want:  []string{"add-nonvoter n2"}},
		{name: "2 nodes: stays at 1 voter, never 2", leader: "n1",
			cands: []Candidate{voter("n1", "sw"), nonvoter("n2", "sw")},
			want:  []string{}},
		{name: "3 nodes: both nonvoters promoted", leader: "n1",
			cands: []Candidate{voter("n1", "sw"), nonvoter("n2", "sw"), nonvoter("n3", "sw")},
			want:  []string{"promote n2", "promote n3"}},
		{name: "3 nodes, one still outside: no even step, outsider added", leader: "n1",
			cands: []Candidate{voter("n1", "sw"), nonvoter("n2", "sw"), outsider("n3", "sw")},
			want:  []string{"add-nonvoter n3"}},
		{name: "4 nodes: 3 voters, fourth stays nonvoter", leader: "n1",
			cands: []Candidate{voter("n1", "sw"), voter("n2", "sw"), voter("n3", "sw"), nonvoter("n4", "sw")},
			want:  []string{}},
		{name: "4 nodes from 1 voter: promote to 3", leader: "n1",
			cands: append(nodes(1, voter), nonvoter("n2", "sw"), nonvoter("n3", "sw"), nonvoter("n4", "sw")),
			want:  []string{"promote n2", "promote n3"}},
		{name: "5 nodes: 5 voters", leader: "n1",
			cands: []Candidate{voter("n1", "sw"), voter("n2", "sw"), voter("n3", "sw"), nonvoter("n4", "sw"), nonvoter("n5", "sw")},
			want:  []string{"promote n4", "promote n5"}},
		{name: "7 nodes: 5 voters stay", leader: "n1",
			cands: append(nodes(5, voter), nonvoter("n6", "sw"), nonvoter("n7", "sw")),
			want:  []string{}},
		{name: "7 nodes from 1 voter: promote 4", leader: "n1",
			cands: append(nodes(1, voter), nonvoter("n2", "sw"), nonvoter("n3", "sw"), nonvoter("n4", "sw"),
				nonvoter("n5", "sw"), nonvoter("n6", "sw"), nonvoter("n7", "sw")),
			want: []string{"promote n2", "promote n3", "promote n4", "promote n5"}},
		{name: "MaxVoters 3 caps 7 nodes", cfg: VoterConfig{MaxVoters: 3}, leader: "n1",
			cands: append(nodes(1, voter), nonvoter("n2", "sw"), nonvoter("n3", "sw"), nonvoter("n4", "sw"),
				nonvoter("n5", "sw"), nonvoter("n6", "sw"), nonvoter("n7", "sw")),
			want: []string{"promote n2", "promote n3"}},
		{name: "even MaxVoters rounds down", cfg: VoterConfig{MaxVoters: 4}, leader: "n1",
			cands: append(nodes(1, voter), nonvoter("n2", "sw"), nonvoter("n3", "sw"), nonvoter("n4", "sw"), nonvoter("n5", "sw")),
			want:  []string{"promote n2", "promote n3"}},
		{name: "MaxVoters lowered: surplus demoted, never the leader", cfg: VoterConfig{MaxVoters: 3}, leader: "n1",
			cands: nodes(5, voter),
			want:  []string{"demote n2", "demote n3"}},
		{name: "3 voters spread across 2 switches", leader: "n1",
			cands: []Candidate{voter("n1", "a"), nonvoter("n2", "a"), nonvoter("n3", "a"), nonvoter("n4", "b")},
			want:  []string{"promote n4", "promote n2"}},
		{name: "switch spread preferred: swap promotes before it demotes", leader: "n1",
			cands: []Candidate{voter("n1", "a"), voter("n2", "a"), voter("n3", "a"), nonvoter("n4", "b")},
			want:  []string{"promote n4", "demote n2"}},
		{name: "no swap to an unknown switch", leader: "n1",
			cands: []Candidate{voter("n1", "a"), voter("n2", "a"), voter("n3", "a"), nonvoter("n4", "")},
			want:  []string{}},
		{name: "no swap while a voter is failing", leader: "n1",
			cands: []Candidate{voter("n1", "a"), voter("n2", "a"), failed(voter("n3", "a"), time.Second), nonvoter("n4", "b")},
			want:  []string{}},
		{name: "dead voter kept within grace", leader: "n1",
			cands: []Candidate{voter("n1", "a"), voter("n2", "b"), failed(voter("n3", "c"), grace-time.Second), nonvoter("n4", "d")},
			want:  []string{}},
		{name: "dead voter replaced after grace", leader: "n1",
			cands: []Candidate{voter("n1", "a"), voter("n2", "b"), failed(voter("n3", "c"), grace), nonvoter("n4", "d")},
			want:  []string{"remove n3", "promote n4"}},
		{name: "replacement prefers a switch without a voter", leader: "n1",
			cands: []Candidate{voter("n1", "a"), voter("n2", "b"), failed(voter("n3", "c"), 2*grace),
				nonvoter("n4", "a"), nonvoter("n5", "c")},
			want: []string{"remove n3", "promote n5"}},
		{name: "zero grace means the default", raw: true, leader: "n1",
			cands: []Candidate{voter("n1", "a"), voter("n2", "b"), failed(voter("n3", "c"), grace), nonvoter("n4", "d")},
			want:  []string{}},
		{name: "left voter removed at once and replaced", leader: "n1",
			cands: []Candidate{voter("n1", "a"), voter("n2", "b"), left(voter("n3", "c")), nonvoter("n4", "d")},
			want:  []string{"remove n3", "promote n4"}},
		{name: "left voter with no spare: down to 1 voter, never 2", leader: "n1",
			cands: []Candidate{voter("n1", "a"), voter("n2", "b"), left(voter("n3", "c"))},
			want:  []string{"remove n3", "demote n2"}},
		{name: "one gone voter removed per call", leader: "n1",
			cands: []Candidate{voter("n1", "a"), voter("n2", "b"), voter("n3", "c"),
				left(voter("n4", "d")), failed(voter("n5", "e"), 2*grace)},
			want: []string{"remove n4", "demote n5"}},
		{name: "leader never removed though gossip says it left", leader: "n1",
			cands: []Candidate{left(voter("n1", "a")), voter("n2", "b"), voter("n3", "c")},
			want:  []string{}},
		{name: "leader never removed though gossip says it died", leader: "n2",
			cands: []Candidate{voter("n1", "a"), failed(voter("n2", "b"), time.Hour), voter("n3", "c")},
			want:  []string{}},
		{name: "gossip sees no quorum of voters: voters untouched", leader: "n1",
			cands: []Candidate{voter("n1", "a"), voter("n2", "b"), failed(voter("n3", "c"), time.Hour),
				failed(voter("n4", "d"), time.Hour), failed(voter("n5", "e"), time.Hour), outsider("n6", "f")},
			want: []string{"add-nonvoter n6"}},
		{name: "left and dead nonvoters removed; ones within grace kept", leader: "n1",
			cands: []Candidate{voter("n1", "a"), left(nonvoter("n2", "a")), failed(nonvoter("n3", "a"), grace),
				failed(nonvoter("n4", "a"), time.Second)},
			want: []string{"remove n2", "remove n3"}},
		{name: "promote comes before unrelated additions", leader: "n1",
			cands: []Candidate{voter("n1", "a"), voter("n2", "b"), failed(voter("n3", "c"), grace), nonvoter("n4", "d"),
				outsider("n5", "e")},
			want: []string{"remove n3", "promote n4", "add-nonvoter n5"}},
		{name: "even voters while an outsider joins: no demotion", leader: "n1",
			cands: []Candidate{voter("n1", "a"), voter("n2", "b"), voter("n3", "c"), voter("n4", "d"), outsider("n5", "e")},
			want:  []string{"add-nonvoter n5"}},
		{name: "nonvoter additions bounded per call", leader: "n1",
			cands: append(nodes(1, voter), outsider("o1", ""), outsider("o2", ""), outsider("o3", ""), outsider("o4", ""),
				outsider("o5", ""), outsider("o6", ""), outsider("o7", ""), outsider("o8", ""), outsider("o9", "")),
			want: []string{"add-nonvoter o1", "add-nonvoter o2", "add-nonvoter o3", "add-nonvoter o4",
				"add-nonvoter o5", "add-nonvoter o6", "add-nonvoter o7", "add-nonvoter o8"}},
		{name: "outsider without an address is not added", leader: "n1",
			cands: []Candidate{voter("n1", "a"), {ID: "n2", Alive: true}},
			want:  []string{}},
		{name: "failed outsider is not added", leader: "n1",
			cands: []Candidate{voter("n1", "a"), failed(outsider("n2", "a"), time.Second)},
			want:  []string{}},
		// Bounded membership (MaxNonvoters): the rest of the nodes are
		// workers outside the configuration.
		{name: "cap: outsiders beyond the replicas stay workers", cfg: VoterConfig{MaxVoters: 3, MaxNonvoters: 1}, leader: "n1",
			cands: append(nodes(3, voter), outsider("n4", "sw"), outsider("n5", "sw"), outsider("n6", "sw")),
			want:  []string{"add-nonvoter n4"}},
		{name: "cap: replicas spread over switches", cfg: VoterConfig{MaxVoters: 3, MaxNonvoters: 2}, leader: "n1",
			cands: []Candidate{voter("n1", "a"), voter("n2", "b"), voter("n3", "c"),
				outsider("n4", "a"), outsider("n5", "b"), outsider("n6", "d"), outsider("n7", "e")},
			want: []string{"add-nonvoter n6", "add-nonvoter n7"}},
		{name: "cap: at the cap, nothing to do", cfg: VoterConfig{MaxVoters: 3, MaxNonvoters: 1}, leader: "n1",
			cands: append(nodes(3, voter), nonvoter("n4", "sw"), outsider("n5", "sw")),
			want:  []string{}},
		{name: "cap: surplus replicas removed, crowded switch first", cfg: VoterConfig{MaxVoters: 3, MaxNonvoters: 1}, leader: "n1",
			cands: []Candidate{voter("n1", "a"), voter("n2", "b"), voter("n3", "c"),
				nonvoter("n4", "c"), nonvoter("n5", "a"), nonvoter("n6", "a")},
			want: []string{"remove n5", "remove n4"}},
		{name: "cap: a failed replica goes first", cfg: VoterConfig{MaxVoters: 3, MaxNonvoters: 1}, leader: "n1",
			cands: append(nodes(3, voter), nonvoter("n4", "sw"), failed(nonvoter("n5", "sw"), time.Second)),
			want:  []string{"remove n5"}},
		{name: "cap: dead replica refilled from the workers", cfg: VoterConfig{MaxVoters: 3, MaxNonvoters: 1}, leader: "n1",
			cands: append(nodes(3, voter), failed(nonvoter("n4", "sw"), grace), outsider("n5", "sw"), outsider("n6", "sw")),
			want:  []string{"remove n4", "add-nonvoter n5"}},
		{name: "cap: replica within grace is not refilled", cfg: VoterConfig{MaxVoters: 3, MaxNonvoters: 1}, leader: "n1",
			cands: append(nodes(3, voter), failed(nonvoter("n4", "sw"), grace-time.Second), outsider("n5", "sw")),
			want:  []string{}},
		{name: "cap: dead voter replaced by the replica, replica refilled", cfg: VoterConfig{MaxVoters: 3, MaxNonvoters: 1}, leader: "n1",
			cands: []Candidate{voter("n1", "a"), voter("n2", "b"), failed(voter("n3", "c"), grace),
				nonvoter("n4", "d"), outsider("n5", "e")},
			want: []string{"remove n3", "promote n4", "add-nonvoter n5"}},
		{name: "cap: voters missing, workers added beyond the cap to be promoted", cfg: VoterConfig{MaxNonvoters: 1}, leader: "n1",
			cands: append(nodes(1, voter), outsider("n2", "sw"), outsider("n3", "sw"), outsider("n4", "sw"), outsider("n5", "sw"),
				outsider("n6", "sw"), outsider("n7", "sw")),
			want: []string{"add-nonvoter n2", "add-nonvoter n3", "add-nonvoter n4", "add-nonvoter n5", "add-nonvoter n6"}},
		{name: "cap: nonvoters waiting to be promoted are kept", cfg: VoterConfig{MaxNonvoters: -1}, leader: "n1",
			cands: append(nodes(1, voter), nonvoter("n2", "sw"), outsider("n3", "sw")),
			want:  []string{"add-nonvoter n3"}},
		{name: "cap: negative means voters only", cfg: VoterConfig{MaxVoters: 3, MaxNonvoters: -1}, leader: "n1",
			cands: append(nodes(3, voter), nonvoter("n4", "sw"), outsider("n5", "sw")),
			want:  []string{"remove n4"}},
		{name: "cap: demoted voter stays a round", cfg: VoterConfig{MaxVoters: 3, MaxNonvoters: -1}, leader: "n1",
			cands: nodes(5, voter),
			want:  []string{"demote n2", "demote n3"}},
		{name: "unknown leader: no plan", leader: "zz",
			cands: []Candidate{voter("n1", "a"), outsider("n2", "a")},
			want:  []string{}},
		{name: "leader not a voter: no plan", leader: "n2",
			cands: []Candidate{voter("n1", "a"), nonvoter("n2", "a"), outsider("n3", "a")},
			want:  []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cfg
			if !tt.raw && c.DeadServerGrace == 0 {
				c.DeadServerGrace = grace
			}
			got := kinds(PlanVoters(c, tt.leader, tt.cands, t0))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("PlanVoters(...) -want +got:\n%s", diff)
			}
		})
	}
}

// TestPlanVotersDeterministic checks the plan does not depend on the
// order gossip listed the candidates in, and does not modify them.
func TestPlanVotersDeterministic(t *testing.T) {
	cands := []Candidate{voter("n1", "a"), nonvoter("n2", "a"), nonvoter("n3", "b"), outsider("n4", "c"),
		failed(voter("n5", "b"), time.Hour), nonvoter("n6", "c")}
	cfg := VoterConfig{DeadServerGrace: time.Minute}
	want := PlanVoters(cfg, "n1", cands, t0)
	if len(want) == 0 {
		t.Fatal("PlanVoters returned no changes; the test needs a non-trivial plan")
	}
	for i := range len(cands) {
		rot := append(append([]Candidate(nil), cands[i:]...), cands[:i]...)
		orig := append([]Candidate(nil), rot...)
		// Reverse as well as rotate.
		for a, b := 0, len(rot)-1; a < b; a, b = a+1, b-1 {
			rot[a], rot[b] = rot[b], rot[a]
			orig[a], orig[b] = orig[b], orig[a]
		}
		got := PlanVoters(cfg, "n1", rot, t0)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("order %d: plan differs -want +got:\n%s", i, diff)
		}
		if diff := cmp.Diff(orig, rot); diff != "" {
			t.Errorf("order %d: PlanVoters modified its input:\n%s", i, diff)
		}
	}
}

// TestPlanVotersConverges runs plans to a fixed point, applying each one
// to the candidates, and checks the end state: an odd number of voters
// that includes the leader, never an even count after any complete plan
// except while waiting for an outsider.
func TestPlanVotersConverges(t *testing.T) {
	for n := 1; n <= 9; n++ {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) {
			testPlanVotersConverges(t, n, 0)
		})
	}
}

// TestPlanVotersConvergesBounded is TestPlanVotersConverges with a cap on
// the replicas: the end state also has min(cap, the rest) non-voters and
// every other node a worker, outside the configuration.
func TestPlanVotersConvergesBounded(t *testing.T) {
	for _, replicas := range []int{-1, 1, 2} {
		for n := 1; n <= 12; n++ {
			t.Run(fmt.Sprintf("%d nodes, %d replicas", n, replicas), func(t *testing.T) {
				testPlanVotersConverges(t, n, replicas)
			})
		}
	}
}

func testPlanVotersConverges(t *testing.T, n, replicas int) {
	cands := []Candidate{voter("n1", "s0")}
	for i := 2; i <= n; i++ {
		cands = append(cands, outsider(fmt.Sprintf("n%d", i), fmt.Sprintf("s%d", i%3)))
	}
	cfg := VoterConfig{DeadServerGrace: time.Minute, MaxNonvoters: replicas}
	for round := 0; ; round++ {
		if round > 10 {
			t.Fatalf("no fixed point after %d rounds", round)
		}
		plan := PlanVoters(cfg, "n1", cands, t0)
		if len(plan) == 0 {
			break
		}
		cands = applyPlan(t, cands, plan)
		v, joining := 0, false
		for _, c := range cands {
			if c.Suffrage == Voter {
				v++
			}
			joining = joining || !c.InConfig
		}
		if v%2 == 0 && !joining {
			t.Fatalf("round %d: %d voters after %v", round, v, kinds(plan))
		}
	}
	voters, nonvoters, switches, all := 0, 0, map[string]bool{}, map[string]bool{}
	for _, c := range cands {
		all[c.Switch] = true
		if !c.InConfig && replicas == 0 {
			t.Errorf("%s never joined the configuration", c.ID)
		}
		switch {
		case c.InConfig && c.Suffrage == Voter:
			voters++
			switches[c.Switch] = true
		case c.InConfig:
			nonvoters++
		}
	}
	want := min(oddFloor(n), 5)
	if n < 5 {
		want = min(oddFloor(n), 3)
	}
	if voters != want {
		t.Errorf("voters = %d; want %d", voters, want)
	}
	if wantNV := min(max(0, replicas), n-want); replicas != 0 && nonvoters != wantNV {
		t.Errorf("nonvoters = %d; want %d", nonvoters, wantNV)
	}
	if w := min(want, len(all)); len(switches) != w {
		t.Errorf("voters on %d switches; want %d", len(switches), w)
	}
}

func applyPlan(t *testing.T, cands []Candidate, plan []Change) []Candidate {
	t.Helper()
	out := cands[:0:0]
	byID := map[string]int{}
	for i, c := range cands {
		byID[c.ID] = i
	}
	removed := map[string]bool{}
	cands = append([]Candidate(nil), cands...)
	for _, ch := range plan {
		i, ok := byID[ch.ID]
		if !ok {
			t.Fatalf("plan names unknown server %s", ch.ID)
		}
		switch ch.Kind {
		case ChangeAddNonvoter:
			cands[i].InConfig, cands[i].Suffrage = true, Nonvoter
		case ChangePromote:
			if !cands[i].InConfig {
				t.Fatalf("promote of %s, not in the configuration", ch.ID)
			}
			cands[i].Suffrage = Voter
		case ChangeDemote:
			cands[i].Suffrage = Nonvoter
		case ChangeRemove:
			removed[ch.ID] = true
		}
	}
	for _, c := range cands {
		if removed[c.ID] {
			if !c.Alive || c.Left {
				continue
			}
			c.InConfig, c.Suffrage = false, "" // a live server removed is a worker
		}
		out = append(out, c)
	}
	return out
}
