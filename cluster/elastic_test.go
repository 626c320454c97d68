package cluster

import (
	"slices"
	"testing"
)

func TestAllocationCurrent(t *testing.T) {
	nodes := []NodeAlloc{{Node: "a", State: TaskRunning}, {Node: "b", State: TaskLost, Released: true}, {Node: "c", State: TaskAssigned}}
	for _, tc := range []struct {
		name    string
		elastic bool
		i       int
		want    []string
		k       int
	}{
		{"fixed: as it is", false, 2, []string{"a", "b", "c"}, 2},
		{"elastic: without the lost node", true, 2, []string{"a", "c"}, 1},
		{"elastic: first node", true, 0, []string{"a", "c"}, 0},
		{"elastic: the lost node itself", true, 1, []string{"a", "c"}, -1},
	} {
		a := &Allocation{Nodes: nodes, Elastic: tc.elastic, Resizes: []Resize{{Cause: ResizeShrink}}}
		c, k := a.Current(tc.i)
		if got := c.NodeNames(); !slices.Equal(got, tc.want) || k != tc.k {
			t.Errorf("%s: Current(%d) = %v, %d; want %v, %d", tc.name, tc.i, got, k, tc.want, tc.k)
		}
		if !slices.Equal(a.LiveNodes(), tc.want) {
			t.Errorf("%s: LiveNodes = %v; want %v", tc.name, a.LiveNodes(), tc.want)
		}
	}
}

func TestGrowRequest(t *testing.T) {
	run := func(elastic bool, states ...TaskState) *Job {
		j := &Job{State: JobRunning, Spec: Spec{Request: Request{Nodes: 2, NodesMax: 4, GPUsPerNode: 1, NTasks: 5, Exclude: []string{"x"}}}}
		j.Alloc = &Allocation{Elastic: elastic}
		for i, s := range states {
			j.Alloc.Nodes = append(j.Alloc.Nodes, NodeAlloc{Node: string(rune('a' + i)), State: s})
		}
		return j
	}
	for _, tc := range []struct {
		name     string
		j        *Job
		min, max int
	}{
		{"room for 2", run(true, TaskRunning, TaskRunning), 1, 2},
		{"room for 1", run(true, TaskRunning, TaskRunning, TaskRunning), 1, 0},
		{"a lost node frees room", run(true, TaskRunning, TaskLost, TaskRunning, TaskRunning), 1, 0},
		{"full", run(true, TaskRunning, TaskRunning, TaskRunning, TaskRunning), 0, 0},
		{"not elastic", run(false, TaskRunning, TaskRunning), 0, 0},
	} {
		r := tc.j.GrowRequest(true)
		if r.Nodes != tc.min || r.NodesMax != tc.max {
			t.Errorf("%s: GrowRequest nodes %d-%d; want %d-%d", tc.name, r.Nodes, r.NodesMax, tc.min, tc.max)
		}
		if r.Nodes > 0 && (r.NTasks != 0 || !slices.Contains(r.Exclude, "x") || !slices.Contains(r.Exclude, "a")) {
			t.Errorf("%s: GrowRequest %+v; want no -n, its own and its nodes excluded", tc.name, r)
		}
	}
}

// TestJoinSlot: a node joining an elastic allocation takes the smallest
// place no node it has holds, and it is its index in Current.
func TestJoinSlot(t *testing.T) {
	run := func(s TaskState) NodeAlloc { return NodeAlloc{State: s} }
	lost := NodeAlloc{State: TaskLost, Released: true}
	for _, tc := range []struct {
		name  string
		nodes []NodeAlloc
		want  int
	}{
		{"first nodes", []NodeAlloc{run(TaskRunning), run(TaskRunning)}, 2},
		{"a middle node lost: its place", []NodeAlloc{run(TaskRunning), lost, run(TaskRunning)}, 1},
		{"the last node lost", []NodeAlloc{run(TaskRunning), run(TaskRunning), lost}, 2},
		{"a joined node holds the freed place", []NodeAlloc{run(TaskRunning), lost, run(TaskRunning), {State: TaskRunning, Slot: 2}}, 3},
		{"a joined node lost frees its place", []NodeAlloc{run(TaskRunning), lost, run(TaskRunning), {State: TaskLost, Released: true, Slot: 2}}, 1},
		{"a node given up still stopping holds its place", []NodeAlloc{run(TaskRunning), {State: TaskRunning, Removed: true}, run(TaskRunning)}, 3},
		{"a node given up and released frees it", []NodeAlloc{run(TaskRunning), {State: TaskExited, Removed: true, Released: true}, run(TaskRunning)}, 1},
	} {
		a := &Allocation{Elastic: true}
		for i, n := range tc.nodes {
			n.Node = string(rune('a' + i))
			a.Nodes = append(a.Nodes, n)
		}
		if got := a.JoinSlot(); got != tc.want {
			t.Errorf("%s: JoinSlot = %d; want %d", tc.name, got, tc.want)
		}
	}
}

// TestJoinRanksNeverRepeat: through bounded random grows and shrinks, a
// joining node's ranks (by Current's index, as the agent starts them)
// never repeat a rank of a node the job still has, and its index is its
// place.
func TestJoinRanksNeverRepeat(t *testing.T) {
	req := Request{Nodes: 2, NodesMax: 5, TasksPerNode: 2}
	for seed := range 50 {
		a := &Allocation{Elastic: true}
		ranks := map[int][]int{} // node index in a.Nodes -> ranks it started with
		start := func(i int) {
			c, k := a.Current(i)
			if k != a.SlotOf(i) {
				t.Fatalf("seed %d: node %d at index %d, place %d", seed, i, k, a.SlotOf(i))
			}
			for local := range req.TasksPerNode {
				ranks[i] = append(ranks[i], req.RankAt(len(c.Nodes), k, local))
			}
		}
		for i := range 3 {
			a.Nodes = append(a.Nodes, NodeAlloc{Node: string(rune('a' + i)), State: TaskRunning})
		}
		for i := range 3 {
			start(i)
		}
		r := uint32(seed*2654435761 + 1)
		next := func(n int) int { r = r*1664525 + 1013904223; return int(r>>8) % n }
		for step := range 40 {
			live := a.LiveNodes()
			if next(2) == 0 && len(live) > req.Nodes {
				// Lose a node other than the first.
				var idx []int
				for i := 1; i < len(a.Nodes); i++ {
					if a.Live(i) {
						idx = append(idx, i)
					}
				}
				i := idx[next(len(idx))]
				a.Nodes[i].State, a.Nodes[i].Released = TaskLost, true
				continue
			}
			if len(live) >= req.NodesMax {
				continue
			}
			a.Nodes = append(a.Nodes, NodeAlloc{Node: string(rune('a' + len(a.Nodes))), State: TaskRunning, Slot: a.JoinSlot() + 1})
			i := len(a.Nodes) - 1
			start(i)
			seen := map[int]int{}
			for n := range a.Nodes {
				if !a.Live(n) {
					continue
				}
				for _, rk := range ranks[n] {
					if o, dup := seen[rk]; dup {
						t.Fatalf("seed %d step %d: rank %d on nodes %d and %d (places %d, %d)", seed, step, rk, o, n, a.SlotOf(o), a.SlotOf(n))
					}
					seen[rk] = n
				}
			}
		}
	}
}

// TestGrowRequestRejoin: a node the job lost comes back only with rejoin,
// and only once its entry is released (its tasks known dead: DESIGN,
// node liveness, a node cut off never keeps running ranks that the
// majority placed elsewhere); a node given up and still stopping, or one
// the job has, never.
func TestGrowRequestRejoin(t *testing.T) {
	j := &Job{State: JobRunning, Spec: Spec{Request: Request{Nodes: 1, NodesMax: 6, Exclude: []string{"x"}}}}
	j.Alloc = &Allocation{Elastic: true, Nodes: []NodeAlloc{
		{Node: "a", State: TaskRunning},
		{Node: "b", State: TaskLost, Released: true},                  // lost, fenced: may come back
		{Node: "c", State: TaskRunning, Removed: true},                // given up, still stopping
		{Node: "d", State: TaskExited, Removed: true, Released: true}, // given up, stopped
		{Node: "e", State: TaskLost, Released: true},                  // lost, then back ...
		{Node: "e", State: TaskRunning, Join: 1},                      // ... and running again
	}}
	for _, tc := range []struct {
		rejoin bool
		want   []string
	}{
		{false, []string{"x", "a", "b", "c", "d", "e"}},
		{true, []string{"x", "a", "c", "e"}},
	} {
		if got := j.GrowRequest(tc.rejoin).Exclude; !slices.Equal(got, tc.want) {
			t.Errorf("GrowRequest(%v).Exclude = %v; want %v", tc.rejoin, got, tc.want)
		}
	}
	if i := j.Alloc.Find("e"); i != 5 {
		t.Errorf(`Find("e") = %d; want 5 (the latest entry)`, i)
	}
	if i := j.Alloc.FindJoin("e", 0); i != 4 {
		t.Errorf(`FindJoin("e", 0) = %d; want 4`, i)
	}
	if i := j.Alloc.FindJoin("e", 2); i != -1 {
		t.Errorf(`FindJoin("e", 2) = %d; want -1`, i)
	}
	if got := j.Alloc.LiveNodes(); !slices.Equal(got, []string{"a", "e"}) {
		t.Errorf("LiveNodes = %v; want [a e]", got)
	}
}
