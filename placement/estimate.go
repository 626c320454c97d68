package placement

import (
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// EarliestStart estimates when and where job could start (sbatch
// --test-only): now, where the shoal policy would place it, if it fits
// now; else the moment enough of the View's running jobs have reached
// their time limits, as a backfill reservation is computed. Jobs still
// pending are not counted: the estimate is the earliest the job could
// start were it first in the queue. ok is false when it would not start
// even once every job with a limit had ended (or could never fit).
func EarliestStart(v *View, job *cluster.Job, now time.Time) (start time.Time, nodes []Assignment, ok bool) {
	if v == nil || job == nil {
		return time.Time{}, nil, false
	}
	s := newState(v, []*cluster.Job{job})
	req := job.Spec.Request
	if s.never(req) != "" {
		return time.Time{}, nil, false
	}
	s.maxLeaves = switchLimit(job, now)
	if d, _, ok := s.clone().start(job.ID, req, true, nil, false); ok {
		return now, d.Nodes, true
	}
	r := s.reserve(job.ID, req, nil, now, true)
	if r == nil {
		return time.Time{}, nil, false
	}
	return r.Start, r.Nodes, true
}
