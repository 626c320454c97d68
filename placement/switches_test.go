package placement

import (
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// TestPlaceSwitches: --switches=K@T makes a job wait, up to T after its
// submit, for a placement on at most K leaf switches; after T it takes
// what there is. Without it, or under the first-fit policies, a job
// spreads at once.
func TestPlaceSwitches(t *testing.T) {
	// Two leaves of 2 nodes; one node of each is busy: 2 free nodes, on
	// two leaves.
	nodes := cat(mkLeaf("a", 2, 4, "a", "s0"), mkLeaf("b", 2, 4, "b", "s0"))
	busy := holding(9, cluster.JobRunning, false, "a1", seq(0, 3), "b1", seq(0, 3))
	submit := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := func(switches int, wait time.Duration) *cluster.Job {
		j := pending(1, 2, 4)
		j.SubmitTime = submit
		j.Spec.Request.Switches, j.Spec.Request.SwitchesWait = switches, wait
		return j
	}
	for _, tc := range []struct {
		name   string
		job    *cluster.Job
		now    time.Time
		policy Policy
		placed bool
	}{
		{"no --switches: spreads at once", job(0, 0), submit, PolicyShoal, true},
		{"--switches=1 within its wait: waits", job(1, time.Minute), submit.Add(30 * time.Second), PolicyShoal, false},
		{"--switches=1 after its wait: takes what there is", job(1, time.Minute), submit.Add(time.Minute), PolicyShoal, true},
		{"--switches=1 with the default wait (300 s): waits at 299 s", job(1, 0), submit.Add(299 * time.Second), PolicyShoal, false},
		{"--switches=2: two leaves are allowed", job(2, time.Minute), submit, PolicyShoal, true},
		{"first fit ignores --switches", job(1, time.Minute), submit, PolicyBackfill, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := PlaceWith(NewView(nodes, []*cluster.Job{busy}), []*cluster.Job{tc.job}, tc.now, Options{Policy: tc.policy})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(res.Decisions) == 1; got != tc.placed {
				t.Fatalf("placed %v (%+v, reason %q); want %v", got, res.Decisions, res.Reasons[1], tc.placed)
			}
		})
	}
	// Once one leaf frees, the waiting job goes under it.
	res, err := PlaceWith(NewView(nodes, nil), []*cluster.Job{job(1, time.Minute)}, submit, Options{Policy: PolicyShoal})
	if err != nil || len(res.Decisions) != 1 {
		t.Fatalf("empty cluster: %+v, %v", res, err)
	}
	if d := res.Decisions[0]; d.Nodes[0].Node[0] != d.Nodes[1].Node[0] {
		t.Errorf("--switches=1 job on %s and %s: two leaves", d.Nodes[0].Node, d.Nodes[1].Node)
	}
}

// TestPlaceNodeRange: --nodes MIN-MAX starts on as many nodes as fit now,
// up to MAX, in every policy; with fewer than MIN free it waits.
func TestPlaceNodeRange(t *testing.T) {
	nodes := cat(mkLeaf("a", 3, 4, "a", "s0"), mkLeaf("b", 3, 4, "b", "s0"))
	busy := holding(9, cluster.JobRunning, false, "a1", seq(0, 3), "b1", seq(0, 3))
	ranged := func(min, max int) *cluster.Job {
		j := pending(1, min, 4)
		j.Spec.Request.NodesMax = max
		return j
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, pol := range Policies() {
		for _, tc := range []struct {
			min, max, want int
		}{{2, 8, 4}, {2, 3, 3}, {5, 8, 0}, {4, 4, 4}} {
			res, err := PlaceWith(NewView(nodes, []*cluster.Job{busy}), []*cluster.Job{ranged(tc.min, tc.max)}, now, Options{Policy: pol})
			if err != nil {
				t.Fatal(err)
			}
			got := 0
			if len(res.Decisions) == 1 {
				got = len(res.Decisions[0].Nodes)
			}
			if got != tc.want {
				t.Errorf("%s: --nodes %d-%d with 4 free: %d nodes; want %d", pol, tc.min, tc.max, got, tc.want)
			}
		}
	}
}

// TestPlaceLeafParentsAgree: nodes of one leaf that announce different
// parents, or none (on Ethernet a node sees only its leaf; discovery or
// a flag may complete one node's place first), are still one leaf: a
// --switches=1 job takes its nodes there.
func TestPlaceLeafParentsAgree(t *testing.T) {
	nodes := []*cluster.Node{
		mkNode("a1", 4, "a", "s0"),
		mkNode("a2", 4, "a", ""),
		mkNode("a3", 4, "a", "s0"),
		mkNode("b1", 4, "b", "s0"),
	}
	j := pending(1, 3, 4)
	j.Spec.Request.Switches, j.Spec.Request.SwitchesWait = 1, time.Hour
	res, err := PlaceWith(NewView(nodes, nil), []*cluster.Job{j}, now, Options{Policy: PolicyShoal})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Decisions) != 1 {
		t.Fatalf("a 3-node --switches=1 job on a leaf of 3 whose nodes disagree on the parent: not placed (%q)", res.Reasons[1])
	}
	for _, n := range res.Decisions[0].Nodes {
		if n.Node[0] != 'a' {
			t.Errorf("placed on %s, outside leaf a", n.Node)
		}
	}
}

// TestPlaceSwitchLinks: leaves whose nodes announce no parent are grouped
// under the parents the switches' own LLDP reports give
// (View.WithSwitchLinks): a 4-node job takes two leaves under one spine.
func TestPlaceSwitchLinks(t *testing.T) {
	nodes := []*cluster.Node{
		mkNode("a1", 4, "a", ""), mkNode("a2", 4, "a", ""),
		mkNode("b1", 4, "b", ""), mkNode("b2", 4, "b", ""),
		mkNode("c1", 4, "c", ""), mkNode("c2", 4, "c", ""),
	}
	place := func(v *View) string {
		t.Helper()
		res, err := PlaceWith(v, []*cluster.Job{pending(1, 4, 4)}, now, Options{Policy: PolicyShoal})
		if err != nil || len(res.Decisions) != 1 {
			t.Fatalf("not placed: %v %v", err, res.Reasons)
		}
		leaves := map[byte]bool{}
		for _, n := range res.Decisions[0].Nodes {
			leaves[n.Node[0]] = true
		}
		var out []byte
		for _, l := range []byte("abc") {
			if leaves[l] {
				out = append(out, l)
			}
		}
		return string(out)
	}
	links := map[string][]string{"a": {"spine1"}, "c": {"spine1"}, "b": {"spine2"}, "spine1": {"a", "c"}, "spine2": {"b"}}
	if got := place(NewView(nodes, nil).WithSwitchLinks(links)); got != "ac" {
		t.Errorf("with spine1 over a and c: placed on leaves %q; want ac", got)
	}
	links = map[string][]string{"a": {"spine1"}, "b": {"spine1"}, "c": {"spine2"}, "spine1": {"a", "b"}, "spine2": {"c"}}
	if got := place(NewView(nodes, nil).WithSwitchLinks(links)); got != "ab" {
		t.Errorf("with spine1 over a and b: placed on leaves %q; want ab", got)
	}
}
