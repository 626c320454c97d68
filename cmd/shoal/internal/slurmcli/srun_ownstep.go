package slurmcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"syscall"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/request"
	"github.com/shoal-sched/shoal/slurm"
)

// needsOwnStep says srun outside an allocation must run its command as a
// step of an allocation of its own, as Slurm's srun always does (job N,
// step N.0): its -o/-e files, its --input file, --bcast and the PMIx
// or PMI-2 server of --mpi=pmix or pmi2 are a step's.
// Without them Shoal runs the command as the job's own tasks (RunOwnJob).
func needsOwnStep(opts slurm.Options) bool {
	return slurm.ServesPMI(opts.MPI) || opts.Output != "" || opts.Error != "" || opts.Set["bcast"] ||
		opts.Set["input"] && slurm.ParseInput(opts.Input, 0).Kind == slurm.InputFile
}

// stepOptsOf is opts as the step of srun's own allocation takes them: what
// chose the allocation (its nodes, constraints, dependencies, signals) is
// the job's, not the step's again.
func stepOptsOf(opts slurm.Options) slurm.Options {
	s := opts
	s.Set = map[string]bool{}
	for k, v := range opts.Set {
		s.Set[k] = v
	}
	for _, name := range []string{"exclude", "constraint", "exclusive", "array", "dependency", "signal", "no-kill", "nodelist"} {
		delete(s.Set, name)
	}
	s.NodeList, s.NodeListFile = nil, ""
	s.Exclude, s.ExcludeFile, s.Signal = nil, "", nil
	return s
}

// runOwnJobAsStep is srun outside an allocation for a command that needs
// a step (needsOwnStep): it allocates as salloc does (a job holding the
// nodes), starts the command there as step 0, follows it as srun inside
// an allocation does, and releases the allocation.
func runOwnJobAsStep(ctx context.Context, connect Connect, opts slurm.Options, command []string, stdout, stderr io.Writer) (int, error) {
	spec, err := stepSpec(stepOptsOf(opts), command)
	if err != nil {
		return 1, err
	}
	spec.Stdin = relayedStdin(opts, spec.Stdin)
	req, warnings, err := request.FromOptions(opts)
	if err != nil {
		return 1, err
	}
	request.PrintWarnings("srun", warnings)
	if req.Name == "" {
		req.Name = spec.Name
	}
	req.Env = nil // the step carries the environment
	c, res, err := submitAllocation(ctx, connect, req, "srun")
	if err != nil {
		return 1, err
	}
	job := res.ID
	defer releaseOwnAllocation(c, job, stderr)

	submitted := time.Now()
	pending := newPendingLine(stderr, job)
	var j api.Job
	for {
		if ctx.Err() != nil {
			pending.done()
			fmt.Fprintf(stderr, "srun: interrupted: job %d cancelled\n", job)
			return 130, nil
		}
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		j, err = c.Job(rctx, job)
		cancel()
		if err == nil {
			pending.show(j)
			if j.State == "RUNNING" {
				break
			}
			if cluster.JobState(j.State).Terminal() {
				pending.done()
				return 1, fmt.Errorf("job %d ended %s (%s) before it was allocated", job, j.State, orNone(j.Reason))
			}
			if immediateExpired(opts.Immediate, submitted, time.Now(), j.State) {
				pending.done()
				return giveUpImmediate(c, "srun", job, stderr), nil
			}
		}
		time.Sleep(srunPoll)
	}
	pending.done()
	if spec.Command, err = bcastCommand(ctx, c, job, opts, spec.Command, spec.WorkDir); err != nil {
		return 1, err
	}
	spec.Command = withTaskHooks(opts, spec.Command)
	step, sreq, err := startStep(ctx, c, job, api.StepRequest{Incarnation: j.Incarnation, Spec: spec, RequestID: request.NewID()}, localInput(opts), stderr)
	if err != nil {
		return 1, fmt.Errorf("start step in job %d: %w", job, err)
	}
	return followStepInput(ctx, c, job, step, stepStdinOf(opts, sreq), followOptsOf(opts), stdout, stderr)
}

// releaseOwnAllocation ends the job holding srun's own allocation, as
// salloc releases its own.
func releaseOwnAllocation(c *api.Client, job uint64, stderr io.Writer) {
	rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Signal(rctx, job, api.SignalRequest{Signal: int(syscall.SIGTERM), BatchOnly: true, RequestID: request.NewID()}); err != nil && !api.IsConflict(err) {
		if _, cerr := c.CancelRef(rctx, strconv.FormatUint(job, 10)); cerr != nil {
			fmt.Fprintf(stderr, "srun: error: release job %d: %v\n", job, errors.Join(err, cerr))
		}
	}
}
