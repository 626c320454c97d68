package exec

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/shoal-sched/shoal/exec/task"
)

// ErrNotRunning is returned by Signal for a task that is not running here.
var ErrNotRunning = errors.New("task not running")

// Signal sends sig to a running task: to every rank's process group, or
// with shellOnly to the first rank's leader alone (a batch script's
// shell, not the commands it runs). It does not stop the task. The task's
// supervisor does the signalling, on request. A task whose ranks are not
// started yet, or that is not running here, gets nothing; the error wraps
// ErrNotRunning.
func (e *Executor) Signal(key TaskKey, sig syscall.Signal, shellOnly bool) error {
	e.mu.Lock()
	t, ok := e.running[key]
	e.mu.Unlock()
	if !ok {
		return fmt.Errorf("signal %s: job %s: %w", sig, key, ErrNotRunning)
	}
	reply, err := e.ctl(t, task.Request{Op: "signal", Signal: int(sig), ShellOnly: shellOnly})
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

// SetTimeLimit gives a running task a new time limit, measured from its
// start as the one it was launched with (0: none): scontrol update
// TimeLimit= of a running job. The task's supervisor enforces it.
func (e *Executor) SetTimeLimit(key TaskKey, limit time.Duration) error {
	e.mu.Lock()
	t, ok := e.running[key]
	launched := ok && t.launched
	e.mu.Unlock()
	if !ok {
		return fmt.Errorf("time limit: job %s: %w", key, ErrNotRunning)
	}
	if !launched {
		return fmt.Errorf("time limit: job %s: not launched yet", key)
	}
	reply, err := e.ctl(t, task.Request{Op: "timelimit", TimeLimit: limit})
	switch {
	case err != nil:
		return fmt.Errorf("time limit: job %s: %w", key, err)
	case reply.Error != "":
		return fmt.Errorf("time limit: job %s: %s", key, reply.Error)
	}
	e.log.Info("time limit set", "task", key, "limit", limit)
	return nil
}
