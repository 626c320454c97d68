package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
)

// What the worker's loop needs from the agent that runs it, as plain
// interfaces: the agent (package agent) implements them over its FSM
// replica, its executor, the leader client and the wall clock.

// View is one state of the replica a round decides from.
type View interface {
	// Jobs are the replicated jobs.
	Jobs() []*cluster.Job
	// Changed is closed once a newer state is applied.
	Changed() <-chan struct{}
}

// Node is the agent as the worker loop sees it, over its replica's view
// type V.
type Node[V View] interface {
	// Current is the replica's view, and whether it may be acted on: a
	// replica still replaying its log, or diverged, is not.
	Current() (v V, ready bool)
	// MayStart says whether tasks may start from v (the lease: MayStart).
	MayStart(v V) bool
	// Start starts one task of the plan and says whether it did.
	Start(ctx context.Context, v V, s Start) bool
	// Report tells the leader, local or remote, about one run.
	Report(ctx context.Context, r Report) error
	// Follow is the rest of a round on v: signals and time limits
	// delivered to running tasks.
	Follow(v V)
}

// Tasks is the executor as the loop sees it.
type Tasks interface {
	// Running are the tasks running here.
	Running() []task.Key
	// PendingExits are the exits recorded and not yet acknowledged.
	PendingExits() []task.Key
	// Stop stops a task with cause and says whether it was running.
	Stop(k task.Key, cause string) bool
}

// Clock is the time the loop waits on.
type Clock interface {
	// NewTicker delivers every d until stop is called.
	NewTicker(d time.Duration) (c <-chan time.Time, stop func())
}

// Report kinds: the task event kinds the leader turns into commands.
const (
	// ReportStarted: the run holds this node and runs (TaskStarted).
	ReportStarted = "started"
	// ReportReleased: the run ended here with no local task left; its
	// resources may be freed (TaskExited, cause cancelled).
	ReportReleased = "exited"
)

// Report is one thing the worker tells the leader about a run.
type Report struct {
	Kind string
	Ref
}

// Driver is the worker's loop: it makes the executor follow the
// allocations in the replica, whenever the replica changes and at least
// every Interval. Each round gathers, asks Reconcile, and acts (Round).
type Driver[V View] struct {
	// Name is this node's name.
	Name     string
	Node     Node[V]
	Tasks    Tasks
	Clock    Clock
	Log      *slog.Logger
	Interval time.Duration
}

// Run drives until ctx ends.
func (d Driver[V]) Run(ctx context.Context) {
	tick, stop := d.Clock.NewTicker(d.Interval)
	defer stop()
	for {
		v, ready := d.Node.Current()
		// A replica still replaying its log after a restart would start or
		// stop ranks from stale allocations; wait until it has caught up. A
		// diverged one starts nothing new (its running ranks are fenced if
		// it also loses its lease).
		if ready {
			d.Round(ctx, v)
			d.Node.Follow(v)
		}
		select {
		case <-ctx.Done():
			return
		case <-v.Changed():
		case <-tick:
		}
	}
}

// Round is one gather → decide → act round: it gathers the replicated
// jobs and the executor's tasks, asks Reconcile, and acts — stops first,
// then starts, then reports, so that a slow or unreachable leader never
// holds up stopping a task that is no longer wanted. One failed report
// ends the round's reports (the leader is unreachable), so a round waits
// on the leader for at most one report's timeout.
func (d Driver[V]) Round(ctx context.Context, v V) {
	pending := d.Tasks.PendingExits() // before Running, as the agent always gathered them
	p := Reconcile(Input{
		Node: d.Name, Jobs: v.Jobs(), Running: d.Tasks.Running(), PendingExits: pending,
		CanStart: d.Node.MayStart(v),
	})
	for _, k := range p.Stop {
		if d.Tasks.Stop(k, task.CauseCancelled) {
			d.Log.Info("stopping job", "job", uint64(k.Job), "incarnation", k.Incarnation, "step", k.Step)
		}
	}
	started := p.Started
	for _, s := range p.Start {
		if d.Node.Start(ctx, v, s) && s.Step == nil {
			started = append(started, Ref{Job: s.Job.ID, Incarnation: s.Job.Incarnation, Join: s.Job.Alloc.Nodes[s.NodeIndex].Join})
		}
	}
	var reports []Report
	for _, r := range started {
		reports = append(reports, Report{Kind: ReportStarted, Ref: r})
	}
	for _, r := range p.Release {
		// Resources held here with no local task: free them (a duplicate
		// is harmless).
		reports = append(reports, Report{Kind: ReportReleased, Ref: r})
	}
	for _, r := range reports {
		if err := d.Node.Report(ctx, r); err != nil {
			d.Log.Debug("report", "kind", r.Kind, "job", uint64(r.Job), "err", err)
			return // the leader is unreachable; the next round reports again
		}
	}
}
