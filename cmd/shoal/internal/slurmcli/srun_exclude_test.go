package slurmcli

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/slurm"
)

// TestExcludeNodes: srun -x for a step picks the job's other nodes, as
// Slurm's step does, and refuses in Slurm's words when too few are left
// or -w names a node -x excludes.
func TestExcludeNodes(t *testing.T) {
	job := []string{"n1", "n2", "n3"}
	for _, tt := range []struct {
		name    string
		sp      cluster.StepSpec
		exclude []string
		want    []string // the step's node list; nil: unchanged
		nodes   int
		err     string
	}{
		{name: "no -x", sp: cluster.StepSpec{}, nodes: 0},
		{name: "all but one", sp: cluster.StepSpec{}, exclude: []string{"n2"}, want: []string{"n1", "n3"}, nodes: 2},
		{name: "-x names a node outside the job", sp: cluster.StepSpec{}, exclude: []string{"n9", "n1"}, want: []string{"n2", "n3"}, nodes: 2},
		{name: "-N1: the first left", sp: cluster.StepSpec{Nodes: 1}, exclude: []string{"n1"}, want: []string{"n2"}, nodes: 1},
		{name: "-n1 alone: one node", sp: cluster.StepSpec{NTasks: 1}, exclude: []string{"n1"}, want: []string{"n2"}, nodes: 1},
		{name: "-n4: every node left", sp: cluster.StepSpec{NTasks: 4}, exclude: []string{"n3"}, want: []string{"n1", "n2"}, nodes: 2},
		{name: "-N3 with one excluded", sp: cluster.StepSpec{Nodes: 3}, exclude: []string{"n1"},
			err: "Requested node configuration is not available (-x n1 leaves 2 of the job's 3 nodes, the step needs 3)"},
		{name: "every node excluded", sp: cluster.StepSpec{}, exclude: []string{"n1", "n2", "n3"},
			err: "Requested node configuration is not available (-x n[1-3] leaves 0 of the job's 3 nodes, the step needs 1)"},
		{name: "-w and -x apart", sp: cluster.StepSpec{NodeList: []string{"n3"}}, exclude: []string{"n1"}, want: []string{"n3"}, nodes: 0},
		{name: "-w and -x overlap", sp: cluster.StepSpec{NodeList: []string{"n2", "n3"}}, exclude: []string{"n3"},
			err: "Requested node configuration is not available (-w n3 is also excluded by -x)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := excludeNodes(tt.sp, job, tt.exclude)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err || !errors.Is(err, errStepNodes) {
					t.Fatalf("excludeNodes(%+v, %q) error %v; want %q", tt.sp, tt.exclude, err, tt.err)
				}
				return
			}
			want := tt.want
			if want == nil {
				want = tt.sp.NodeList
			}
			if err != nil || !slices.Equal(got.NodeList, want) || got.Nodes != tt.nodes {
				t.Errorf("excludeNodes(%+v, %q) = nodes %d %q, %v; want %d %q", tt.sp, tt.exclude, got.Nodes, got.NodeList, err, tt.nodes, want)
			}
		})
	}
}

// TestUpNodes: a node the job lost is not one a step may have.
func TestUpNodes(t *testing.T) {
	j := api.Job{Nodes: []string{"n1", "n2", "n3"}, Tasks: []api.Task{
		{Node: "n1", State: "running"}, {Node: "n2", State: "lost"}, {Node: "n3", State: "assigned"}}}
	if got := upNodes(j); !slices.Equal(got, []string{"n1", "n3"}) {
		t.Errorf("upNodes = %q; want n1 n3", got)
	}
}

// TestStepSpecSignalAndHosts: srun --signal becomes the step's own
// warning, and -w from a file is read as Slurm reads it.
func TestStepSpecSignalAndHosts(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(file, []byte("n[2-3]\nn1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args  string
		sig   *cluster.JobSignal
		nodes []string
	}{
		{args: "--signal=USR1@10", sig: &cluster.JobSignal{Number: 10, Before: 10e9}},
		{args: "--signal=R:TERM", sig: &cluster.JobSignal{Number: 15, Before: 60e9}},
		{args: "-n1"},
		{args: "-w " + file, nodes: []string{"n2", "n3", "n1"}},
	} {
		opts, rest, err := slurm.ParseArgs(slurm.Srun, append(strings.Fields(tt.args), "true"))
		if err != nil {
			t.Fatalf("srun %s: %v", tt.args, err)
		}
		sp, err := stepSpec(opts, rest)
		if err != nil {
			t.Fatalf("stepSpec(srun %s): %v", tt.args, err)
		}
		switch {
		case (sp.Signal == nil) != (tt.sig == nil), sp.Signal != nil && *sp.Signal != *tt.sig:
			t.Errorf("srun %s: step signal %+v; want %+v", tt.args, sp.Signal, tt.sig)
		case !slices.Equal(sp.NodeList, tt.nodes):
			t.Errorf("srun %s: node list %q; want %q", tt.args, sp.NodeList, tt.nodes)
		}
	}
}
