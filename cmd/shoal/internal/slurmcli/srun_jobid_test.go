package slurmcli

import (
	"errors"
	"net/http"
	"testing"

	"github.com/shoal-sched/shoal/api"
)

// TestStepRefusal: srun --jobid's refusals are Slurm 22.05's lines (taken
// from the peer: srun --jobid on an unknown, a held and an ended job).
func TestStepRefusal(t *testing.T) {
	check := "srun: Check SLURM_JOB_ID environment variable. Expired or invalid job 7\n"
	for _, tc := range []struct {
		name string
		j    api.Job
		err  error
		want string
	}{
		{"unknown", api.Job{}, &api.StatusError{Code: http.StatusNotFound, Message: "job 7: no such job"},
			"srun: error: Unable to confirm allocation for job 7: Invalid job id specified\n" + check},
		{"pending", api.Job{State: "PENDING"}, nil,
			"srun: error: Unable to confirm allocation for job 7: Job is pending execution\n" + check},
		{"completed", api.Job{State: "COMPLETED"}, nil, "srun: error: Slurm job 7 has expired\n" + check},
		{"cancelled", api.Job{State: "CANCELLED"}, nil, "srun: error: Slurm job 7 has expired\n" + check},
		{"running", api.Job{State: "RUNNING"}, nil, ""},
		{"unreachable", api.Job{}, errors.New("connection refused"), ""},
	} {
		if got := stepRefusal(7, tc.j, tc.err); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
