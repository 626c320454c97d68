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
		r := tc.j.GrowRequest()
		if r.Nodes != tc.min || r.NodesMax != tc.max {
			t.Errorf("%s: GrowRequest nodes %d-%d; want %d-%d", tc.name, r.Nodes, r.NodesMax, tc.min, tc.max)
		}
		if r.Nodes > 0 && (r.NTasks != 0 || !slices.Contains(r.Exclude, "x") || !slices.Contains(r.Exclude, "a")) {
			t.Errorf("%s: GrowRequest %+v; want no -n, its own and its nodes excluded", tc.name, r)
		}
	}
}
