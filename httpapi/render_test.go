package httpapi

import (
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

func TestNodeState(t *testing.T) {
	up := &cluster.Node{Status: cluster.NodeUp}
	tests := []struct {
		name string
		node *cluster.Node
		free int
		busy bool
		want string
	}{
		{"idle", up, 8, false, "IDLE"},
		{"mixed", up, 4, true, "MIXED"},
		{"allocated", up, 0, true, "ALLOCATED"},
		{"cpu job on a gpu-less node", up, 0, true, "ALLOCATED"},
		{"down", &cluster.Node{Status: cluster.NodeDown}, 8, false, "DOWN"},
		{"left", &cluster.Node{Status: cluster.NodeLeft}, 8, false, "DOWN"},
		{"drain", &cluster.Node{Status: cluster.NodeUp, Drain: true}, 8, true, "DRAIN"},
	}
	for _, tc := range tests {
		if got := NodeState(tc.node, tc.free, tc.busy); got != tc.want {
			t.Errorf("%s: nodeState = %s; want %s", tc.name, got, tc.want)
		}
	}
}

func TestJobOf(t *testing.T) {
	at := time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)
	j := &cluster.Job{
		ID: 7, State: cluster.JobRunning, SubmitTime: at, StartTime: at.Add(time.Second), Incarnation: 1,
		Spec: cluster.Spec{Name: "train", User: "ada", Command: []string{"python", "t.py"},
			Request: cluster.Request{Nodes: 2, GPUsPerNode: 2, TasksPerNode: 1, CPUsPerTask: 1, TimeLimit: 90 * time.Second}},
		Alloc: &cluster.Allocation{MasterPort: 29500, Nodes: []cluster.NodeAlloc{
			{Node: "n2", GPUs: []int{0, 1}, State: cluster.TaskRunning},
			{Node: "n1", GPUs: []int{2, 3}, State: cluster.TaskAssigned},
		}},
	}
	got := JobOf(j)
	if got.ID != 7 || got.State != "RUNNING" || got.User != "ada" || got.Name != "train" {
		t.Errorf("jobOf identity = %+v", got)
	}
	if strings.Join(got.Nodes, ",") != "n2,n1" {
		t.Errorf("nodes = %v; want rank order n2,n1", got.Nodes)
	}
	if len(got.GPUs["n1"]) != 2 || got.GPUs["n1"][0] != 2 {
		t.Errorf("gpus = %v", got.GPUs)
	}
	if got.SubmitTime != "2026-11-22T01:02:03Z" || got.StartTime != "2026-11-22T01:02:04Z" || got.EndTime != "" {
		t.Errorf("times = %q %q %q; want RFC 3339 and empty end", got.SubmitTime, got.StartTime, got.EndTime)
	}
	if got.TimeLimitS != 90 || got.MasterPort != 29500 || len(got.Tasks) != 2 {
		t.Errorf("details = %+v", got)
	}
	// A pending job renders empty arrays, not null, in its contract fields.
	p := JobOf(&cluster.Job{ID: 1, State: cluster.JobPending})
	if p.Nodes == nil || p.GPUs == nil || p.Tasks == nil {
		t.Errorf("pending job has nil collections: %+v", p)
	}
}

// An elastic job shows the nodes it has now (not one it lost), every
// node of its run in Tasks, and its resize history.
func TestJobOfElastic(t *testing.T) {
	at := time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)
	j := &cluster.Job{
		ID: 8, State: cluster.JobRunning, StartTime: at, Incarnation: 1,
		Spec: cluster.Spec{Command: []string{"torchrun"}, Request: cluster.Request{Nodes: 2, NodesMax: 3, GPUsPerNode: 1}},
		Alloc: &cluster.Allocation{Elastic: true, Nodes: []cluster.NodeAlloc{
			{Node: "n1", GPUs: []int{0}, State: cluster.TaskRunning},
			{Node: "n2", GPUs: []int{0}, State: cluster.TaskLost, Released: true},
			{Node: "n3", GPUs: []int{0}, State: cluster.TaskRunning},
		}, Resizes: []cluster.Resize{
			{Time: at.Add(time.Minute), Cause: cluster.ResizeGrow, Node: "n3", Nodes: 3},
			{Time: at.Add(2 * time.Minute), Cause: cluster.ResizeShrink, Node: "n2", Nodes: 2},
		}},
	}
	got := JobOf(j)
	if strings.Join(got.Nodes, ",") != "n1,n3" || got.NumNodes != 2 || !got.Elastic {
		t.Errorf("nodes %v, num_nodes %d, elastic %v; want n1,n3, 2, true", got.Nodes, got.NumNodes, got.Elastic)
	}
	if _, ok := got.GPUs["n2"]; ok || len(got.Tasks) != 3 {
		t.Errorf("gpus %v, %d tasks; want no GPUs on the lost node, its task kept", got.GPUs, len(got.Tasks))
	}
	if len(got.Resizes) != 2 || got.Resizes[1].Cause != "shrink" || got.Resizes[1].Node != "n2" ||
		got.Resizes[1].NumNodes != 2 || got.Resizes[0].Time != "2026-11-22T01:03:03Z" {
		t.Errorf("resizes = %+v", got.Resizes)
	}
}
