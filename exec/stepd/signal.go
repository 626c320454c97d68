package stepd

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
)

// earlySignalDelay says which --signal warning the task of l, planned as
// p and started at start, gets, and how long after now it is due (0: at
// once); ok false: none.
//
//   - No --signal, or no time limit: never.
//   - The job's own task counts from its own start, as its time limit
//     does: due at start + limit - before, at once when before is not
//     shorter than the limit. A batch script gets it only with B:
//     (BatchOnly), the ranks of a job without a script only without.
//   - A step with a --signal of its own (srun --signal) gets that one,
//     due at JobStart + limit - before, as Slurm counts a step's warning
//     from the job's end; at once when the step starts later than that
//     (its warning was never sent).
//   - Any other step's task gets the job's without B: only, due at
//     JobStart + limit - before; one started after that moment does not
//     get it (the job's warning is sent once, to what runs then).
func earlySignalDelay(l task.Launch, p task.Plan, start, now time.Time) (*cluster.JobSignal, time.Duration, bool) {
	sig, limit := l.Spec.Signal, l.Spec.Request.TimeLimit
	own := l.Step != nil && l.Step.Spec.Signal != nil
	if own {
		sig = l.Step.Spec.Signal
	}
	if sig == nil || limit <= 0 {
		return nil, 0, false
	}
	var due time.Time
	switch {
	case l.Step != nil:
		if sig.BatchOnly || l.JobStart.IsZero() {
			return nil, 0, false
		}
		due = l.JobStart.Add(limit - sig.Before)
		if due.Before(start) && !own {
			return nil, 0, false
		}
	case p.Script != sig.BatchOnly:
		return nil, 0, false
	default:
		due = start.Add(max(limit-sig.Before, 0))
	}
	return sig, max(due.Sub(now), 0), true
}

// signalGroups sends sig to every process group in pgids, or with
// shellOnly to the process pgids[0] alone. Groups already gone are not an
// error.
func signalGroups(pgids []int, sig syscall.Signal, shellOnly bool) error {
	if shellOnly {
		pgids = pgids[:1]
	}
	var errs []error
	for _, pg := range pgids {
		target := -pg
		if shellOnly {
			target = pg
		}
		if err := syscall.Kill(target, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("signal %s to %d: %w", sig, target, err))
		}
	}
	return errors.Join(errs...)
}
