package leader

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/placement"
)

// Bounds of the scheduling loop.
const (
	// MaxDecisionsPerApply bounds one Allocate command, so one log entry
	// stays small and one bad decision cannot hold up a whole pass.
	MaxDecisionsPerApply = 64
	// MaxReasonsPerApply bounds one SetReasons command.
	MaxReasonsPerApply = 512
	// ScheduleDebounce lets a burst of changes settle into one pass: passes
	// start at most this often (DebounceWait).
	ScheduleDebounce = 20 * time.Millisecond
)

// SchedulerMetrics is what the scheduling loop counts.
type SchedulerMetrics interface {
	// Passed observes one pass's duration.
	Passed(d time.Duration)
	// Placed counts one job placed.
	Placed()
	// Started observes a placed job's wait since its submission.
	Started(wait time.Duration)
	// Preempted counts one victim whose grace started.
	Preempted()
}

// Scheduler is the leader's scheduling loop: whenever the state changes,
// and at least every Interval, it gathers the view, asks Pass (then
// Preemption) for a plan and applies it through Propose in bounded
// batches. It runs while this node leads: its owner cancels Run's context
// on losing leadership.
type Scheduler struct {
	State    State
	Propose  Proposer
	Lead     Leadership
	Clock    Clock
	Metrics  SchedulerMetrics
	Log      *slog.Logger
	Interval time.Duration
	// Occupying, when set, gives the jobs placement counts as holding
	// their allocations (PassInput.Occupying); nil outside a planted-bug
	// build.
	Occupying func([]*cluster.Job) []*cluster.Job
	// Gate says whether an entry of type t that needs protocol need may be
	// proposed now (every server speaks it); nil allows every one.
	Gate func(ctx context.Context, t fsm.CmdType, need int) error
	// Announce, when set, makes the followers learn at once what is
	// committed (consensus.Raft.AnnounceCommit) instead of with the
	// leader's next entry or raft's commit timeout (50 to 100 ms on a
	// LAN): a pass that placed jobs and applied nothing after them calls
	// it, so the nodes an allocation names start its tasks without that
	// wait, unless every node it placed on is Self. It must not block.
	Announce func()
	// Self is the leader's own node: its FSM applies an allocation the
	// moment it commits, so a pass that placed jobs on it alone announces
	// nothing (a barrier is a raft entry every server writes and syncs).
	Self string
	// Agents says whether every live agent, servers and workers, speaks
	// protocol need; nil says yes. A node an elastic job takes back runs
	// its new entry only if it knows entries (fsm's GrowJob.Rejoin).
	Agents func(need int) bool
}

// Run schedules until ctx ends, or until the replica diverges: then it
// hands leadership over and returns, having scheduled nothing from it.
func (s Scheduler) Run(ctx context.Context) {
	log := s.Log.With("component", "scheduler")
	tick, stop := s.Clock.NewTicker(s.Interval)
	defer stop()
	// hist is what the last pass derived from the archive: the next one
	// starts from it (PassInput.History). It lives as long as this loop,
	// so a new leadership, or a new leader, starts afresh.
	var hist *placement.History
	for {
		v := s.State.View()
		if err := s.State.Diverged(); err != nil {
			// Diverged while leading: the FSM adapter asked for a transfer
			// once; insist until it happens, and schedule nothing.
			log.Error("replica diverged while leading: scheduling stopped, handing leadership over", "err", err)
			s.Lead.HandOff(ctx)
			return
		}
		start := s.Clock.Now()
		var err error
		if hist, err = s.Pass(ctx, v, hist); err != nil && ctx.Err() == nil {
			log.Warn("schedule pass", "err", err)
		}
		s.Metrics.Passed(s.Clock.Now().Sub(start))
		select {
		case <-ctx.Done():
			return
		case <-v.Changed():
		case <-tick:
		}
		if wait := DebounceWait(start, s.Clock.Now()); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-s.Clock.After(wait):
			}
		}
	}
}

// DebounceWait is how long a change seen at now waits before the pass it
// calls for, the last pass having started at last: until ScheduleDebounce
// after last. A burst of submits settles into one pass every
// ScheduleDebounce, while the first change after a quiet spell is
// scheduled at once instead of ScheduleDebounce later (an idle cluster's
// submit-to-start latency). It never exceeds ScheduleDebounce, even with
// a clock stepped back.
func DebounceWait(last, now time.Time) time.Duration {
	return min(ScheduleDebounce, max(0, last.Add(ScheduleDebounce).Sub(now)))
}

// Pass is one gather → decide → act round: Pass decides from the view
// (and hist, the last round's History, or nil), the round applies its
// plan in bounded batches, then asks Preemption on the state after its
// allocations. It returns the History for the next round, even with an
// error.
func (s Scheduler) Pass(ctx context.Context, v *fsm.View, hist *placement.History) (*placement.History, error) {
	now := s.Clock.Now()
	in := PassInput{View: v, Now: now, History: hist}
	in.Elastic = s.Gate == nil || s.Gate(ctx, fsm.CmdGrowJob, fsm.CmdGrowJob.Since()) == nil
	rejoin := fsm.GrowJob{Rejoin: true}
	in.Rejoin = in.Elastic && (s.Gate == nil || s.Gate(ctx, fsm.CmdGrowJob, fsm.Needs(fsm.CmdGrowJob, rejoin)) == nil) &&
		(s.Agents == nil || s.Agents(fsm.Needs(fsm.CmdGrowJob, rejoin)))
	in.Spread = s.Gate == nil || s.Gate(ctx, fsm.CmdAllocate, 5) == nil
	if s.Occupying != nil {
		in.Occupying = s.Occupying(v.Jobs())
	}
	p, err := Pass(in)
	if err != nil {
		return p.History, err
	}
	return p.History, s.act(ctx, v, p, now)
}

// act applies p, the plan a pass made from v at now.
func (s Scheduler) act(ctx context.Context, v *fsm.View, p Plan, now time.Time) error {
	for _, c := range []struct {
		jobs   []cluster.JobID
		reason string
		log    string
	}{
		{p.Cancel, cluster.ReasonDependencyNever, "job cancelled: its dependency can never be satisfied"},
		{p.Deadline, cluster.ReasonDeadline, "job ended DEADLINE: it could no longer end by its deadline"},
	} {
		for _, id := range c.jobs {
			r, err := s.Propose.Apply(ctx, fsm.CmdCancelJob, fsm.CancelJob{Job: id, Reason: c.reason, Time: now})
			if err != nil {
				return err
			}
			if r.Err == nil {
				s.Log.Info(c.log, "job", uint64(id))
			}
		}
	}
	if err := s.applyReasons(ctx, p.WaitReasons); err != nil {
		return err
	}
	if err := s.endPreemptions(ctx, p.EndPreemptions, now); err != nil {
		return err
	}
	placed := false // on some node other than Self
	for batch := range slices.Chunk(p.Allocations, MaxDecisionsPerApply) {
		r, err := s.Propose.Apply(ctx, fsm.CmdAllocate, fsm.Allocate{Time: now, Consumable: true, Decisions: batch})
		if err != nil {
			return err
		}
		for _, rej := range r.Rejected {
			// Placement and the FSM disagree: the FSM is right (it checks
			// double-booking again); the job stays pending for the next pass.
			s.Log.Warn("allocation refused by fsm", "job", uint64(rej.Job), "reason", rej.Reason)
		}
		for _, d := range batch {
			if !slices.ContainsFunc(r.Rejected, func(x fsm.Rejection) bool { return x.Job == d.Job }) {
				placed = placed || elsewhere(d, s.Self)
				s.Log.Info("job placed", "job", uint64(d.Job), "nodes", len(d.Nodes))
				s.Metrics.Placed()
				if j, ok := v.Job(d.Job); ok {
					s.Metrics.Started(now.Sub(j.SubmitTime))
				}
			}
		}
	}
	if err := s.applyReasons(ctx, p.Reasons); err != nil {
		return err
	}
	if err := s.grow(ctx, p.Grows, now); err != nil {
		return err
	}
	// Entries applied after the allocations carry their commit to the
	// followers already; an allocation on Self alone needs none.
	if placed && len(p.Reasons) == 0 && len(p.Grows) == 0 && s.Announce != nil {
		s.Announce()
	}
	if len(p.Order) == 0 {
		return nil // nothing was placed, so nothing waits on resources
	}
	// After this pass's allocations: whether the first job that waits on
	// resources may preempt others for them.
	if pre, ok := Preemption(s.State.View(), p.Order, p.Placed, now); ok {
		return s.startPreemptions(ctx, pre, now)
	}
	return nil
}

// elsewhere reports whether d places its job on a node other than self:
// a node that learns of the allocation only when it learns the commit.
func elsewhere(d fsm.Decision, self string) bool {
	return slices.ContainsFunc(d.Nodes, func(p fsm.Placement) bool { return p.Node != self })
}

// applyReasons records changed pending reasons in bounded batches.
func (s Scheduler) applyReasons(ctx context.Context, changed []fsm.JobReason) error {
	for batch := range slices.Chunk(changed, MaxReasonsPerApply) {
		if _, err := s.Propose.Apply(ctx, fsm.CmdSetReasons, fsm.SetReasons{Reasons: batch}); err != nil {
			return err
		}
	}
	return nil
}

// startPreemptions starts the victims' grace (PreemptJob: SIGTERM now,
// requeue or cancel at the deadline), as Preemption chose them.
func (s Scheduler) startPreemptions(ctx context.Context, pre Preemptions, now time.Time) error {
	for _, sh := range pre.Shrinks {
		j, ok := s.State.View().Job(sh.Job)
		if !ok {
			continue
		}
		r, err := s.Propose.Apply(ctx, fsm.CmdShrinkJob, fsm.ShrinkJob{Job: sh.Job, Incarnation: j.Incarnation, Node: sh.Node, Time: now})
		if err != nil {
			return err
		}
		if r.Err != nil {
			s.Log.Warn("shrink refused by fsm", "job", uint64(sh.Job), "node", sh.Node, "for", uint64(pre.For), "err", r.Err)
			continue
		}
		s.Metrics.Preempted()
		s.Log.Info("elastic job shrunk for a preempting job", "job", uint64(sh.Job), "node", sh.Node, "for", uint64(pre.For))
	}
	for _, id := range pre.Victims {
		r, err := s.Propose.Apply(ctx, fsm.CmdPreemptJob, fsm.PreemptJob{Job: id, By: pre.For, Deadline: pre.Deadline, Time: now})
		if err != nil {
			return err
		}
		if r.Err != nil {
			s.Log.Warn("preempt refused by fsm", "job", uint64(id), "for", uint64(pre.For), "err", r.Err)
			continue
		}
		s.Metrics.Preempted()
		s.Log.Info("job preempted", "job", uint64(id), "for", uint64(pre.For), "grace", pre.Deadline.Sub(now))
	}
	return nil
}

// endPreemptions ends the victims whose grace is over: requeued when they
// asked for it, else cancelled with reason Preempted.
func (s Scheduler) endPreemptions(ctx context.Context, ends []EndPreemption, now time.Time) error {
	for _, e := range ends {
		var r fsm.Result
		var err error
		if e.Requeue {
			r, err = s.Propose.Apply(ctx, fsm.CmdRequeueJob, fsm.RequeueJob{Job: e.Job, Time: now})
		} else {
			r, err = s.Propose.Apply(ctx, fsm.CmdCancelJob, fsm.CancelJob{Job: e.Job, Reason: cluster.ReasonPreempted, Time: now})
		}
		if err != nil {
			return err
		}
		if r.Err != nil {
			s.Log.Warn("end of preemption refused by fsm", "job", uint64(e.Job), "err", r.Err)
			continue
		}
		s.Log.Info("preempted job stopped", "job", uint64(e.Job), "requeued", e.Requeue)
	}
	return nil
}

// grow applies the pass's grows of elastic jobs.
func (s Scheduler) grow(ctx context.Context, grows []fsm.GrowJob, now time.Time) error {
	for _, g := range grows {
		g.Time = now
		r, err := s.Propose.Apply(ctx, fsm.CmdGrowJob, g)
		if err != nil {
			return err
		}
		if r.Err != nil {
			s.Log.Warn("grow refused by fsm", "job", uint64(g.Job), "err", r.Err)
			continue
		}
		s.Log.Info("elastic job grown", "job", uint64(g.Job), "nodes", len(g.Nodes))
	}
	return nil
}
