package pmi2

import (
	"maps"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
)

// TestProcessMapping: MPICH's "(vector,(START,NODES,PPN),...)" for the
// layouts srun makes: blocks even and uneven, cyclic, and arbitrary.
func TestProcessMapping(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ranks [][]int
		want  string
		err   string
	}{
		{name: "one rank", ranks: [][]int{{0}}, want: "(vector,(0,1,1))"},
		{name: "block", ranks: [][]int{{0, 1}, {2, 3}}, want: "(vector,(0,2,2))"},
		{name: "block of 4 nodes", ranks: [][]int{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9, 10, 11}}, want: "(vector,(0,4,3))"},
		{name: "uneven block, -n 5 on 2 nodes", ranks: [][]int{{0, 1, 2}, {3, 4}}, want: "(vector,(0,1,3),(1,1,2))"},
		{name: "uneven block, 3 3 2", ranks: [][]int{{0, 1, 2}, {3, 4, 5}, {6, 7}}, want: "(vector,(0,2,3),(2,1,2))"},
		{name: "uneven block, 2 3 3", ranks: [][]int{{0, 1}, {2, 3, 4}, {5, 6, 7}}, want: "(vector,(0,1,2),(1,2,3))"},
		{name: "cyclic", ranks: [][]int{{0, 2}, {1, 3}}, want: "(vector,(0,2,1),(0,2,1))"},
		{name: "cyclic uneven", ranks: [][]int{{0, 2, 4}, {1, 3}}, want: "(vector,(0,2,1),(0,2,1),(0,1,1))"},
		{name: "plane=2", ranks: [][]int{{0, 1, 4, 5}, {2, 3, 6, 7}}, want: "(vector,(0,2,2),(0,2,2))"},
		{name: "arbitrary", ranks: [][]int{{1}, {0, 2}}, want: "(vector,(1,1,1),(0,2,1))"},
		{name: "a rank twice", ranks: [][]int{{0, 1}, {1}}, err: "each once"},
		{name: "a rank out of range", ranks: [][]int{{0, 5}}, err: "each once"},
	} {
		got, err := ProcessMapping(tc.ranks)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %q, %v; want an error with %q", tc.name, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// TestKVSBlob: a node's puts encode canonically (the same whatever the
// order of the puts), and nodes' blobs concatenated decode as one, the
// later node winning a key given twice.
func TestKVSBlob(t *testing.T) {
	a := encodeKVS(map[string]string{"b": "2", "a": "1", "": "empty key", "v": ""})
	if again := encodeKVS(map[string]string{"v": "", "": "empty key", "a": "1", "b": "2"}); string(a) != string(again) {
		t.Errorf("encodeKVS not canonical: %q, %q", a, again)
	}
	b := encodeKVS(map[string]string{"a": "node1", "c": strings.Repeat("x", 300)})
	got := map[string]string{"old": "kept"}
	if err := decodeKVS(append(append([]byte{}, a...), b...), got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"old": "kept", "": "empty key", "a": "node1", "b": "2", "v": "", "c": strings.Repeat("x", 300)}
	if !maps.Equal(got, want) {
		t.Errorf("decoded %q; want %q", got, want)
	}
	for _, bad := range [][]byte{{5, 'a'}, {1, 'a'}, {1, 'a', 9, 'x'}, {0x80}} {
		if err := decodeKVS(bad, map[string]string{}); err == nil {
			t.Errorf("decodeKVS(%q): no error", bad)
		}
	}
}

// TestWanted: a step whose environment (the job's under the step's)
// names pmi2 is served PMI-2; PMIx types, none, and a job's own task are
// not.
func TestWanted(t *testing.T) {
	step := func(jobEnv, stepEnv []string) task.Launch {
		return task.Launch{Spec: cluster.Spec{Env: jobEnv}, Step: &cluster.Step{Spec: cluster.StepSpec{Env: stepEnv}}}
	}
	for _, tc := range []struct {
		name string
		l    task.Launch
		want bool
	}{
		{"srun --mpi=pmi2", step(nil, []string{"SLURM_MPI_TYPE=pmi2"}), true},
		{"exported by the job", step([]string{"SLURM_MPI_TYPE=PMI2"}, nil), true},
		{"the step's wins", step([]string{"SLURM_MPI_TYPE=pmi2"}, []string{"SLURM_MPI_TYPE=none"}), false},
		{"pmix", step(nil, []string{"SLURM_MPI_TYPE=pmix"}), false},
		{"none given", step(nil, nil), false},
		{"a job's own task", task.Launch{Spec: cluster.Spec{Env: []string{"SLURM_MPI_TYPE=pmi2"}}}, false},
	} {
		if got := Wanted(tc.l); got != tc.want {
			t.Errorf("%s: Wanted = %v; want %v", tc.name, got, tc.want)
		}
	}
}
