package exec

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// ErrNotRunning is returned by Signal for a task that is not running here.
var ErrNotRunning = errors.New("task not running")

// earlySignalDelay says whether the task of l, planned as p and started at
// start, gets the job's --signal warning, and how long after now it is
// due (0: at once).
//
//   - No --signal, or no time limit: never.
//   - The job's own task counts from its own start, as its time limit
//     does: due at start + limit - before, at once when before is not
//     shorter than the limit. A batch script gets it only with B:
//     (BatchOnly), the ranks of a job without a script only without.
//   - A step's task gets it without B: only, due at JobStart + limit -
//     before; one started after that moment does not get it (the job's
//     warning is sent once, to what runs then).
func earlySignalDelay(l Launch, p plan, start, now time.Time) (time.Duration, bool) {
	sig, limit := l.Spec.Signal, l.Spec.Request.TimeLimit
	if sig == nil || limit <= 0 {
		return 0, false
	}
	var due time.Time
	switch {
	case l.Step != nil:
		if sig.BatchOnly || l.JobStart.IsZero() {
			return 0, false
		}
		due = l.JobStart.Add(limit - sig.Before)
		if due.Before(start) {
			return 0, false
		}
	case p.script != sig.BatchOnly:
		return 0, false
	default:
		due = start.Add(max(limit-sig.Before, 0))
	}
	return max(due.Sub(now), 0), true
}

// Signal sends sig to a running task: to every rank's process group, or
// with shellOnly to the first rank's leader alone (a batch script's
// shell, not the commands it runs). It does not stop the task. A task
// whose ranks are not started yet, or that is not running here, gets
// nothing; the error wraps ErrNotRunning.
func (e *Executor) Signal(key TaskKey, sig syscall.Signal, shellOnly bool) error {
	e.mu.Lock()
	t, ok := e.running[key]
	var pgids []int
	if ok {
		pgids = t.pgids
	}
	e.mu.Unlock()
	if ok && t.stop == nil { // the agent's side: the supervisor signals
		reply, err := e.ctl(t, ctlRequest{Op: "signal", Signal: int(sig), ShellOnly: shellOnly})
		switch {
		case err != nil && !supervisorListens(t.dir):
			return fmt.Errorf("signal %s: job %s: %w", sig, key, ErrNotRunning) // it just ended
		case err != nil:
			return fmt.Errorf("signal %s: job %s: %w", sig, key, err)
		case reply.NotRunning:
			return fmt.Errorf("signal %s: job %s: %w", sig, key, ErrNotRunning)
		case reply.Error != "":
			return fmt.Errorf("signal %s: job %s: %s", sig, key, reply.Error)
		}
		e.log.Info("signalled ranks", "task", key, "signal", sig.String(), "shell_only", shellOnly)
		return nil
	}
	if len(pgids) == 0 {
		return fmt.Errorf("signal %s: job %s: %w", sig, key, ErrNotRunning)
	}
	e.log.Info("signalling ranks", "task", key, "signal", sig.String(), "shell_only", shellOnly)
	return signalGroups(pgids, sig, shellOnly)
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
