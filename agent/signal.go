package agent

import (
	"context"
	"syscall"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/httpapi"
	"github.com/shoal-sched/shoal/leader"
	"github.com/shoal-sched/shoal/worker"
)

// Signal sends a signal to a running job's tasks without stopping them
// (shoal cancel --signal, scancel --signal): the leader records the
// request in the job (leader.PlanSignal), and every node running a task
// of it delivers it.
func (b apiBackend) Signal(ctx context.Context, id cluster.JobID, req api.SignalRequest, who cluster.Identity) error {
	if err := httpapi.CheckRequestID(req.RequestID); err != nil {
		return err
	}
	rid := httpapi.ScopedWriteRequestID(httpapi.ScopeSignal, who, req.RequestID)
	v := b.state.View()
	asked := rid // a copy already committed is answered by the FSM as it was
	rid = keptRequestID(rid, fsm.CmdSignalJob, fsm.SignalJob{Job: id, RequestID: rid}, b.gate(ctx))
	plan, err := leader.PlanSignal(v, id, req.Signal, req.BatchOnly, rid, callerOf(v.Policy(), who))
	if _, err = b.lead.proposeOr(ctx, plan, err); err != nil {
		return droppedOutcome(err, asked != rid, httpapi.SignalWrite)
	}
	b.log.Info("signal requested", "job", uint64(id), "signal", syscall.Signal(req.Signal).String(), "batch_only", req.BatchOnly, "by", who.User)
	return nil
}

// signalLog is what the executor driver remembers of signal requests: per
// local task, the Seq of the last request it delivered or passed over.
// It lives in memory only: the tasks of an agent that restarted are gone
// (exec recovers them as lost), and a task started from a view at index
// I never gets a request committed at or before I.
type signalLog struct {
	seen map[exec.TaskKey]uint64
}

// deliverSignals sends the signal requests of view v that running tasks
// have not had yet (worker.SignalsDue decides which).
func (w *workerSide) deliverSignals(v *fsm.View, sl *signalLog) {
	due, next := worker.SignalsDue(v.Index, v.Job, w.exec.Running(), sl.seen)
	sl.seen = next
	for _, d := range due {
		sig := syscall.Signal(d.Number)
		if err := w.exec.Signal(d.Key, sig, d.ShellOnly); err != nil {
			w.log.Warn("deliver signal", "job", uint64(d.Key.Job), "step", d.Key.Step, "signal", sig.String(), "err", err)
			continue
		}
		w.log.Info("signal delivered", "job", uint64(d.Key.Job), "incarnation", d.Key.Incarnation, "step", d.Key.Step,
			"signal", sig.String(), "shell_only", d.ShellOnly, "seq", d.Seq)
	}
}
