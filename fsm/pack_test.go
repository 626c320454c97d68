package fsm

import (
	"slices"
	"testing"

	"github.com/shoal-sched/shoal/cluster"
)

// TestPackedJobSteps: a packed job (-n5 -N2: 4 and 1) lays its steps out
// over its shares, as Slurm's steps fill their job's CPUs: srun -n 4 runs
// 3 and 1, srun alone the job's 4 and 1; Pack needs protocol 4.
func TestPackedJobSteps(t *testing.T) {
	h := newHarness()
	withNodes("n1", "n2")(t, h)
	sp := spec(2, 0)
	sp.Request.NTasks, sp.Request.TasksPerNode, sp.Request.Pack = 5, 4, true
	h.must(t, CmdSubmitJob, SubmitJob{RequestID: "p", Spec: sp})
	if need := Needs(CmdSubmitJob, SubmitJob{Spec: sp}); need != 4 {
		t.Errorf("Needs(packed submit) = %d; want 4", need)
	}
	if r := h.must(t, CmdAllocate, Allocate{Decisions: []Decision{place(1, "n1", []int{}, "n2", []int{})}}); len(r.Rejected) != 0 {
		t.Fatalf("allocate rejected %v", r.Rejected)
	}
	for _, tc := range []struct {
		ntasks int
		want   []cluster.StepNode
		caps   []int
	}{
		{4, []cluster.StepNode{{Node: "n1", FirstRank: 0, Tasks: 3}, {Node: "n2", FirstRank: 3, Tasks: 1}}, []int{4, 1}},
		{0, []cluster.StepNode{{Node: "n1", FirstRank: 0, Tasks: 4}, {Node: "n2", FirstRank: 4, Tasks: 1}}, []int{4, 1}},
		{1, []cluster.StepNode{{Node: "n1", FirstRank: 0, Tasks: 1}}, []int{4}},
	} {
		c := stepCmd(1, 1, 0, 0)
		c.Spec.NTasks = tc.ntasks
		r := h.must(t, CmdStartStep, c)
		st := step(t, h.s.View(), 1, r.StepID)
		var got []cluster.StepNode
		for _, n := range st.Nodes {
			got = append(got, cluster.StepNode{Node: n.Node, FirstRank: n.FirstRank, Tasks: n.Tasks})
		}
		if !slices.Equal(got, tc.want) || !slices.Equal(st.Spec.Caps, tc.caps) {
			t.Errorf("srun -n %d: nodes %+v caps %v; want %+v caps %v", tc.ntasks, got, st.Spec.Caps, tc.want, tc.caps)
		}
		for i, n := range st.Nodes {
			if r := st.Spec.RankAt(i, n.Tasks-1); r != n.FirstRank+n.Tasks-1 {
				t.Errorf("srun -n %d: RankAt(%d, last) = %d; want %d", tc.ntasks, i, r, n.FirstRank+n.Tasks-1)
			}
		}
	}
	// A snapshot with them restores (its checks recompute the layout).
	if err := h.s.Restore(mustSnapshot(t, h.s)); err != nil {
		t.Fatal(err)
	}
}

// TestStepNTasksPerGPU: srun --ntasks-per-gpu=K without -n runs K tasks
// for each of the job's GPUs on the step's nodes; it needs protocol 4, a
// job with GPUs, and no tasks per node.
func TestStepNTasksPerGPU(t *testing.T) {
	h := newHarness()
	withRunning(t, h) // job 1: 2 nodes x 2 GPUs
	c := stepCmd(1, 1, 0, 0)
	c.Spec.NTasksPerGPU = 2
	if need := Needs(CmdStartStep, c); need != 4 {
		t.Errorf("Needs = %d; want 4", need)
	}
	r := h.must(t, CmdStartStep, c)
	st := step(t, h.s.View(), 1, r.StepID)
	if st.Spec.NTasks != 8 || len(st.Nodes) != 2 || st.Nodes[0].Tasks != 4 || st.Nodes[1].FirstRank != 4 {
		t.Errorf("spec %+v nodes %+v; want 8 tasks, 4 per node", st.Spec, st.Nodes)
	}
	c.Spec.TasksPerNode = 1
	if r := h.apply(t, CmdStartStep, c); r.Err == nil {
		t.Error("ntasks_per_gpu with tasks_per_node: accepted")
	}
}
