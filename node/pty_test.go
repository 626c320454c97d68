package node

import (
	"errors"
	"net"
	"testing"
	"time"

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

// The agent's shutdown ends the relays in progress, and refuses new ones.
func TestRelaysCloseAll(t *testing.T) {
	var r relays
	x1, x2 := net.Pipe()
	y1, y2 := net.Pipe()
	defer x2.Close()
	defer y2.Close()
	done := make(chan struct{})
	remove, ok := r.add(closers{x1, y1})
	if !ok {
		t.Fatal("add before shutdown refused")
	}
	go func() {
		defer close(done)
		relay(x1, y1)
		remove()
	}()
	r.closeAll()
	select { // relay returns once both ends are closed
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("relay still running after closeAll")
	}
	if _, ok := r.add(closers{x2, y2}); ok {
		t.Fatal("add after shutdown accepted")
	}
	if len(r.open) != 0 {
		t.Fatalf("%d relays still recorded", len(r.open))
	}
}
