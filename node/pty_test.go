package node

import (
	"errors"
	"testing"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
)

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
			node, key, err := ptyTarget(tc.j, tc.step)
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
