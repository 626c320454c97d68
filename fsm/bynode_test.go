package fsm

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/shoal-sched/shoal/cluster"
)

// jobsOnScan is JobsOn's meaning, written as the scan the follow query
// made before the index: every job whose allocation's entry for node
// (Find's: its latest) has not released it.
func jobsOnScan(jobs []*cluster.Job, node string) []cluster.JobID {
	var ids []cluster.JobID
	for _, j := range jobs {
		if i := j.Alloc.Find(node); i >= 0 && !j.Alloc.Nodes[i].Released {
			ids = append(ids, j.ID)
		}
	}
	return ids
}

func ids(jobs []*cluster.Job) []cluster.JobID {
	var out []cluster.JobID
	for _, j := range jobs {
		out = append(out, j.ID)
	}
	return out
}

func allocOn(entries ...cluster.NodeAlloc) *cluster.Allocation {
	return &cluster.Allocation{Nodes: entries}
}

func TestJobsOn(t *testing.T) {
	jobs := []*cluster.Job{
		{ID: 1, Alloc: allocOn(cluster.NodeAlloc{Node: "a"}, cluster.NodeAlloc{Node: "b"})},
		{ID: 2}, // pending: no allocation
		{ID: 3, Alloc: allocOn(cluster.NodeAlloc{Node: "a", Released: true}, cluster.NodeAlloc{Node: "c"})},
		// a node named twice (an elastic job took it back) counts by its
		// latest entry, as Find does
		{ID: 4, Alloc: allocOn(cluster.NodeAlloc{Node: "b", Released: true}, cluster.NodeAlloc{Node: "b"})},
		{ID: 5, Alloc: allocOn(cluster.NodeAlloc{Node: "c"}, cluster.NodeAlloc{Node: "c", Released: true})},
	}
	v := PartialView(7, jobs, nil, nil, nil, nil)
	for _, tc := range []struct {
		node string
		want []cluster.JobID
	}{
		{"a", []cluster.JobID{1}},
		{"b", []cluster.JobID{1, 4}},
		{"c", []cluster.JobID{3}},
		{"d", nil},
	} {
		if got := ids(v.JobsOn(tc.node)); !slices.Equal(got, tc.want) {
			t.Errorf("JobsOn(%q) = %v; want %v", tc.node, got, tc.want)
		}
	}
}

// TestJobsOnMatchesScan: over random allocations, the index answers what
// a scan of every job answers, for every node (the follow query's
// digest, and so what a worker runs, must not change with the index).
func TestJobsOnMatchesScan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := []string{"n0", "n1", "n2", "n3"}
		var jobs []*cluster.Job
		for id := range rapid.IntRange(0, 12).Draw(t, "jobs") {
			j := &cluster.Job{ID: cluster.JobID(id + 1)}
			if rapid.Bool().Draw(t, "allocated") {
				j.Alloc = &cluster.Allocation{}
				for k := range rapid.IntRange(0, 5).Draw(t, "entries") {
					j.Alloc.Nodes = append(j.Alloc.Nodes, cluster.NodeAlloc{
						Node:     rapid.SampledFrom(nodes).Draw(t, fmt.Sprint("node", k)),
						Released: rapid.Bool().Draw(t, fmt.Sprint("released", k)),
					})
				}
			}
			jobs = append(jobs, j)
		}
		v := PartialView(1, jobs, nil, nil, nil, nil)
		for _, n := range nodes {
			if got, want := ids(v.JobsOn(n)), jobsOnScan(jobs, n); !slices.Equal(got, want) {
				t.Fatalf("JobsOn(%q) = %v; want %v", n, got, want)
			}
		}
	})
}

// TestJobsOnView: a state's view indexes the jobs it holds at its
// index, and a later view its own; an earlier view keeps its answer.
func TestJobsOnView(t *testing.T) {
	h := newHarness()
	withNodes("n1", "n2", "n3")(t, h)
	h.must(t, CmdSubmitJob, SubmitJob{RequestID: "a", Spec: spec(2, 2)})
	before := h.s.View()
	if got := before.JobsOn("n1"); len(got) != 0 {
		t.Fatalf("JobsOn(n1) before placing = %v; want none", ids(got))
	}
	h.must(t, CmdAllocate, Allocate{Decisions: []Decision{place(1, "n1", []int{0, 1}, "n2", []int{0, 1})}})
	after := h.s.View()
	for node, want := range map[string][]cluster.JobID{"n1": {1}, "n2": {1}, "n3": nil} {
		if got := ids(after.JobsOn(node)); !slices.Equal(got, want) {
			t.Errorf("JobsOn(%s) after placing = %v; want %v", node, got, want)
		}
	}
	if got := before.JobsOn("n1"); len(got) != 0 {
		t.Errorf("the earlier view changed: JobsOn(n1) = %v", ids(got))
	}
}
