package slurmcli

import (
	"testing"

	"github.com/shoal-sched/shoal/slurm"
)

// TestPreserveEnv: srun -E counts nodes and tasks from SLURM_NNODES and
// SLURM_NTASKS where the command line does not; without -E, or with the
// counts given, the environment changes nothing.
func TestPreserveEnv(t *testing.T) {
	env := map[string]string{"SLURM_NNODES": "2", "SLURM_NTASKS": "5"}
	getenv := func(k string) string { return env[k] }
	for _, tt := range []struct {
		args          []string
		nodes, ntasks int
	}{
		{[]string{"-E", "x"}, 2, 5},
		{[]string{"x"}, 0, 0},
		{[]string{"-E", "-N1", "x"}, 1, 5},
		{[]string{"-E", "-n3", "x"}, 2, 3},
		{[]string{"-E", "--ntasks-per-node=2", "x"}, 2, 0},
	} {
		opts, _, err := slurm.ParseArgs(slurm.Srun, tt.args)
		if err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		preserveEnv(&opts, getenv)
		if opts.Nodes.Min != tt.nodes || opts.NTasks != tt.ntasks {
			t.Errorf("%q: nodes %d ntasks %d; want %d and %d", tt.args, opts.Nodes.Min, opts.NTasks, tt.nodes, tt.ntasks)
		}
	}
}
