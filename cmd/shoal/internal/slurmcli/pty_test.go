package slurmcli

import (
	"testing"

	"github.com/shoal-sched/shoal/slurm"
)

func TestPtyStepSpec(t *testing.T) {
	for _, tc := range []struct {
		args                 []string
		nodes, ntasks, perNd int
	}{
		{[]string{"--pty"}, 1, 1, 0},
		{[]string{"--pty", "-N2"}, 2, 0, 0},
		{[]string{"--pty", "-n3"}, 0, 3, 0},
		{[]string{"--pty", "--ntasks-per-node=2"}, 0, 0, 2},
	} {
		opts, _, err := slurm.ParseArgs(slurm.Srun, append(tc.args, "bash"))
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if !opts.Pty {
			t.Fatalf("%v: Pty not set", tc.args)
		}
		spec, err := ptyStepSpec(opts, []string{"bash"})
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if !spec.Pty || spec.Nodes != tc.nodes || spec.NTasks != tc.ntasks || spec.TasksPerNode != tc.perNd {
			t.Errorf("%v: nodes %d ntasks %d per node %d pty %v; want %d %d %d true",
				tc.args, spec.Nodes, spec.NTasks, spec.TasksPerNode, spec.Pty, tc.nodes, tc.ntasks, tc.perNd)
		}
	}
}
