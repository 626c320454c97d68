package slurmcli

import (
	"slices"
	"testing"

	"github.com/shoal-sched/shoal/api"
)

// TestSallocEnvTasks checks the per-node counts salloc exports in Slurm's
// format, which Open MPI's mpirun reads for its slots.
func TestSallocEnvTasks(t *testing.T) {
	tests := []struct {
		name  string
		job   api.Job
		tasks string
		cpus  string
	}{
		{"one node", api.Job{ID: 1, Nodes: []string{"n1"}, TasksPerNode: 1}, "1", "1"},
		{"two nodes, two tasks", api.Job{ID: 2, Nodes: []string{"n1", "n2"}, TasksPerNode: 2}, "2(x2)", "2(x2)"},
		{"cpus per task", api.Job{ID: 3, Nodes: []string{"a1", "a2", "a3"}, TasksPerNode: 2, CPUsPerTask: 4}, "2(x3)", "8(x3)"},
		{"packed -n5", api.Job{ID: 4, Nodes: []string{"n1", "n2"}, TasksPerNode: 4, NTasks: 5, Pack: true}, "4,1", "4,1"},
		{"even -n5", api.Job{ID: 5, Nodes: []string{"n1", "n2"}, TasksPerNode: 3, NTasks: 5}, "3,2", "3,2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := sallocEnv(tt.job)
			for _, want := range []string{"SLURM_TASKS_PER_NODE=" + tt.tasks, "SLURM_JOB_CPUS_PER_NODE=" + tt.cpus} {
				if !slices.Contains(env, want) {
					t.Errorf("env lacks %s: %q", want, env)
				}
			}
		})
	}
}
