package leader

import (
	"slices"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
)

// TestPassSpread: once every server speaks protocol 5 (PassInput.Spread),
// a job with -n starts with its ranks sized from its nodes' free CPUs as
// Slurm sizes them (-n 5 on 2 idle 16-CPU nodes: 4 and 1), and the FSM
// records the layout; before, the request's even layout (3 and 2) and no
// recorded counts, as older replicas apply it.
func TestPassSpread(t *testing.T) {
	for _, tc := range []struct {
		spread bool
		tasks  []int // Placement.Tasks
		layout []int // the job's ranks per node once started
	}{
		{true, []int{4, 1}, []int{4, 1}},
		{false, []int{0, 0}, []int{3, 2}},
	} {
		h := &harness{s: fsm.New(), now: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
		for _, name := range []string{"n1", "n2"} {
			n := cluster.Node{Name: name, APIAddr: "127.0.0.1:7000", CPUs: 16,
				Topology: cluster.Topology{Switch: "leaf0", SwitchParent: "spine0"}}
			if r, err := h.apply(fsm.CmdUpsertNode, fsm.UpsertNode{Node: n, Time: h.now}); err != nil || r.Err != nil {
				t.Fatalf("node %s: %v %v", name, err, r.Err)
			}
		}
		sp := cluster.Spec{Name: "train", Command: []string{"true"}, User: "ada", UID: 1000, GID: 1000,
			Request: cluster.Request{Nodes: 2, NTasks: 5, TasksPerNode: 3}.WithDefaults()}
		if r, err := h.apply(fsm.CmdSubmitJob, fsm.SubmitJob{RequestID: "s", Spec: sp}); err != nil || r.Err != nil {
			t.Fatalf("submit: %v %v", err, r.Err)
		}
		p, err := Pass(PassInput{View: h.s.View(), Now: h.now, Elastic: true, Spread: tc.spread})
		if err != nil || len(p.Allocations) != 1 {
			t.Fatalf("spread %v: Pass() = %+v, %v; want the job placed", tc.spread, p.Allocations, err)
		}
		var tasks []int
		for _, pl := range p.Allocations[0].Nodes {
			tasks = append(tasks, pl.Tasks)
		}
		if !slices.Equal(tasks, tc.tasks) {
			t.Errorf("spread %v: tasks %v; want %v", tc.spread, tasks, tc.tasks)
		}
		r, err := h.apply(fsm.CmdAllocate, fsm.Allocate{Time: h.now, Consumable: true, Decisions: p.Allocations})
		if err != nil || len(r.Rejected) != 0 {
			t.Fatalf("spread %v: allocate %v %+v", tc.spread, err, r.Rejected)
		}
		j, _ := h.s.View().Job(1)
		if got := j.Spec.Request.TaskCountsIn(*j.Alloc); !slices.Equal(got, tc.layout) {
			t.Errorf("spread %v: the job runs %v a node; want %v", tc.spread, got, tc.layout)
		}
	}
}
