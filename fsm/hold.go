package fsm

import (
	"fmt"

	"github.com/shoal-sched/shoal/cluster"
)

func (s *State) setHold(index uint64, c SetHold) Result {
	verb := "hold"
	if c.Hold == cluster.HoldNone {
		verb = "release"
	}
	pos, old := s.job(c.Job)
	switch {
	case old == nil:
		return Result{Err: fmt.Errorf("%s job %d: %w", verb, c.Job, ErrUnknownJob)}
	case c.Hold != cluster.HoldNone && c.Hold != cluster.HoldUser && c.Hold != cluster.HoldAdmin:
		return Result{Err: fmt.Errorf("%s job %d: %w: hold %.16q: want user or admin", verb, c.Job, ErrInvalid, c.Hold)}
	case old.State != cluster.JobPending:
		return Result{Err: fmt.Errorf("%s job %d: %w: it is %s, only a pending job can be held or released", verb, c.Job, ErrWrongState, old.State)}
	case old.Hold == c.Hold:
		return Result{}
	}
	j := old.Clone()
	j.Hold = c.Hold
	j.Reason = holdReason(c.Hold) // released: the next schedule pass says why it waits
	j.ModifyIndex = index
	s.storeJob(pos, j)
	return Result{}
}

func (s *State) requeueJob(index uint64, c RequeueJob) Result {
	if p, ok, err := s.seenRequest("requeue", ridRequeue, c.Job, c.RequestID); err != nil || ok {
		return Result{JobID: p.Job, Duplicate: ok, Err: err}
	}
	pos, old := s.job(c.Job)
	switch {
	case old == nil:
		return Result{Err: fmt.Errorf("requeue job %d: %w", c.Job, ErrUnknownJob)}
	case c.Hold != cluster.HoldNone && c.Hold != cluster.HoldUser && c.Hold != cluster.HoldAdmin:
		return Result{Err: fmt.Errorf("requeue job %d: %w: hold %.16q: want user or admin", c.Job, ErrInvalid, c.Hold)}
	case old.State == cluster.JobPending || old.State == cluster.JobRequeued:
		return Result{Err: fmt.Errorf("requeue job %d: %w: it is %s already", c.Job, ErrWrongState, old.State)}
	case !old.Spec.Requeue:
		return Result{Err: fmt.Errorf("requeue job %d: %w: it was submitted with --no-requeue", c.Job, ErrWrongState)}
	case old.Incarnation == 0 && old.State.Terminal():
		return Result{Err: fmt.Errorf("requeue job %d: %w: it ended (%s) without ever running", c.Job, ErrWrongState, old.State)}
	}
	j := old.Clone()
	j.State = cluster.JobRequeued
	j.Reason = cluster.ReasonNone
	j.ExitCode = 0
	j.Hold = c.Hold
	j.ModifyIndex = index
	settleSteps(j, c.Time)
	finishRequeue(j) // at once when nothing is held any more
	s.storeJob(pos, j)
	if c.RequestID != "" {
		s.rids.add(ridPair{RequestID: c.RequestID, Job: c.Job, Kind: ridRequeue})
	}
	return Result{}
}
