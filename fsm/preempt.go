package fsm

import (
	"fmt"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// PreemptJob starts a victim's grace: the job keeps running until
// Deadline with its tasks sent SIGTERM (a batch job's script too), then
// the leader requeues it (RequeueJob) or, without --requeue, cancels it
// with reason Preempted (CancelJob). By is the job it makes room for.
type PreemptJob struct {
	Job      cluster.JobID `msgpack:"job"`
	By       cluster.JobID `msgpack:"by"`
	Deadline time.Time     `msgpack:"deadline"`
	Time     time.Time     `msgpack:"time"`
}

// sigTERM is SIGTERM's number on Linux (the FSM imports no syscall).
const sigTERM = 15

func (s *State) preemptJob(index uint64, c PreemptJob) Result {
	pos, old := s.job(c.Job)
	what := fmt.Sprintf("preempt job %d", c.Job)
	switch {
	case old == nil:
		return Result{Err: fmt.Errorf("%s: %w", what, ErrUnknownJob)}
	case old.State != cluster.JobRunning:
		return Result{Err: fmt.Errorf("%s: %w: it is %s, only a running job can be preempted", what, ErrWrongState, old.State)}
	case old.Preempt != nil:
		return Result{Err: fmt.Errorf("%s: %w: already preempted by job %d", what, ErrWrongState, old.Preempt.By)}
	case c.By == 0 || c.By == c.Job:
		return Result{Err: fmt.Errorf("%s: %w: by job %d", what, ErrInvalid, c.By)}
	case c.Deadline.Before(c.Time):
		return Result{Err: fmt.Errorf("%s: %w: deadline %s before the command's time %s", what, ErrInvalid, c.Deadline, c.Time)}
	}
	j := old.Clone()
	j.Preempt = &cluster.Preemption{By: c.By, Deadline: c.Deadline}
	// SIGTERM to every task, as Slurm's grace time starts: the steps'
	// and a plain job's ranks, and a batch job's script.
	if len(j.Signals) >= cluster.MaxSignalRequests {
		j.Signals = j.Signals[len(j.Signals)-cluster.MaxSignalRequests+1:]
	}
	j.Signals = append(j.Signals, cluster.SignalRequest{
		Seq: index, Incarnation: j.Incarnation, Number: sigTERM, Everywhere: true, Time: c.Time,
	})
	j.ModifyIndex = index
	s.storeJob(pos, j)
	return Result{}
}

// validatePreempt checks a restored job's preemption mark.
func validatePreempt(j *cluster.Job) error {
	p := j.Preempt
	switch {
	case p == nil:
		return nil
	case j.State != cluster.JobRunning:
		return fmt.Errorf("job %d: preempted while %s, want RUNNING", j.ID, j.State)
	case p.By == 0 || p.By == j.ID:
		return fmt.Errorf("job %d: preempted by job %d", j.ID, p.By)
	case p.Deadline.IsZero():
		return fmt.Errorf("job %d: preemption without a deadline", j.ID)
	}
	return nil
}
