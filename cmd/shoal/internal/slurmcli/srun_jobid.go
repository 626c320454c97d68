package slurmcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/exitcode"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/request"
	"github.com/shoal-sched/shoal/slurm"
)

// srunInJob is srun --jobid N: a step in running job N's allocation, from
// inside it or from a login shell outside it (to run nvidia-smi or top on
// the job's nodes), streamed like any step. Only the job's owner (or root)
// may; a job that is unknown, pending or ended is refused with Slurm's
// words.
func srunInJob(ctx context.Context, connect Connect, opts slurm.Options, command []string, stdout, stderr io.Writer) (int, error) {
	job := opts.JobID
	request.PrintWarnings("srun", stepHints(opts))
	spec, err := stepSpec(opts, command)
	spec.Stdin = relayedStdin(opts, spec.Stdin)
	if err != nil {
		return 1, err
	}
	c, err := connect()
	if err != nil {
		return 1, err
	}
	// Inside the job's own environment the step belongs to the incarnation
	// that environment is; from outside, to the job's current one (0).
	var inc uint64
	if env, err := slurm.ParseJobID(jobIDEnv()); err == nil && env == job {
		inc, _ = strconv.ParseUint(os.Getenv("SHOAL_INCARNATION"), 10, 64)
	}
	j, err := readJob(ctx, c, job)
	if refusal := stepRefusal(job, j, err); refusal != "" {
		fmt.Fprint(stderr, refusal)
		return 1, exitcode.Code(1)
	}
	if spec, err = stepExclude(ctx, c, job, opts, spec); err != nil {
		return 1, err
	}
	if spec.Command, err = bcastCommand(ctx, c, job, opts, spec.Command, spec.WorkDir); err == nil {
		spec.Command = withTaskHooks(opts, spec.Command)
	}
	if err != nil {
		return 1, err
	}
	return runStep(ctx, c, job, api.StepRequest{Incarnation: inc, Spec: spec, RequestID: request.NewID()}, opts, stdout, stderr, func(err error) (int, error) {
		// Slurm's words; for a refusal, Shoal's reason after them.
		var se *api.StatusError
		if errors.As(err, &se) && se.Code == http.StatusForbidden {
			fmt.Fprintf(stderr, "srun: error: Unable to create step for job %d: Access/permission denied (%s)\n", job, se.Message)
		} else {
			fmt.Fprintf(stderr, "srun: error: Unable to create step for job %d: %v\n", job, err)
		}
		return 1, exitcode.Code(1)
	})
}

// jobIDEnv is the job srun's environment names: SHOAL_JOB_ID, else
// SLURM_JOB_ID ("" outside an allocation).
func jobIDEnv() string {
	if id := os.Getenv("SHOAL_JOB_ID"); id != "" {
		return id
	}
	return os.Getenv("SLURM_JOB_ID")
}

// stepRefusal is what srun prints, as Slurm 22.05 prints it, when job id
// (read as j, or err) cannot take a step: "" when it can (or when the read
// failed for another reason, which starting the step then reports).
func stepRefusal(id uint64, j api.Job, err error) string {
	check := fmt.Sprintf("srun: Check SLURM_JOB_ID environment variable. Expired or invalid job %d\n", id)
	switch {
	case api.IsNotFound(err):
		return fmt.Sprintf("srun: error: Unable to confirm allocation for job %d: Invalid job id specified\n", id) + check
	case err != nil:
		return ""
	case cluster.JobState(j.State).Terminal():
		return fmt.Sprintf("srun: error: Slurm job %d has expired\n", id) + check
	case j.State != string(cluster.JobRunning):
		return fmt.Sprintf("srun: error: Unable to confirm allocation for job %d: Job is pending execution\n", id) + check
	}
	return ""
}
