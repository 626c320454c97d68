package slurmcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/exitcode"
)

// stepWaitPoll bounds one blocking query on the job while a step waits
// for its GPUs and CPUs: the job changes (and srun tries again) when a
// step of it ends; the bound only keeps a lost wake-up from hanging srun.
const stepWaitPoll = 30 * time.Second

// busyLine is what Slurm 22.05's srun prints each time the step it asks
// for is refused because other steps of the job hold its resources
// (ESLURM_NODES_BUSY): "temporarily disabled" the first time, "still
// disabled" after (testdata/steps, captured from the peer).
func busyLine(job uint64, tries int) string {
	how := "temporarily disabled"
	if tries > 0 {
		how = "still disabled"
	}
	return fmt.Sprintf("srun: Job %d step creation %s, retrying (Requested nodes are busy)\n", job, how)
}

// startStepWaiting starts a step with start, and while other steps of
// job hold what it asks for (api.IsStepBusy), waits as Slurm's srun
// waits: it prints busyLine, blocks on the job until a step's tasks end
// on some node (stepsDone grows) or the job stops running, and tries
// again; once started after a wait it prints "srun: Step created for
// job N". With --immediate (immediate > 0) it gives up once that time
// has passed since the first refusal, with Slurm's error and exit code 1.
func startStepWaiting(ctx context.Context, c *api.Client, job uint64, immediate time.Duration, stderr io.Writer, start func() (api.StepResponse, error)) (api.StepResponse, error) {
	var deadline time.Time
	for tries := 0; ; tries++ {
		// The job before the try: a step that ends after it wakes the
		// wait below, whenever the refusal comes.
		j, index, jerr := c.WaitJob(ctx, job, 0, 0)
		step, err := start()
		if words := stepTooLarge(err); words != "" {
			fmt.Fprintf(stderr, "srun: error: Unable to create step for job %d: %s\n", job, words)
			return step, exitcode.Code(1)
		}
		if err == nil || !api.IsStepBusy(err) {
			if err == nil && tries > 0 {
				fmt.Fprintf(stderr, "srun: Step created for job %d\n", job)
			}
			return step, err
		}
		if tries == 0 && immediate > 0 {
			deadline = time.Now().Add(immediate)
		}
		if immediate > 0 && !time.Now().Before(deadline) {
			fmt.Fprintf(stderr, "srun: error: Unable to create step for job %d: Requested nodes are busy\n", job)
			return step, exitcode.Code(1)
		}
		fmt.Fprint(stderr, busyLine(job, tries))
		if jerr != nil {
			return step, err
		}
		if err := waitStepsDone(ctx, c, j, index, deadline); err != nil {
			return step, err
		}
	}
}

// waitStepsDone blocks on job j (read at index) until it changes so that
// a step may now start: a step's tasks ended on some node (stepsDone
// grows) or the job is no longer running; or until deadline (when set)
// or stepWaitPoll passes. The replica's index moves with every change
// to the cluster, so it waits again on changes that free nothing.
func waitStepsDone(ctx context.Context, c *api.Client, j api.Job, index uint64, deadline time.Time) error {
	done := stepsDone(j)
	until := time.Now().Add(stepWaitPoll)
	if !deadline.IsZero() && deadline.Before(until) {
		until = deadline
	}
	for {
		left := time.Until(until)
		if left <= 0 {
			return nil
		}
		now, idx, err := c.WaitJob(ctx, j.ID, index, left)
		switch {
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			return fmt.Errorf("wait for job %d's steps: %w", j.ID, err)
		case now.State != "RUNNING" || stepsDone(now) != done:
			return nil
		}
		index = idx
	}
}

// stepsDone counts the step nodes of j whose tasks have all ended: it
// grows exactly when a step frees what it held on a node.
func stepsDone(j api.Job) int {
	n := 0
	for _, st := range j.Steps {
		for _, nt := range st.NodeTasks {
			if nt.State != string(cluster.TaskAssigned) && nt.State != string(cluster.TaskRunning) {
				n++
			}
		}
	}
	return n
}

// stepTooLarge is Slurm's words for the agent's refusal of a step that
// asks for more GPUs or CPUs than its job holds; "" for any other error.
func stepTooLarge(err error) string {
	var se *api.StatusError
	if !errors.As(err, &se) {
		return ""
	}
	for _, m := range api.StepTooLargeMessages {
		if strings.Contains(se.Message, m) {
			return m
		}
	}
	return ""
}
