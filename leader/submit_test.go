package leader

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
)

func gpuNode(name string, gpus int) *cluster.Node {
	n := &cluster.Node{Name: name, Status: cluster.NodeUp, CPUs: 16, MemoryMiB: 65536}
	for i := range gpus {
		n.GPUs = append(n.GPUs, cluster.GPU{Index: i, Model: "H100", NUMA: -1})
	}
	return n
}

func gpuSpec(nodes, gpus int, partition string) cluster.Spec {
	r := cluster.Request{Nodes: nodes, GPUsPerNode: gpus, Partition: partition}.WithDefaults()
	return cluster.Spec{Name: "x", Command: []string{"true"}, User: "ada", UID: 1000, GID: 1000, Request: r}
}

// TestCheckSubmit: a submit is refused at once, as invalid and naming
// why, when no node it may use could ever hold it (its partition's nodes
// only), or when the spec or its partition is wrong; nodes not registered
// yet count (DESIGN "The flow of a job": the leader validates before it
// applies).
func TestCheckSubmit(t *testing.T) {
	policy := &cluster.Policy{Partitions: []cluster.Partition{ // by name, as the policy file's parser leaves them
		{Name: "all"},
		{Name: "small", Nodes: []string{"n1"}, Default: true},
	}}
	v := fsm.PartialView(3, nil, []*cluster.Node{gpuNode("n1", 2), gpuNode("n2", 4)}, policy, nil, nil)
	known := append(v.Nodes(), gpuNode("n3", 8)) // n3: alive, not registered yet
	tests := []struct {
		name      string
		spec      cluster.Spec
		partition string // of the spec as recorded
		says      string // "" accepted
	}{
		{"the default partition holds it", gpuSpec(1, 2, ""), "small", ""},
		{"too big for the default partition", gpuSpec(1, 4, ""), "", "partition small: "},
		{"another partition holds it", gpuSpec(1, 4, "all"), "all", ""},
		{"only with a node not registered yet", gpuSpec(1, 8, "all"), "all", ""},
		{"no node could", gpuSpec(1, 16, "all"), "", "gpus_per_node 16"},
		{"no such partition", gpuSpec(1, 1, "big"), "", "big"},
		{"a spec without a command", cluster.Spec{Request: cluster.Request{Nodes: 1}.WithDefaults()}, "", "command: empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CheckSubmit(v, known, tt.spec)
			if tt.says != "" {
				if !errors.Is(err, cluster.ErrInvalid) || !strings.Contains(err.Error(), tt.says) {
					t.Errorf("CheckSubmit = %v; want invalid saying %q", err, tt.says)
				}
				return
			}
			if err != nil || got.Request.Partition != tt.partition {
				t.Errorf("CheckSubmit = partition %q, %v; want %q", got.Request.Partition, err, tt.partition)
			}
		})
	}
	if len(known) != 3 || known[2].Name != "n3" {
		t.Error("CheckSubmit changed the nodes it was given")
	}
}

// TestPlanTestOnly: sbatch --test-only names the job id it would get,
// starts it now on free nodes or at a running job's end, and says when it
// cannot estimate one, without changing the state.
func TestPlanTestOnly(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	nodes := []*cluster.Node{gpuNode("n1", 2)}
	v := fsm.PartialView(3, nil, nodes, nil, nil, nil)
	p, err := PlanTestOnly(v, nodes, gpuSpec(1, 2, ""), now)
	if err != nil || p.Job != 1 || !p.Start.Equal(now) || !slices.Equal(p.Nodes, []string{"n1"}) || p.CPUs != 1 {
		t.Errorf("PlanTestOnly on a free node = %+v, %v; want job 1 now on n1 with 1 CPU", p, err)
	}
	running := &cluster.Job{ID: 7, State: cluster.JobRunning, StartTime: now.Add(-time.Minute), Spec: gpuSpec(1, 2, ""),
		Alloc: &cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: "n1", GPUs: []int{0, 1}}}}}
	running.Spec.Request.TimeLimit = 10 * time.Minute
	busy := fsm.PartialView(9, []*cluster.Job{running}, nodes, nil, nil, nil)
	if p, err := PlanTestOnly(busy, nodes, gpuSpec(1, 2, ""), now); err != nil || !p.Start.Equal(now.Add(9*time.Minute)) {
		t.Errorf("PlanTestOnly behind a job = %+v, %v; want a start at its end %v", p, err, now.Add(9*time.Minute))
	}
	unlimited := *running
	unlimited.Spec.Request.TimeLimit = 0
	never := fsm.PartialView(9, []*cluster.Job{&unlimited}, nodes, nil, nil, nil)
	if p, err := PlanTestOnly(never, nodes, gpuSpec(1, 2, ""), now); !errors.Is(err, cluster.ErrConflict) || p.Job == 0 || len(p.Nodes) != 0 {
		t.Errorf("PlanTestOnly behind an unlimited job = %+v, %v; want a conflict naming the job", p, err)
	}
	if _, err := PlanTestOnly(v, nodes, gpuSpec(1, 4, ""), now); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("PlanTestOnly too big = %v; want invalid", err)
	}
}

// TestSpreadGPUs: -G without -N goes over the fewest nodes that hold it
// evenly; what no split fits stays on one node for the submit check to
// refuse; out of range is refused naming the field.
func TestSpreadGPUs(t *testing.T) {
	tests := []struct {
		g           int
		sizes       []int
		nodes, per  int
		invalidSays string
	}{
		{4, []int{8}, 1, 4, ""},
		{6, []int{4, 4}, 2, 3, ""},
		{6, []int{4, 2, 2}, 3, 2, ""},
		{8, []int{4, 4, 4}, 2, 4, ""},
		{7, []int{4, 4}, 1, 7, ""}, // no even split fits: refused later
		{5, nil, 1, 5, ""},         // no nodes known yet
		{1, []int{0, 0}, 1, 1, ""},
		{-1, []int{4}, 0, 0, "gpus_total -1"},
		{cluster.MaxNodesPerJob*cluster.MaxGPUsPerNode + 1, []int{4}, 0, 0, "gpus_total"},
	}
	for _, tt := range tests {
		nodes, per, err := SpreadGPUs(tt.g, tt.sizes)
		if tt.invalidSays != "" {
			if !errors.Is(err, cluster.ErrInvalid) || !strings.Contains(err.Error(), tt.invalidSays) {
				t.Errorf("SpreadGPUs(%d, %v) err = %v; want invalid saying %q", tt.g, tt.sizes, err, tt.invalidSays)
			}
			continue
		}
		if err != nil || nodes != tt.nodes || per != tt.per {
			t.Errorf("SpreadGPUs(%d, %v) = %d x %d, %v; want %d x %d", tt.g, tt.sizes, nodes, per, err, tt.nodes, tt.per)
		}
	}
}

// TestQueueFields: only root lowers a nice below zero (it raises
// priority); a QoS the policy does not name is a warning, not a refusal.
func TestQueueFields(t *testing.T) {
	policy := &cluster.Policy{QoS: []cluster.QoSLevel{{Name: "high"}}}
	v := fsm.PartialView(1, nil, nil, policy, nil, nil)
	root := Caller{Identity: cluster.Identity{UID: 0, Proven: true}}
	ada := Caller{Identity: cluster.Identity{User: "ada", UID: 1000, Proven: true}}
	tests := []struct {
		name     string
		spec     cluster.Spec
		c        Caller
		warnings int
		refused  bool
	}{
		{"plain", cluster.Spec{}, ada, 0, false},
		{"a positive nice", cluster.Spec{Nice: 100}, ada, 0, false},
		{"a negative nice by a user", cluster.Spec{Nice: -1}, ada, 0, true},
		{"a negative nice by root", cluster.Spec{Nice: -1}, root, 0, false},
		{"a known QoS", cluster.Spec{QoS: "high"}, ada, 0, false},
		{"an unknown QoS", cluster.Spec{QoS: "gold"}, ada, 1, false},
	}
	for _, tt := range tests {
		w, err := QueueFields(v, tt.spec, tt.c)
		if tt.refused {
			if !errors.Is(err, cluster.ErrForbidden) || !strings.Contains(err.Error(), "only root may set a negative nice") {
				t.Errorf("%s: QueueFields = %v; want forbidden", tt.name, err)
			}
			continue
		}
		if err != nil || len(w) != tt.warnings {
			t.Errorf("%s: QueueFields = %q, %v; want %d warnings", tt.name, w, err, tt.warnings)
		}
	}
}
