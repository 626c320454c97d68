package fsm

import (
	"fmt"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// SetJobPriority is `scontrol update JobId=N Priority=P`: an absolute
// priority that replaces the job's multifactor one (Priority > 0), or,
// with Priority 0, a return to the multifactor priority.
type SetJobPriority struct {
	Job      cluster.JobID `msgpack:"job"`
	Priority int64         `msgpack:"priority"`
	Time     time.Time     `msgpack:"time"`
}

func (s *State) setJobPriority(index uint64, c SetJobPriority) Result {
	pos, old := s.job(c.Job)
	what := fmt.Sprintf("set priority of job %d", c.Job)
	switch {
	case old == nil:
		return Result{Err: fmt.Errorf("%s: %w", what, ErrUnknownJob)}
	case old.State.Terminal():
		return Result{Err: fmt.Errorf("%s: %w (state %s)", what, ErrJobFinished, old.State)}
	case c.Priority < 0 || c.Priority > cluster.MaxAdminPriority:
		return Result{Err: fmt.Errorf("%s: %w: priority %d: want 0 (multifactor) to %d", what, ErrInvalid, c.Priority, cluster.MaxAdminPriority)}
	case old.AdminPriority == c.Priority:
		return Result{}
	}
	j := old.Clone()
	j.AdminPriority = c.Priority
	j.ModifyIndex = index
	s.storeJob(pos, j)
	return Result{}
}
