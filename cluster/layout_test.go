package cluster

import (
	"slices"
	"strings"
	"testing"
)

// TestRequestLayout: a job's -n and -m decide each node's ranks, and each
// node holds the CPUs and memory per CPU of its own ranks.
func TestRequestLayout(t *testing.T) {
	r := Request{Nodes: 2, TasksPerNode: 3, NTasks: 5, CPUsPerTask: 2, MemPerCPUMiB: 100}
	if err := r.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if got := r.TaskCounts(2); !slices.Equal(got, []int{3, 2}) {
		t.Errorf("TaskCounts(2) = %v; want [3 2]", got)
	}
	n := &Node{CPUs: 16, MemoryMiB: 16000}
	for k, want := range []int{6, 4} {
		if got := r.CPUsAt(n, k, 2); got != want {
			t.Errorf("CPUsAt(node %d) = %d; want %d", k, got, want)
		}
		if got := r.MemAt(n, k, 2); got != uint64(want)*100 {
			t.Errorf("MemAt(node %d) = %d; want %d", k, got, want*100)
		}
	}
	if got := r.CPUsPerNode(); got != 6 {
		t.Errorf("CPUsPerNode = %d; want the busiest node's 6", got)
	}
	if got := r.Ranks(2); got != 5 {
		t.Errorf("Ranks = %d; want 5", got)
	}
	cyc := r
	cyc.Distribution = "cyclic"
	if got := []int{cyc.RankAt(2, 0, 1), cyc.RankAt(2, 1, 1)}; !slices.Equal(got, []int{2, 3}) {
		t.Errorf("cyclic RankAt(local 1) = %v; want [2 3]", got)
	}
	if got := (Request{Nodes: 2, NTasks: 5, Distribution: "plane=4"}).WithDefaults().TasksPerNode; got != 4 {
		t.Errorf("WithDefaults of -n 5 -m plane=4 on 2 nodes: tasks_per_node %d; want 4", got)
	}
	even := Request{Nodes: 2, TasksPerNode: 2, CPUsPerTask: 2}
	if got := even.CPUsAt(n, 1, 2); got != 4 {
		t.Errorf("even CPUsAt = %d; want 4", got)
	}
	minc := r
	minc.MinCPUs = 5
	if got := []int{minc.CPUsAt(n, 0, 2), minc.CPUsAt(n, 1, 2), minc.CPUsPerNode()}; !slices.Equal(got, []int{6, 5, 6}) {
		t.Errorf("--mincpus 5: CPUsAt %v, CPUsPerNode %d; want 6 and 5, 6", got[:2], got[2])
	}
	if got := (Request{Nodes: 1, TasksPerNode: 1, MinCPUs: 4}).CPUsPerNode(); got != 4 {
		t.Errorf("--mincpus 4 with one task: CPUsPerNode %d; want 4", got)
	}
	excl := r
	excl.Exclusive = true
	if got := excl.CPUsAt(n, 1, 2); got != 16 {
		t.Errorf("exclusive CPUsAt = %d; want the whole node's 16", got)
	}
	for _, tt := range []struct {
		r    Request
		want string
	}{
		{Request{Nodes: 2, TasksPerNode: 2, NTasks: 5}, "1 to nodes x tasks_per_node, 4"},
		{Request{Nodes: 2, TasksPerNode: 4, NTasks: 5}, "want 3, the most a node runs"},
		{Request{Nodes: 2, TasksPerNode: 4, NTasks: 5, Distribution: "plane=4"}, ""},
		{Request{Nodes: 2, TasksPerNode: 1, NTasks: 1}, "node 1 would run no task"},
		{Request{Nodes: 2, NodesMax: 6, TasksPerNode: 3, NTasks: 5}, "node 5 would run no task"},
		{Request{Nodes: 2, TasksPerNode: 3, NTasks: 5, Distribution: "CYCLIC"}, "want it as written back"},
		{Request{Nodes: 2, TasksPerNode: 3, NTasks: 5, Distribution: "arbitrary"}, "arbitrary"},
		{Request{Nodes: 2, TasksPerNode: 2, Distribution: "cyclic"}, "needs ntasks"},
	} {
		err := tt.r.Validate()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("Validate(%+v) = %v; want %q", tt.r, err, tt.want)
		}
	}
}
