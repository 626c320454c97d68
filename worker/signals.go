package worker

import (
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
)

// Delivery is one signal request to send to a task running here.
type Delivery struct {
	Key    task.Key
	Number int    // the signal
	Seq    uint64 // the request's
	// ShellOnly: to the task's first rank alone (a batch script's shell).
	ShellOnly bool
}

// SignalsDue decides which of the signal requests in a view at index
// the running tasks have not had yet, and what the driver remembers after
// (next: per live task, the Seq of the last request it delivered or
// passed over; seen is the same from the drive before). A task seen for
// the first time was started by this drive from the view (or, after a
// crash, is none of ours): the requests up to index predate it. A
// request is remembered as had whether or not its delivery works: it is
// not retried.
func SignalsDue(index uint64, job func(cluster.JobID) (*cluster.Job, bool), running []task.Key, seen map[task.Key]uint64) (due []Delivery, next map[task.Key]uint64) {
	next = make(map[task.Key]uint64, len(running))
	for _, key := range running {
		last, known := seen[key]
		if !known {
			next[key] = index
			continue
		}
		next[key] = last
		j, ok := job(key.Job)
		if !ok {
			continue
		}
		for _, r := range j.Signals {
			if r.Seq <= last {
				continue
			}
			next[key] = r.Seq
			deliver, shellOnly := SignalTarget(j, key, r)
			if deliver {
				due = append(due, Delivery{Key: key, Number: r.Number, Seq: r.Seq, ShellOnly: shellOnly})
			}
		}
	}
	return due, next
}

// SignalTarget says whether request r goes to the local task key of job
// j, and whether to the task's first rank alone (a batch script's shell).
// Without BatchOnly: a request goes to every step task and to the ranks
// of a job without a script, not to a batch script (as Slurm's scancel
// --signal); with it: only to the script. A request to Everywhere goes to
// every task, a batch job's to its shell.
func SignalTarget(j *cluster.Job, key task.Key, r cluster.SignalRequest) (deliver, shellOnly bool) {
	if r.Incarnation != key.Incarnation {
		return false, false
	}
	if r.Everywhere {
		return true, j.Spec.Batch != nil
	}
	if key.Step != task.NoStep {
		return !r.BatchOnly, false
	}
	script := j.Spec.Batch != nil
	return script == r.BatchOnly, script
}
