package agent

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/leader"
	"github.com/shoal-sched/shoal/prolog"
	"github.com/shoal-sched/shoal/worker"
)

// scriptRuns are the runs (job incarnations) of this node whose prolog
// or epilog ran, and how it went. The worker loop (prologs, and epilogs
// of runs released without a local task) and the exit reporter
// (epilogs after a job's own task) use them; mu is held across a
// script's run, so one script runs at a time on the node. They are forgotten once the run no longer holds this node
// (forget); an agent restarted while a run holds the node runs the
// prolog again before its next task starts, as slurmd would after a
// reboot.
type scriptRuns struct {
	mu     sync.Mutex
	prolog map[worker.Ref]bool // true: it succeeded
	epilog map[worker.Ref]bool
}

// lock takes mu, making the maps on first use.
func (s *scriptRuns) lock() {
	s.mu.Lock()
	if s.prolog == nil {
		s.prolog, s.epilog = map[worker.Ref]bool{}, map[worker.Ref]bool{}
	}
}

// runProlog runs the prolog of job j's run on this node before its
// first task here, and says whether the task may start. A prolog that
// fails (or runs past --prolog-epilog-timeout) drains the node with
// Slurm's "Prolog error" and requeues the job held, through the leader.
func (w *workerSide) runProlog(ctx context.Context, j *cluster.Job) bool {
	if w.cfg.Prolog == "" {
		return true
	}
	ref := worker.Ref{Job: j.ID, Incarnation: j.Incarnation}
	if i := j.Alloc.Find(w.cfg.Name); i >= 0 {
		ref.Join = j.Alloc.Nodes[i].Join // a node taken back runs it again
	}
	w.scripts.lock()
	defer w.scripts.mu.Unlock()
	if ok, ran := w.scripts.prolog[ref]; ran {
		return ok
	}
	r := prolog.Run(ctx, w.cfg.Prolog, prolog.Env(prolog.Prolog, j, w.cfg.Name), w.cfg.PrologEpilogTimeout)
	if ctx.Err() != nil {
		return false // the agent is stopping: the next one runs it
	}
	d := prolog.Verdict(prolog.Prolog, r)
	w.scripts.prolog[ref] = d.Start
	if d.Start {
		w.log.Info("prolog done", "job", uint64(j.ID), "incarnation", j.Incarnation)
		return true
	}
	w.log.Error("prolog failed: draining this node, requeueing the job held", "job", uint64(j.ID),
		"code", r.Code, "timed_out", r.TimedOut, "err", r.Err, "output", r.Output)
	if err := w.sendTaskEvent(ctx, taskEvent{Kind: leader.ReportPrologFailed, Job: j.ID, Incarnation: j.Incarnation,
		Node: w.cfg.Name, ExitCode: r.Code, Cause: d.Drain}); err != nil {
		w.log.Warn("report the prolog's failure", "job", uint64(j.ID), "err", err)
		delete(w.scripts.prolog, ref) // the next round runs it, and reports, again
	}
	return false
}

// runEpilog runs the epilog of run ref on this node once, before the
// node's resources of it are released (the job ended here: completed,
// failed, cancelled or requeued). One that fails drains the node with
// Slurm's "Epilog error"; the release goes on.
func (w *workerSide) runEpilog(ctx context.Context, ref worker.Ref) {
	if w.cfg.Epilog == "" {
		return
	}
	w.scripts.lock()
	defer w.scripts.mu.Unlock()
	if _, ran := w.scripts.epilog[ref]; ran {
		return
	}
	j, ok := w.state.View().Job(ref.Job)
	if !ok {
		return
	}
	r := prolog.Run(ctx, w.cfg.Epilog, prolog.Env(prolog.Epilog, j, w.cfg.Name), w.cfg.PrologEpilogTimeout)
	if ctx.Err() != nil {
		return
	}
	d := prolog.Verdict(prolog.Epilog, r)
	w.scripts.epilog[ref] = d.Drain == ""
	if d.Drain == "" {
		w.log.Info("epilog done", "job", uint64(ref.Job), "incarnation", ref.Incarnation)
		return
	}
	w.log.Error("epilog failed: draining this node", "job", uint64(ref.Job),
		"code", r.Code, "timed_out", r.TimedOut, "err", r.Err, "output", r.Output)
	if err := w.sendTaskEvent(ctx, taskEvent{Kind: leader.ReportEpilogFailed, Job: ref.Job, Incarnation: ref.Incarnation,
		Node: w.cfg.Name, ExitCode: r.Code, Cause: d.Drain}); err != nil {
		w.log.Warn("report the epilog's failure", "job", uint64(ref.Job), "err", err)
	}
}

// forget drops the runs that no longer hold this node in v
// (worker.RunHolds).
func (s *scriptRuns) forget(v *fsm.View, node string) {
	s.lock()
	defer s.mu.Unlock()
	for _, m := range []map[worker.Ref]bool{s.prolog, s.epilog} {
		for ref := range m {
			if !worker.RunHolds(v, ref, node) {
				delete(m, ref)
			}
		}
	}
}

// leaderScriptFailed is the leader's side of a failed prolog or epilog:
// the node is drained with the reason the node gave (Slurm's "Prolog
// error" or "Epilog error"), and after a prolog's failure the job is
// requeued held, or cancelled when it may not be requeued
// (--no-requeue), as Slurm's controller does: its hold is a user's
// (Slurm's WAIT_HELD_USER, "launch failed requeued held"), so the
// job's owner may release it.
func (l *leaderSide) leaderScriptFailed(ctx context.Context, ev taskEvent) error {
	reason := prolog.PrologError
	if ev.Kind == leader.ReportEpilogFailed {
		reason = prolog.EpilogError
	}
	now := time.Now()
	res, err := l.apply(ctx, fsm.CmdSetDrain, fsm.SetDrain{Node: ev.Node, Drain: true, Reason: reason, Time: now})
	if err != nil {
		return err
	}
	if res.Err != nil {
		return invalid(res.Err)
	}
	if ev.Kind != leader.ReportPrologFailed {
		return nil
	}
	if !leader.RequeueAfterProlog(l.state.View(), ev.Job, ev.Incarnation) {
		return nil // already moved on
	}
	res, err = l.apply(ctx, fsm.CmdRequeueJob, fsm.RequeueJob{Job: ev.Job, Hold: cluster.HoldUser, Time: now})
	if err != nil {
		return err
	}
	if errors.Is(res.Err, fsm.ErrWrongState) {
		res, err = l.apply(ctx, fsm.CmdCancelJob, fsm.CancelJob{Job: ev.Job, Time: now})
		if err != nil {
			return err
		}
	}
	if res.Err != nil && !errors.Is(res.Err, fsm.ErrUnknownJob) {
		return invalid(res.Err)
	}
	return nil
}
