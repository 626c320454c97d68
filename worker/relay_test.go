package worker

import (
	"errors"
	"testing"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
)

// TestRelayJob: a relayed request finds its job, for its owner or root; a
// job this view lacks is not found, or, asked by a peer, unavailable.
func TestRelayJob(t *testing.T) {
	j := &cluster.Job{ID: 3, State: cluster.JobRunning, Spec: cluster.Spec{User: "ada", UID: 1000}}
	v := fsm.PartialView(5, []*cluster.Job{j}, nil, nil, nil, nil)
	tests := []struct {
		name      string
		id        cluster.JobID
		uid       int
		forwarded bool
		kind      error
	}{
		{"the owner", 3, 1000, false, nil},
		{"root", 3, 0, true, nil},
		{"another user", 3, 2000, false, cluster.ErrForbidden},
		{"a job not here", 4, 0, false, cluster.ErrNotFound},
		{"a job not here yet, asked by a peer", 4, 0, true, cluster.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RelayJob(v, tt.id, "attach to", cluster.Identity{UID: tt.uid}, tt.forwarded)
			if tt.kind != nil {
				if !errors.Is(err, tt.kind) {
					t.Errorf("err = %v; want %v", err, tt.kind)
				}
				return
			}
			if err != nil || got != j {
				t.Errorf("RelayJob = %v, %v; want job 3", got, err)
			}
		})
	}
}

// TestBcastHere: an sbcast copy is written on the node it names, relayed
// there from another, refused for a job not running or a node not its.
func TestBcastHere(t *testing.T) {
	running := &cluster.Job{ID: 3, State: cluster.JobRunning, Alloc: &cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: "n1"}, {Node: "n2"}}}}
	pending := &cluster.Job{ID: 4, State: cluster.JobPending}
	tests := []struct {
		name       string
		j          *cluster.Job
		node, self string
		forwarded  bool
		here       bool
		kind       error
	}{
		{"here", running, "n1", "n1", false, true, nil},
		{"here, relayed by a peer", running, "n1", "n1", true, true, nil},
		{"relayed to its node", running, "n2", "n1", false, false, nil},
		{"a peer's relay to the wrong node", running, "n2", "n1", true, false, cluster.ErrUnavailable},
		{"a node not the job's", running, "n9", "n1", false, false, cluster.ErrInvalid},
		{"a job not running", pending, "n1", "n1", false, false, cluster.ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			here, err := BcastHere(tt.j, tt.node, tt.self, tt.forwarded)
			if here != tt.here || (tt.kind == nil) != (err == nil) || (tt.kind != nil && !errors.Is(err, tt.kind)) {
				t.Errorf("BcastHere = %v, %v; want %v, %v", here, err, tt.here, tt.kind)
			}
		})
	}
}
