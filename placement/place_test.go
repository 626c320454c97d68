package placement

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/shoal-sched/shoal/cluster"
)

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

type reasons = map[cluster.JobID]string

func TestPlace(t *testing.T) {
	nvlinkPairs := func() *cluster.Node {
		n := mkNode("n1", 8, "a", "s0")
		for i := range n.GPUs {
			n.GPUs[i].NVLinkPeers = []int{i ^ 1}
		}
		return n
	}
	numaHalves := func() *cluster.Node {
		n := mkNode("n1", 8, "a", "s0")
		for i := range n.GPUs {
			n.GPUs[i].NUMA = i / 4
		}
		return n
	}
	tests := []struct {
		name    string
		nodes   []*cluster.Node
		jobs    []*cluster.Job // jobs holding resources
		queue   []*cluster.Job
		want    []Decision
		reasons reasons
	}{{
		name:  "single node",
		nodes: []*cluster.Node{mkNode("n1", 8, "a", "s0")},
		queue: []*cluster.Job{pending(1, 1, 4)},
		want:  []Decision{{Job: 1, Nodes: []Assignment{asg("n1", 0, 1, 2, 3)}}},
	}, {
		name:  "gang over one leaf, tie between leaves by name",
		nodes: cat(mkLeaf("b", 4, 8, "b", "s0"), mkLeaf("a", 4, 8, "a", "s0")),
		queue: []*cluster.Job{pending(1, 3, 4)},
		want: []Decision{{Job: 1, Nodes: []Assignment{
			asg("a1", 0, 1, 2, 3), asg("a2", 0, 1, 2, 3), asg("a3", 0, 1, 2, 3)}}},
	}, {
		name:  "best-fit leaf: the smallest leaf that suffices",
		nodes: cat(mkLeaf("a", 4, 8, "a", "s0"), mkLeaf("b", 2, 8, "b", "s0"), mkLeaf("c", 1, 8, "c", "s0")),
		queue: []*cluster.Job{pending(1, 2, 8)},
		want:  []Decision{{Job: 1, Nodes: []Assignment{asg("b1", seq(0, 7)...), asg("b2", seq(0, 7)...)}}},
	}, {
		name:  "best fit inside a leaf: fewest free GPUs that suffice",
		nodes: mkLeaf("n", 3, 8, "a", "s0"),
		jobs:  []*cluster.Job{holding(7, cluster.JobRunning, false, "n2", seq(0, 5), "n3", seq(0, 3))},
		queue: []*cluster.Job{pending(8, 1, 2)},
		want:  []Decision{{Job: 8, Nodes: []Assignment{asg("n2", 6, 7)}}},
	}, {
		name:  "spanning leaves under one parent: fullest first, best-fit remainder",
		nodes: cat(mkLeaf("a", 4, 8, "a", "s0"), mkLeaf("b", 3, 8, "b", "s0"), mkLeaf("c", 2, 8, "c", "s0")),
		queue: []*cluster.Job{pending(1, 6, 8)},
		want: []Decision{{Job: 1, Nodes: []Assignment{
			asg("a1", seq(0, 7)...), asg("a2", seq(0, 7)...), asg("a3", seq(0, 7)...), asg("a4", seq(0, 7)...),
			asg("c1", seq(0, 7)...), asg("c2", seq(0, 7)...)}}},
	}, {
		name: "the parent needing the fewest leaves wins",
		nodes: cat(mkLeaf("a", 2, 1, "a", "s0"), mkLeaf("b", 2, 1, "b", "s0"), mkLeaf("c", 2, 1, "c", "s0"),
			mkLeaf("d", 3, 1, "d", "s1"), mkLeaf("e", 3, 1, "e", "s1")),
		queue: []*cluster.Job{pending(1, 5, 1)},
		want: []Decision{{Job: 1, Nodes: []Assignment{
			asg("d1", 0), asg("d2", 0), asg("d3", 0), asg("e1", 0), asg("e2", 0)}}},
	}, {
		name:  "one parent preferred to spanning parents",
		nodes: cat(mkLeaf("a", 3, 1, "a", "s0"), mkLeaf("b", 2, 1, "b", "s0"), mkLeaf("c", 4, 1, "c", "s1")),
		queue: []*cluster.Job{pending(1, 5, 1)},
		want: []Decision{{Job: 1, Nodes: []Assignment{
			asg("a1", 0), asg("a2", 0), asg("a3", 0), asg("b1", 0), asg("b2", 0)}}},
	}, {
		name:  "spanning parents when no parent suffices",
		nodes: cat(mkLeaf("a", 2, 1, "a", "s0"), mkLeaf("b", 3, 1, "b", "s1")),
		queue: []*cluster.Job{pending(1, 4, 1)},
		want: []Decision{{Job: 1, Nodes: []Assignment{
			asg("a1", 0), asg("b1", 0), asg("b2", 0), asg("b3", 0)}}},
	}, {
		name: "down, drained and left nodes are not used",
		nodes: []*cluster.Node{withStatus(mkNode("n1", 8, "a", "s0"), cluster.NodeDown), drained(mkNode("n2", 8, "a", "s0")),
			mkNode("n3", 8, "a", "s0"), withStatus(mkNode("n4", 8, "a", "s0"), cluster.NodeLeft)},
		queue:   []*cluster.Job{pending(1, 2, 1), pending(2, 1, 8)},
		want:    []Decision{{Job: 2, Nodes: []Assignment{asg("n3", seq(0, 7)...)}}},
		reasons: reasons{1: cluster.ReasonReqNodeNotAvail},
	}, {
		// Slurm's sched/builtin: the first job that waits for resources
		// holds back every later one, even one that would fit now.
		name:    "FIFO: Resources blocks later jobs with Priority",
		nodes:   mkLeaf("n", 2, 8, "a", "s0"),
		queue:   []*cluster.Job{pending(4, 1, 1), pending(2, 1, 4), pending(1, 1, 4), pending(3, 2, 4)},
		want:    []Decision{{Job: 1, Nodes: []Assignment{asg("n1", 0, 1, 2, 3)}}, {Job: 2, Nodes: []Assignment{asg("n1", 4, 5, 6, 7)}}},
		reasons: reasons{3: cluster.ReasonResources, 4: cluster.ReasonPriority},
	}, {
		name:    "ReqNodeNotAvail does not block",
		nodes:   []*cluster.Node{mkNode("n1", 8, "a", "s0")},
		queue:   []*cluster.Job{pending(2, 1, 16), pending(3, 2, 1), pending(4, 1, 8)},
		want:    []Decision{{Job: 4, Nodes: []Assignment{asg("n1", seq(0, 7)...)}}},
		reasons: reasons{2: cluster.ReasonReqNodeNotAvail, 3: cluster.ReasonReqNodeNotAvail},
	}, {
		name:  "jobs without GPUs share nodes, busiest first",
		nodes: mkLeaf("n", 2, 8, "a", "s0"),
		jobs:  []*cluster.Job{holding(1, cluster.JobRunning, false, "n1", seq(0, 7))},
		queue: []*cluster.Job{pending(2, 1, 0), pending(3, 1, 0), pending(4, 2, 0)},
		want: []Decision{
			{Job: 2, Nodes: []Assignment{asg("n1")}},
			{Job: 3, Nodes: []Assignment{asg("n1")}},
			{Job: 4, Nodes: []Assignment{asg("n1"), asg("n2")}}},
	}, {
		// DESIGN invariant 1: a finished job's GPUs stay taken until its
		// tasks are known dead (Released).
		name:    "unreleased GPUs of a terminal job are not free",
		nodes:   []*cluster.Node{mkNode("n1", 8, "a", "s0")},
		jobs:    []*cluster.Job{holding(1, cluster.JobCompleted, false, "n1", []int{0, 1, 2, 3, 4, 5, 6, 7})},
		queue:   []*cluster.Job{pending(2, 1, 1)},
		reasons: reasons{2: cluster.ReasonResources},
	}, {
		name:  "released GPUs are free",
		nodes: []*cluster.Node{mkNode("n1", 8, "a", "s0")},
		jobs: []*cluster.Job{holding(1, cluster.JobCompleted, true, "n1", seq(0, 7)),
			holding(5, cluster.JobRunning, false, "gone", seq(0, 7), "n1", []int{-1, 99})},
		queue: []*cluster.Job{pending(2, 1, 8)},
		want:  []Decision{{Job: 2, Nodes: []Assignment{asg("n1", seq(0, 7)...)}}},
	}, {
		name:  "NVLink peers chosen together",
		nodes: []*cluster.Node{nvlinkPairs()},
		jobs:  []*cluster.Job{holding(1, cluster.JobRunning, false, "n1", []int{0, 2})},
		queue: []*cluster.Job{pending(2, 1, 2)},
		want:  []Decision{{Job: 2, Nodes: []Assignment{asg("n1", 4, 5)}}},
	}, {
		name:  "same NUMA node chosen together",
		nodes: []*cluster.Node{numaHalves()},
		jobs:  []*cluster.Job{holding(1, cluster.JobRunning, false, "n1", []int{0, 1, 2})},
		queue: []*cluster.Job{pending(2, 1, 2)},
		want:  []Decision{{Job: 2, Nodes: []Assignment{asg("n1", 4, 5)}}},
	}, {
		name:    "lowest free GPUs without topology, past 64 GPUs",
		nodes:   []*cluster.Node{mkNode("big", 100, "a", "s0")},
		jobs:    []*cluster.Job{holding(1, cluster.JobRunning, false, "big", seq(0, 69))},
		queue:   []*cluster.Job{pending(2, 1, 20), pending(3, 1, 11)},
		want:    []Decision{{Job: 2, Nodes: []Assignment{asg("big", seq(70, 89)...)}}},
		reasons: reasons{3: cluster.ReasonResources},
	}, {
		name:    "invalid requests",
		nodes:   []*cluster.Node{mkNode("n1", 8, "a", "s0")},
		queue:   []*cluster.Job{pending(1, 0, 1), pending(2, 1, -1), nil, pending(3, 1, 1), pending(3, 1, 1)},
		want:    []Decision{{Job: 3, Nodes: []Assignment{asg("n1", 0)}}},
		reasons: reasons{1: ReasonBadConstraints, 2: ReasonBadConstraints},
	}, {
		name:    "empty cluster",
		queue:   []*cluster.Job{pending(1, 1, 0)},
		reasons: reasons{1: cluster.ReasonReqNodeNotAvail},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := Result{Decisions: tt.want, Reasons: tt.reasons}
			if want.Reasons == nil {
				want.Reasons = reasons{}
			}
			got := Place(NewView(tt.nodes, tt.jobs), tt.queue, now)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Place() = %+v; want %+v; diff (-want +got):\n%s", got, want, diff)
			}
		})
	}
}

// TestPlaceDeterministic shuffles the order of nodes, jobs and queue and
// requires the same decisions: placement must not depend on input order
// or map iteration (DESIGN: every replica's leader must reach the same
// decisions for a post-mortem replay).
func TestPlaceDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var nodes []*cluster.Node
	for l := range 12 {
		for i := range 6 {
			n := mkNode(fmtName("n", l*6+i), 8, fmtName("leaf", l), fmtName("spine", l/4))
			for g := range n.GPUs {
				n.GPUs[g].NUMA = g / 4
				n.GPUs[g].NVLinkPeers = []int{g ^ 1, g ^ 2}
			}
			nodes = append(nodes, n)
		}
	}
	var running, queue []*cluster.Job
	for id := cluster.JobID(1); id <= 40; id++ {
		n := nodes[rng.IntN(len(nodes))]
		running = append(running, holding(id, cluster.JobRunning, rng.IntN(4) == 0, n.Name, []int{rng.IntN(8), rng.IntN(8)}))
	}
	for id := cluster.JobID(100); id < 160; id++ {
		queue = append(queue, pending(id, 1+rng.IntN(9), rng.IntN(9)))
	}
	want := Place(NewView(nodes, running), queue, now)
	if len(want.Decisions) < 10 {
		t.Fatalf("Place() made %d decisions; want a test that places at least 10 jobs", len(want.Decisions))
	}
	for i := range 5 {
		shuffle := func(s []*cluster.Node) []*cluster.Node {
			c := append([]*cluster.Node(nil), s...)
			rng.Shuffle(len(c), func(a, b int) { c[a], c[b] = c[b], c[a] })
			return c
		}
		shuffleJobs := func(s []*cluster.Job) []*cluster.Job {
			c := append([]*cluster.Job(nil), s...)
			rng.Shuffle(len(c), func(a, b int) { c[a], c[b] = c[b], c[a] })
			return c
		}
		got := Place(NewView(shuffle(nodes), shuffleJobs(running)), shuffleJobs(queue), now.Add(time.Duration(i)*time.Hour))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("Place(shuffled inputs, round %d) differs (-want +got):\n%s", i, diff)
		}
	}
}

// TestPlaceDoesNotMutate checks that Place leaves its inputs and the View
// alone, so the caller's FSM snapshot stays intact and a second call gives
// the same answer.
func TestPlaceDoesNotMutate(t *testing.T) {
	nodes := cat(mkLeaf("a", 3, 8, "a", "s0"), mkLeaf("b", 3, 8, "b", "s0"))
	nodes[0].GPUs[0].NVLinkPeers = []int{1}
	running := []*cluster.Job{holding(1, cluster.JobRunning, false, "a1", []int{0, 1})}
	queue := []*cluster.Job{pending(2, 4, 4), pending(3, 1, 8), pending(4, 1, 4)}
	cloneN := func() []*cluster.Node {
		var c []*cluster.Node
		for _, n := range nodes {
			c = append(c, n.Clone())
		}
		return c
	}
	cloneJ := func(js []*cluster.Job) []*cluster.Job {
		var c []*cluster.Job
		for _, j := range js {
			c = append(c, j.Clone())
		}
		return c
	}
	n0, r0, q0 := cloneN(), cloneJ(running), cloneJ(queue)
	v := NewView(nodes, running)
	first := Place(v, queue, now)
	second := Place(v, queue, now)
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("second Place() on the same View differs (-first +second):\n%s", diff)
	}
	if len(first.Decisions) != 3 {
		t.Errorf("Place() = %d decisions; want 3", len(first.Decisions))
	}
	if diff := cmp.Diff(n0, nodes); diff != "" {
		t.Errorf("nodes changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(r0, running); diff != "" {
		t.Errorf("jobs changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(q0, queue); diff != "" {
		t.Errorf("queue changed (-before +after):\n%s", diff)
	}
}

func fmtName(prefix string, i int) string { return prefix + itoa(i) }

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
