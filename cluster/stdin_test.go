package cluster

import (
	"slices"
	"testing"
)

func TestStdinTakes(t *testing.T) {
	for _, tc := range []struct {
		relay string
		rank  int
		want  bool
	}{
		{"", 0, false}, {StdinAll, 0, true}, {StdinAll, 7, true},
		{"1", 1, true}, {"1", 0, false}, {"x", 0, false},
	} {
		if got := StdinTakes(tc.relay, tc.rank); got != tc.want {
			t.Errorf("StdinTakes(%q, %d) = %v; want %v", tc.relay, tc.rank, got, tc.want)
		}
	}
	for relay, ok := range map[string]bool{"": true, "all": true, "0": true, "12": true, "-1": false, "01": false, "+1": false, "none": false, "ALL": false} {
		if err := ValidateStdin(relay); (err == nil) != ok {
			t.Errorf("ValidateStdin(%q) = %v; want ok %v", relay, err, ok)
		}
	}
}

// StdinNodes: the nodes whose ranks read srun's stdin, for a step laid
// out in blocks or by -n, and for the job's own tasks.
func TestStdinNodes(t *testing.T) {
	j := &Job{ID: 1, State: JobRunning,
		Spec:  Spec{Stdin: "2", Request: Request{Nodes: 2, TasksPerNode: 2}},
		Alloc: &Allocation{Nodes: []NodeAlloc{{Node: "a"}, {Node: "b"}}},
		Steps: []Step{
			{ID: 0, Spec: StepSpec{Stdin: StdinAll}, Nodes: []StepNode{{Node: "a", Tasks: 1}, {Node: "b", FirstRank: 1, Tasks: 1}}},
			{ID: 1, Spec: StepSpec{Stdin: "1"}, Nodes: []StepNode{{Node: "a", Tasks: 2}, {Node: "b", FirstRank: 2, Tasks: 2}}},
			{ID: 2, Spec: StepSpec{Stdin: "1", NTasks: 4, Nodes: 2, TasksPerNode: 2, Distribution: "cyclic"},
				Nodes: []StepNode{{Node: "a", Tasks: 2}, {Node: "b", FirstRank: 2, Tasks: 2}}},
			{ID: 3, Nodes: []StepNode{{Node: "a", Tasks: 1}}},
		},
	}
	for _, tc := range []struct {
		step int
		want []string
	}{{0, []string{"a", "b"}}, {1, []string{"a"}}, {2, []string{"b"}}, {3, nil}, {9, nil}, {-1, []string{"b"}}} {
		if got := j.StdinNodes(tc.step); !slices.Equal(got, tc.want) {
			t.Errorf("StdinNodes(%d) = %v; want %v", tc.step, got, tc.want)
		}
	}
}
