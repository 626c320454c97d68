package fsm

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/shoal-sched/shoal/cluster"
)

// packedSpec is -n5 -N2 --ntasks-per-node=4, packed: 4 and 1.
func packedSpec() cluster.Spec {
	sp := spec(2, 0)
	sp.Request.NTasks, sp.Request.TasksPerNode, sp.Request.Pack = 5, 4, true
	return sp
}

// TestPackedJobSteps: a packed job (-n5 -N2: 4 and 1) lays its steps out
// over its shares, as Slurm's steps fill their job's CPUs: srun -n 4 runs
// 3 and 1, srun alone the job's 4 and 1; Pack needs protocol 4.
func TestPackedJobSteps(t *testing.T) {
	h := newHarness()
	withNodes("n1", "n2")(t, h)
	sp := packedSpec()
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
		if !reflect.DeepEqual(got, tc.want) || !slices.Equal(st.Spec.Caps, tc.caps) {
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

// TestDealtSteps: a step asking Dealt (protocol 5) deals its tasks over
// the CPUs its job holds on its nodes, as Slurm's srun does in any
// distribution (slurm/testdata/layout_golden.txt): in a -n5 -N2 job
// holding 4 and 1 CPUs, srun -n5 -m cyclic runs 0,2,3,4 and 1, -m
// plane=2 0,1,3,4 and 2; in a job of 2 CPUs a node, -n4 -m plane=4 runs
// 2 and 2.
func TestDealtSteps(t *testing.T) {
	h := newHarness()
	withNodes("n1", "n2")(t, h)
	sp := packedSpec()
	h.must(t, CmdSubmitJob, SubmitJob{RequestID: "p", Spec: sp})
	even := spec(2, 0)
	even.Request.TasksPerNode = 2
	h.must(t, CmdSubmitJob, SubmitJob{RequestID: "e", Spec: even})
	alloc := func(id cluster.JobID, cpus1, cpus2 []int) Decision {
		return Decision{Job: id, Nodes: []Placement{{Node: "n1", GPUs: []int{}, CPUs: cpus1}, {Node: "n2", GPUs: []int{}, CPUs: cpus2}}}
	}
	r := h.must(t, CmdAllocate, Allocate{Consumable: true, Decisions: []Decision{
		alloc(1, []int{0, 1, 2, 3}, []int{0}), alloc(2, []int{4, 5}, []int{1, 2}),
	}})
	if len(r.Rejected) != 0 {
		t.Fatalf("allocate rejected %v", r.Rejected)
	}
	for _, tc := range []struct {
		job    cluster.JobID
		ntasks int
		dist   string
		caps   []int
		want   string // each node's ranks
	}{
		{1, 5, "cyclic", []int{4, 1}, "[[0 2 3 4] [1]]"},
		{1, 5, "plane=2", []int{4, 1}, "[[0 1 3 4] [2]]"},
		{1, 4, "", []int{4, 1}, "[[0 1 2] [3]]"},
		{1, 0, "", []int{4, 1}, "[[0 1 2 3] [4]]"}, // the job's ranks
		{2, 4, "plane=4", []int{2, 2}, "[[0 1] [2 3]]"},
		{2, 5, "", []int{2, 2}, "[[0 1 2] [3 4]]"},
	} {
		c := stepCmd(tc.job, 1, 0, 0)
		c.Spec.NTasks, c.Spec.Distribution, c.Spec.Dealt = tc.ntasks, tc.dist, true
		if need := Needs(CmdStartStep, c); need != 5 {
			t.Errorf("Needs(dealt step) = %d; want 5", need)
		}
		r := h.must(t, CmdStartStep, c)
		st := step(t, h.s.View(), tc.job, r.StepID)
		var got [][]int
		for i, n := range st.Nodes {
			var ranks []int
			for l := range n.Tasks {
				ranks = append(ranks, st.Spec.RankAt(i, l))
			}
			if n.FirstRank != ranks[0] {
				t.Errorf("job %d srun -n %d -m %q: node %d first rank %d; want %d", tc.job, tc.ntasks, tc.dist, i, n.FirstRank, ranks[0])
			}
			got = append(got, ranks)
		}
		if g := fmt.Sprint(got); g != tc.want || !slices.Equal(st.Spec.Caps, tc.caps) {
			t.Errorf("job %d srun -n %d -m %q: ranks %s caps %v; want %s caps %v", tc.job, tc.ntasks, tc.dist, g, st.Spec.Caps, tc.want, tc.caps)
		}
	}
	if err := h.s.Restore(mustSnapshot(t, h.s)); err != nil {
		t.Fatal(err)
	}
}

// TestAllocateTasks: an allocation may lay a job's ranks out per node
// (Placement.Tasks, protocol 5), as the leader sized them from the CPUs
// free (slurm/testdata/layout_golden.txt: -n5 -N2 with 2 CPUs free on the
// first runs 2 and 3); each node then holds its ranks' CPUs, the FSM
// records the counts, and the job's ranks and steps follow them. Counts
// that do not add up, cover only some nodes, or disagree with the CPUs
// are refused (a decision that is not Consumable drops them with its
// CPUs, as a replayed old entry).
func TestAllocateTasks(t *testing.T) {
	h := newHarness()
	withNodes("n1", "n2")(t, h)
	sp := spec(2, 0)
	sp.Request.NTasks, sp.Request.TasksPerNode = 5, 3
	h.must(t, CmdSubmitJob, SubmitJob{RequestID: "t", Spec: sp})
	tasks := func(t1, t2 int, cpus1, cpus2 []int) Allocate {
		return Allocate{Consumable: true, Decisions: []Decision{{Job: 1, Nodes: []Placement{
			{Node: "n1", GPUs: []int{}, CPUs: cpus1, Tasks: t1}, {Node: "n2", GPUs: []int{}, CPUs: cpus2, Tasks: t2},
		}}}}
	}
	for _, tc := range []struct {
		name string
		c    Allocate
	}{
		{"sum", tasks(2, 2, []int{0, 1}, []int{0, 1})},
		{"some nodes", tasks(5, 0, []int{0, 1, 2, 3, 4}, []int{0})},
		{"cpus", tasks(2, 3, []int{0, 1, 2}, []int{0, 1})},
	} {
		if r := h.apply(t, CmdAllocate, tc.c); len(r.Rejected) != 1 {
			t.Errorf("%s: %+v; want the decision rejected", tc.name, r)
		}
	}
	c := tasks(2, 3, []int{0, 1}, []int{0, 1, 2})
	if need := Needs(CmdAllocate, c); need != 5 {
		t.Errorf("Needs(allocate with tasks) = %d; want 5", need)
	}
	if r := h.must(t, CmdAllocate, c); len(r.Rejected) != 0 {
		t.Fatalf("allocate rejected %v", r.Rejected)
	}
	j, _ := h.s.View().Job(1)
	req := j.Spec.Request
	if got := req.TaskCountsIn(*j.Alloc); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("TaskCountsIn = %v; want [2 3]", got)
	}
	if got := req.RankIn(*j.Alloc, 1, 0); got != 2 {
		t.Errorf("RankIn(node 1, local 0) = %d; want 2", got)
	}
	// srun -n5 -m cyclic in it deals over its CPUs, 2 and 3.
	st := stepCmd(1, 1, 0, 0)
	st.Spec.NTasks, st.Spec.Distribution, st.Spec.Dealt = 5, "cyclic", true
	r := h.must(t, CmdStartStep, st)
	s := step(t, h.s.View(), 1, r.StepID)
	var got [][]int
	for i, n := range s.Nodes {
		var ranks []int
		for l := range n.Tasks {
			ranks = append(ranks, s.Spec.RankAt(i, l))
		}
		got = append(got, ranks)
	}
	if fmt.Sprint(got) != "[[0 2] [1 3 4]]" {
		t.Errorf("srun -n5 -m cyclic: %v; want [[0 2] [1 3 4]]", got)
	}
	if err := h.s.Restore(mustSnapshot(t, h.s)); err != nil {
		t.Fatal(err)
	}
}
