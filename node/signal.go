package node

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec"
	"github.com/shoal-sched/shoal/fsm"
)

// Signal sends a signal to a running job's tasks without stopping them
// (shoal cancel --signal, scancel --signal): the leader records the
// request in the job, and every node running a task of it delivers it.
func (b apiBackend) Signal(ctx context.Context, id cluster.JobID, req api.SignalRequest, who cluster.Identity) error {
	return b.a.leaderSignal(ctx, id, req, who)
}

// leaderSignal records a signal request for its job's owner (or root).
func (a *Agent) leaderSignal(ctx context.Context, id cluster.JobID, req api.SignalRequest, who cluster.Identity) error {
	j, ok := a.state.View().Job(id)
	if !ok {
		return notFound(fmt.Errorf("job %d: %w", id, fsm.ErrUnknownJob))
	}
	if err := mayTouch(a.state.View(), "signal", j, who); err != nil {
		return err
	}
	res, err := a.apply(ctx, fsm.CmdSignalJob, fsm.SignalJob{Job: id, Signal: req.Signal, BatchOnly: req.BatchOnly, Time: time.Now()})
	if err != nil {
		return err
	}
	if res.Err != nil {
		if errors.Is(res.Err, fsm.ErrJobFinished) {
			return conflict(res.Err)
		}
		return invalid(res.Err)
	}
	a.log.Info("signal requested", "job", uint64(id), "signal", syscall.Signal(req.Signal).String(), "batch_only", req.BatchOnly, "by", who.User)
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

// signalTarget says whether request r goes to the local task key of job
// j, and whether to the task's first rank leader alone (a batch script's
// shell). Without B: a request goes to every step task and to the ranks
// of a job without a script, not to a batch script (as Slurm's scancel
// --signal); with B: only to the script.
func signalTarget(j *cluster.Job, key exec.TaskKey, r cluster.SignalRequest) (deliver, shellOnly bool) {
	if r.Incarnation != key.Incarnation {
		return false, false
	}
	if r.Everywhere {
		return true, j.Spec.Batch != nil
	}
	if key.Step != exec.NoStep {
		return !r.BatchOnly, false
	}
	script := j.Spec.Batch != nil
	return script == r.BatchOnly, script
}

// deliverSignals sends the signal requests of view v that running tasks
// have not had yet. A task seen for the first time was started by this
// drive from v (or, after a crash, is none of ours): requests up to
// v.Index predate it.
func (a *Agent) deliverSignals(v *fsm.View, sl *signalLog) {
	running := a.exec.Running()
	live := make(map[exec.TaskKey]bool, len(running))
	for _, key := range running {
		live[key] = true
		last, known := sl.seen[key]
		if !known {
			sl.seen[key] = v.Index
			continue
		}
		j, ok := v.Job(key.Job)
		if !ok {
			continue
		}
		for _, r := range j.Signals {
			if r.Seq <= last {
				continue
			}
			sl.seen[key] = r.Seq
			deliver, shellOnly := signalTarget(j, key, r)
			if !deliver {
				continue
			}
			sig := syscall.Signal(r.Number)
			if err := a.exec.Signal(key, sig, shellOnly); err != nil {
				a.log.Warn("deliver signal", "job", uint64(key.Job), "step", key.Step, "signal", sig.String(), "err", err)
				continue
			}
			a.log.Info("signal delivered", "job", uint64(key.Job), "incarnation", key.Incarnation, "step", key.Step,
				"signal", sig.String(), "shell_only", shellOnly, "seq", r.Seq)
		}
	}
	for key := range sl.seen {
		if !live[key] {
			delete(sl.seen, key)
		}
	}
}
