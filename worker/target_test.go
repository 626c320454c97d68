package worker

import (
	"errors"
	"testing"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
)

// TestPtyTarget: srun --pty attaches to rank 0 of the job's own task or
// of its step, only while it runs with a terminal.
func TestPtyTarget(t *testing.T) {
	alloc := cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: "n1"}, {Node: "n2"}}}
	job := func(state cluster.JobState, pty bool, steps ...cluster.Step) *cluster.Job {
		return &cluster.Job{ID: 7, Incarnation: 2, State: state, Alloc: &alloc,
			Spec: cluster.Spec{Command: []string{"bash"}, Pty: pty}, Steps: steps}
	}
	step := func(id int, pty bool, state cluster.StepState, nodes ...cluster.StepNode) cluster.Step {
		return cluster.Step{ID: id, Incarnation: 2, Spec: cluster.StepSpec{Command: []string{"bash"}, Pty: pty}, State: state, Nodes: nodes}
	}
	// A step on n2 then n1: rank 0 is on n2.
	second := []cluster.StepNode{{Node: "n2", FirstRank: 0, Tasks: 1}, {Node: "n1", FirstRank: 1, Tasks: 1}}
	for _, tc := range []struct {
		name     string
		j        *cluster.Job
		step     int
		node     string
		wantKind error
	}{
		{"own task on the first node", job(cluster.JobRunning, true), task.NoStep, "n1", nil},
		{"own task pending", job(cluster.JobPending, true), task.NoStep, "", cluster.ErrUnavailable},
		{"own task without a terminal", job(cluster.JobRunning, false), task.NoStep, "", cluster.ErrInvalid},
		{"step's rank 0", job(cluster.JobRunning, false, step(0, true, cluster.StepRunning, second...)), 0, "n2", nil},
		{"step without a terminal", job(cluster.JobRunning, false, step(0, false, cluster.StepRunning, second...)), 0, "", cluster.ErrInvalid},
		{"step ended", job(cluster.JobRunning, false, step(0, true, cluster.StepCompleted, second...)), 0, "", cluster.ErrConflict},
		{"no such step", job(cluster.JobRunning, false), 3, "", cluster.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node, key, err := PtyTarget(tc.j, tc.step)
			if tc.wantKind != nil {
				if !errors.Is(err, tc.wantKind) {
					t.Fatalf("err = %v, want %v", err, tc.wantKind)
				}
				return
			}
			if err != nil || node != tc.node || key != (task.Key{Job: 7, Incarnation: 2, Step: tc.step}) {
				t.Fatalf("= %q %v %v, want %q", node, key, err, tc.node)
			}
		})
	}
}

// TestStdinTarget: srun's stdin goes to the running tasks on a node that
// reads it, of the job or of a running step (its own incarnation).
func TestStdinTarget(t *testing.T) {
	job := func(state cluster.JobState, steps ...cluster.Step) *cluster.Job {
		return &cluster.Job{ID: 7, Incarnation: 2, State: state, Alloc: &cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: "n1"}, {Node: "n2"}}},
			Spec: cluster.Spec{Command: []string{"cat"}, Stdin: "all"}, Steps: steps}
	}
	step := func(state cluster.StepState, inc uint64) cluster.Step {
		return cluster.Step{ID: 1, Incarnation: inc, Spec: cluster.StepSpec{Command: []string{"cat"}, Stdin: "all"}, State: state,
			Nodes: []cluster.StepNode{{Node: "n2", FirstRank: 0, Tasks: 1}}}
	}
	for _, tc := range []struct {
		name     string
		j        *cluster.Job
		step     int
		node     string
		inc      uint64
		wantKind error
	}{
		{"own task", job(cluster.JobRunning), task.NoStep, "n1", 2, nil},
		{"own task, pending", job(cluster.JobPending), task.NoStep, "n1", 0, cluster.ErrUnavailable},
		{"own task, ended", job(cluster.JobCompleted), task.NoStep, "n1", 0, cluster.ErrConflict},
		{"a step's, its incarnation", job(cluster.JobRunning, step(cluster.StepRunning, 3)), 1, "n2", 3, nil},
		{"a step's, the job's incarnation", job(cluster.JobRunning, step(cluster.StepRunning, 0)), 1, "n2", 2, nil},
		{"a step ended", job(cluster.JobRunning, step(cluster.StepCompleted, 3)), 1, "n2", 0, cluster.ErrConflict},
		{"no such step", job(cluster.JobRunning), 4, "n2", 0, cluster.ErrNotFound},
		{"a node that reads none", job(cluster.JobRunning, step(cluster.StepRunning, 3)), 1, "n1", 0, cluster.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, err := StdinTarget(tc.j, tc.step, tc.node)
			if tc.wantKind != nil {
				if !errors.Is(err, tc.wantKind) {
					t.Fatalf("StdinTarget = %v, %v; want %v", key, err, tc.wantKind)
				}
				return
			}
			if err != nil || key != (task.Key{Job: 7, Incarnation: tc.inc, Step: tc.step}) {
				t.Fatalf("StdinTarget = %v, %v; want incarnation %d", key, err, tc.inc)
			}
		})
	}
}

// TestPMIxTarget: a PMIx step's fences are on its first node while it
// runs.
func TestPMIxTarget(t *testing.T) {
	job := func(steps ...cluster.Step) *cluster.Job {
		return &cluster.Job{ID: 7, Incarnation: 2, State: cluster.JobRunning, Steps: steps}
	}
	step := func(state cluster.StepState, nodes ...string) cluster.Step {
		st := cluster.Step{ID: 1, Incarnation: 3, State: state}
		for _, n := range nodes {
			st.Nodes = append(st.Nodes, cluster.StepNode{Node: n, Tasks: 1})
		}
		return st
	}
	for _, tc := range []struct {
		name     string
		j        *cluster.Job
		node     string
		wantKind error
	}{
		{"running", job(step(cluster.StepRunning, "n2", "n1")), "n2", nil},
		{"ended", job(step(cluster.StepCompleted, "n2")), "", cluster.ErrConflict},
		{"no nodes", job(step(cluster.StepRunning)), "", cluster.ErrConflict},
		{"no such step", job(), "", cluster.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node, key, err := PMIxTarget(tc.j, 1)
			if tc.wantKind != nil {
				if !errors.Is(err, tc.wantKind) {
					t.Fatalf("PMIxTarget = %q, %v; want %v", node, err, tc.wantKind)
				}
				return
			}
			if err != nil || node != tc.node || key != (task.Key{Job: 7, Incarnation: 3, Step: 1}) {
				t.Fatalf("PMIxTarget = %q %v %v; want %q", node, key, err, tc.node)
			}
		})
	}
}
