package node

import (
	"context"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/placement"
)

// startPreemption makes room for the first job of the queue order that
// waits on resources, when its QoS may preempt running jobs: it chooses
// the victims (placement.Victims: the fewest GPU-hours lost) among the
// running jobs of QoS levels it may preempt, and starts their grace
// (PreemptJob: SIGTERM now, requeue or cancel at the deadline). While
// room is being made for a job, no more victims are chosen for it.
func (a *Agent) startPreemption(ctx context.Context, order []cluster.JobID, reasons map[cluster.JobID]string, now time.Time) error {
	v := a.state.View() // after this pass's allocations
	pol := v.Policy()
	if pol == nil || len(pol.Preempt) == 0 {
		return nil
	}
	var head *cluster.Job
	for _, id := range order {
		if reasons[id] != cluster.ReasonResources {
			continue
		}
		if j, ok := v.Job(id); ok && j.State == cluster.JobPending {
			head = j
		}
		break
	}
	if head == nil || head.Spec.QoS == "" {
		return nil
	}
	var candidates []*cluster.Job
	for _, j := range v.Jobs() {
		if j.State != cluster.JobRunning {
			continue
		}
		if j.Preempt != nil {
			if j.Preempt.By == head.ID {
				return nil // its room is being made
			}
			continue
		}
		if pol.MayPreempt(head.Spec.QoS, j.Spec.QoS) {
			candidates = append(candidates, j)
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	view := placement.NewView(v.Nodes(), v.Jobs()).WithPartitions(pol.Partitions)
	victims, ok := placement.Victims(view, head, candidates, now)
	if !ok {
		return nil
	}
	for _, id := range victims {
		r, err := a.apply(ctx, fsm.CmdPreemptJob, fsm.PreemptJob{Job: id, By: head.ID, Deadline: now.Add(pol.PreemptGrace), Time: now})
		if err != nil {
			return err
		}
		if r.Err != nil {
			a.log.Warn("preempt refused by fsm", "job", uint64(id), "for", uint64(head.ID), "err", r.Err)
			continue
		}
		a.log.Info("job preempted", "job", uint64(id), "for", uint64(head.ID), "grace", pol.PreemptGrace)
	}
	return nil
}

// finishPreemptions ends the victims whose grace is over: requeued when
// they asked for it (--requeue, every batch job by default), else
// cancelled with reason Preempted.
func (a *Agent) finishPreemptions(ctx context.Context, v *fsm.View, now time.Time) error {
	for _, j := range v.Jobs() {
		if j.State != cluster.JobRunning || j.Preempt == nil || now.Before(j.Preempt.Deadline) {
			continue
		}
		var r fsm.Result
		var err error
		if j.Spec.Requeue {
			r, err = a.apply(ctx, fsm.CmdRequeueJob, fsm.RequeueJob{Job: j.ID, Time: now})
		} else {
			r, err = a.apply(ctx, fsm.CmdCancelJob, fsm.CancelJob{Job: j.ID, Reason: cluster.ReasonPreempted, Time: now})
		}
		if err != nil {
			return err
		}
		if r.Err != nil {
			a.log.Warn("end of preemption refused by fsm", "job", uint64(j.ID), "err", r.Err)
			continue
		}
		a.log.Info("preempted job stopped", "job", uint64(j.ID), "requeued", j.Spec.Requeue)
	}
	return nil
}
