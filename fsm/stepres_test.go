package fsm

import (
	"errors"
	"reflect"
	"testing"

	"github.com/shoal-sched/shoal/cluster"
)

// TestStepHolds: what an Exclusive step takes on its nodes, given what
// the job's live steps hold.
func TestStepHolds(t *testing.T) {
	job := func(cpt int, steps ...cluster.Step) *cluster.Job {
		return &cluster.Job{
			Spec: cluster.Spec{Request: cluster.Request{Nodes: 2, GPUsPerNode: 2, CPUsPerTask: cpt}},
			Alloc: &cluster.Allocation{Nodes: []cluster.NodeAlloc{
				{Node: "n1", GPUs: []int{2, 3}, CPUs: []int{4, 5, 6, 7}},
				{Node: "n2", GPUs: []int{0, 1}, CPUs: []int{0, 1, 2, 3}},
			}},
			Steps: steps,
		}
	}
	holding := func(state cluster.TaskState, node string, gpus, cpus []int) cluster.Step {
		return cluster.Step{Spec: cluster.StepSpec{Exclusive: true}, Nodes: []cluster.StepNode{{Node: node, State: state, GPUs: gpus, CPUs: cpus}}}
	}
	for _, tc := range []struct {
		name       string
		j          *cluster.Job
		sp         cluster.StepSpec
		at, tasks  []int
		gpus, cpus [][]int
		err        error
	}{
		{name: "nothing asked: all the job's on each node", j: job(0), sp: cluster.StepSpec{}, at: []int{0, 1}, tasks: []int{1, 1},
			gpus: [][]int{{2, 3}, {0, 1}}, cpus: [][]int{{4, 5, 6, 7}, {0, 1, 2, 3}}},
		{name: "--gpus=3 over two nodes: 2 and 1; --exact -n2: a CPU a task", j: job(0), sp: cluster.StepSpec{GPUs: 3, Exact: true},
			at: []int{0, 1}, tasks: []int{1, 1}, gpus: [][]int{{2, 3}, {0}}, cpus: [][]int{{4}, {0}}},
		{name: "the lowest free, past a live step's", j: job(0, holding(cluster.TaskRunning, "n1", []int{2}, []int{4, 5})),
			sp: cluster.StepSpec{GPUs: 1, Exact: true}, at: []int{0}, tasks: []int{2}, gpus: [][]int{{3}}, cpus: [][]int{{6, 7}}},
		{name: "an ended step's are free", j: job(0, holding(cluster.TaskExited, "n1", []int{2, 3}, []int{4, 5, 6, 7})),
			sp: cluster.StepSpec{}, at: []int{0}, tasks: []int{1}, gpus: [][]int{{2, 3}}, cpus: [][]int{{4, 5, 6, 7}}},
		{name: "the job's -c, or the step's", j: job(2), sp: cluster.StepSpec{GPUsPerTask: 1, CPUsPerTask: 1}, at: []int{1}, tasks: []int{2},
			gpus: [][]int{{0, 1}}, cpus: [][]int{{0, 1}}},
		{name: "--gres=gpu:1 on each node", j: job(0), sp: cluster.StepSpec{GPUsPerNode: 1, Exact: true}, at: []int{0, 1}, tasks: []int{1, 1},
			gpus: [][]int{{2}, {0}}, cpus: [][]int{{4}, {0}}},
		{name: "busy GPU", j: job(0, holding(cluster.TaskAssigned, "n2", []int{0, 1}, nil)), sp: cluster.StepSpec{GPUs: 1, Exact: true},
			at: []int{1}, tasks: []int{1}, err: ErrStepBusy},
		{name: "busy CPUs without --exact", j: job(0, holding(cluster.TaskRunning, "n1", nil, []int{7})), sp: cluster.StepSpec{},
			at: []int{0}, tasks: []int{1}, err: ErrStepBusy},
		{name: "more GPUs than the job holds", j: job(0), sp: cluster.StepSpec{GPUs: 5}, at: []int{0, 1}, tasks: []int{1, 1}, err: ErrStepGres},
		{name: "more CPUs than the job holds", j: job(0), sp: cluster.StepSpec{Exact: true}, at: []int{0}, tasks: []int{5}, err: ErrStepCPUs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gpus, cpus, err := stepHolds(tc.j, tc.sp, tc.at, tc.tasks)
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("stepHolds: %v; want %v", err, tc.err)
			}
			if !reflect.DeepEqual(gpus, tc.gpus) || !reflect.DeepEqual(cpus, tc.cpus) {
				t.Errorf("stepHolds = gpus %v cpus %v; want %v %v", gpus, cpus, tc.gpus, tc.cpus)
			}
		})
	}
}
