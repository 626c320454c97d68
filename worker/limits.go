package worker

import (
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
)

// LimitChange is a running task to give its job's time limit (scontrol
// update TimeLimit= of a running job), measured from the task's start.
type LimitChange struct {
	Key   task.Key
	Limit time.Duration
}

// TimeLimits lists the running tasks whose job's time limit is not the one
// last given to them (given; a task not in it has had none given, so it
// gets its job's, which is harmless when it already has it). Tasks of a
// job that is no longer running, or of another incarnation, are left to
// Reconcile's stops. job looks a job up by id (fsm.View.Job): the work
// is per running task, not per job in the queue, since this runs on
// every node at every change of the state. It is pure.
func TimeLimits(job func(cluster.JobID) (*cluster.Job, bool), running []task.Key, given map[task.Key]time.Duration) []LimitChange {
	var out []LimitChange
	for _, k := range running {
		j, ok := job(k.Job)
		if !ok || j.State != cluster.JobRunning || j.Incarnation != k.Incarnation {
			continue
		}
		limit := j.Spec.Request.TimeLimit
		if l, ok := given[k]; ok && l == limit {
			continue
		}
		out = append(out, LimitChange{Key: k, Limit: limit})
	}
	return out
}
