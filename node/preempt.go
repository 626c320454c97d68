package node

import (
	"context"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/leader"
)

// startPreemptions starts the victims' grace (PreemptJob: SIGTERM now,
// requeue or cancel at the deadline), as leader.Preemption chose them.
func (a *Agent) startPreemptions(ctx context.Context, pre leader.Preemptions, now time.Time) error {
	for _, id := range pre.Victims {
		r, err := a.apply(ctx, fsm.CmdPreemptJob, fsm.PreemptJob{Job: id, By: pre.For, Deadline: pre.Deadline, Time: now})
		if err != nil {
			return err
		}
		if r.Err != nil {
			a.log.Warn("preempt refused by fsm", "job", uint64(id), "for", uint64(pre.For), "err", r.Err)
			continue
		}
		a.preemptions.Add(1)
		a.log.Info("job preempted", "job", uint64(id), "for", uint64(pre.For), "grace", pre.Deadline.Sub(now))
	}
	return nil
}

// endPreemptions ends the victims whose grace is over: requeued when they
// asked for it, else cancelled with reason Preempted.
func (a *Agent) endPreemptions(ctx context.Context, ends []leader.EndPreemption, now time.Time) error {
	for _, e := range ends {
		var r fsm.Result
		var err error
		if e.Requeue {
			r, err = a.apply(ctx, fsm.CmdRequeueJob, fsm.RequeueJob{Job: e.Job, Time: now})
		} else {
			r, err = a.apply(ctx, fsm.CmdCancelJob, fsm.CancelJob{Job: e.Job, Reason: cluster.ReasonPreempted, Time: now})
		}
		if err != nil {
			return err
		}
		if r.Err != nil {
			a.log.Warn("end of preemption refused by fsm", "job", uint64(e.Job), "err", r.Err)
			continue
		}
		a.log.Info("preempted job stopped", "job", uint64(e.Job), "requeued", e.Requeue)
	}
	return nil
}
