package leader

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/placement"
)

// PassInput is what a scheduling pass decides from.
type PassInput struct {
	// View is the replicated state the pass reads.
	View *fsm.View
	// Occupying are the jobs whose allocations placement counts as held;
	// nil means View.Jobs() (the only value outside a planted-bug build).
	Occupying []*cluster.Job
	// Now is the pass's time.
	Now time.Time
	// Elastic says every server speaks protocol 4: elastic jobs start
	// elastic (Decision.Elastic) and running ones grow (Plan.Grows).
	Elastic bool
	// Rejoin says every agent speaks protocol 5: a running elastic job
	// may take back a node it lost in the same run (GrowJob.Rejoin).
	Rejoin bool
	// Spread says every server speaks protocol 5: a job with -n starts
	// with its ranks laid out from its nodes' free CPUs
	// (placement.Options.Spread, fsm.Placement.Tasks).
	Spread bool
	// History is what an earlier pass derived from its view's archive
	// (that pass's Plan.History), or nil: the pass derives the same from
	// View.Archived() faster from it (placement.NewHistory), and decides
	// exactly as without it.
	History *placement.History
}

// EndPreemption is a victim whose grace is over.
type EndPreemption struct {
	Job cluster.JobID
	// Requeue: it asked to be requeued (--requeue, every batch job by
	// default); otherwise it is cancelled with reason Preempted.
	Requeue bool
}

// Plan is what a pass decided, in the order to apply it.
type Plan struct {
	// Cancel are pending jobs whose dependency can never be satisfied.
	Cancel []cluster.JobID
	// Deadline are pending jobs that could no longer end by their
	// --deadline: they end DEADLINE.
	Deadline []cluster.JobID
	// WaitReasons are the changed reasons of jobs kept from placement
	// (held, dependency, array throttle...), by job.
	WaitReasons []fsm.JobReason
	// EndPreemptions are victims to requeue or cancel now.
	EndPreemptions []EndPreemption
	// Allocations are placement's decisions, in its order.
	Allocations []fsm.Decision
	// Reasons are the changed pending reasons placement gave the jobs it
	// considered, in its queue order.
	Reasons []fsm.JobReason
	// Order is the queue order placement used, and Placed the reason of
	// each job it considered: Preemption's inputs.
	Order  []cluster.JobID
	Placed map[cluster.JobID]string
	// Grows are running elastic jobs to take more nodes (Grows), after
	// the allocations.
	Grows []fsm.GrowJob
	// History is the History of the view's archive when the pass needed
	// it, else PassInput.History: the next pass's PassInput.History.
	History *placement.History
}

// Pass is one scheduling round. Held jobs, unmet dependencies and full
// array throttles are not placement's business: such jobs wait with that
// reason, and one whose dependency can never hold is cancelled. The rest
// are placed as the queue policy's scheduler says (QueueOptions):
// topology-aware gangs with EASY backfill, taken in multifactor priority
// order ("shoal", the default) or shortest predicted service first with
// aging ("qssf"); a job with a --time limit may start ahead of a blocked
// one only if it cannot delay that job's reservation.
// The fair-share usage and run-time predictions read every job record,
// archived ones included; PassInput.History carries what they derive
// from the archive over from the last pass (see placement.History).
// It is pure: the same input always gives the same plan, and the same
// decisions whatever PassInput.History is.
func Pass(in PassInput) (Plan, error) {
	v, now := in.View, in.Now
	p := Plan{History: in.History}
	var pending []*cluster.Job
	gates := v.Gates(now)
	for _, j := range v.Jobs() {
		switch {
		case j.State == cluster.JobRunning && j.Preempt != nil && !now.Before(j.Preempt.Deadline):
			p.EndPreemptions = append(p.EndPreemptions, EndPreemption{Job: j.ID, Requeue: j.Spec.Requeue})
			continue
		case j.State != cluster.JobPending:
			continue
		}
		switch why := gates.Admit(j); why {
		case "":
			pending = append(pending, j)
		case cluster.ReasonDependencyNever:
			p.Cancel = append(p.Cancel, j.ID)
		case cluster.ReasonDeadline:
			p.Deadline = append(p.Deadline, j.ID)
		default:
			if j.Reason != why {
				p.WaitReasons = append(p.WaitReasons, fsm.JobReason{Job: j.ID, Reason: why})
			}
		}
	}
	slices.SortFunc(p.WaitReasons, func(x, y fsm.JobReason) int { return cmp.Compare(x.Job, y.Job) })
	if len(pending) == 0 && !(in.Elastic && len(growStandIns(v.Jobs(), now, in.Rejoin)) > 0) {
		return p, nil
	}

	occupying := in.Occupying
	if occupying == nil {
		occupying = v.Jobs()
	}
	var parts []cluster.Partition
	if pol := v.Policy(); pol != nil {
		parts = pol.Partitions
	}
	p.History = placement.NewHistory(in.History, v.Archived())
	prs := placement.PrioritiesWith(QueuePolicy(v), p.History, v.Jobs(), ClusterGPUs(v), now)
	opts := QueueOptions(QueuePolicy(v), prs, p.History, v.Jobs(), pending)
	opts.Spread = in.Spread
	if opts.Policy == placement.PolicyQSSF {
		p.Order = placement.QSSFOrder(pending, now, opts)
	} else {
		p.Order = opts.Order
	}
	res, err := placement.PlaceWith(placement.NewView(v.Nodes(), occupying).WithPartitions(parts).WithSwitchLinks(v.SwitchLinks()), pending, now, opts)
	if err != nil {
		return Plan{History: p.History}, fmt.Errorf("place %d pending jobs: %w", len(pending), err)
	}
	if in.Elastic {
		placed := startedAt(pending, res.Decisions, now)
		waiting := slices.DeleteFunc(slices.Clone(pending), func(j *cluster.Job) bool {
			return slices.ContainsFunc(placed, func(x *cluster.Job) bool { return x.ID == j.ID })
		})
		view := placement.NewView(v.Nodes(), append(slices.Clone(occupying), placed...)).WithPartitions(parts).WithSwitchLinks(v.SwitchLinks())
		if p.Grows, err = Grows(view, v.Jobs(), waiting, p.Order, now, in.Rejoin); err != nil {
			return Plan{History: p.History}, fmt.Errorf("grow elastic jobs: %w", err)
		}
	}
	for _, d := range res.Decisions {
		fd := fsm.Decision{Job: d.Job}
		if j, ok := v.Job(d.Job); ok && in.Elastic && j.Spec.Elastic() {
			fd.Elastic = true
		}
		for _, as := range d.Nodes {
			fd.Nodes = append(fd.Nodes, fsm.Placement{Node: as.Node, GPUs: as.GPUs, CPUs: as.CPUs, MemMiB: as.MemMiB, Tasks: as.Tasks})
		}
		p.Allocations = append(p.Allocations, fd)
	}
	for _, j := range pending {
		if r, ok := res.Reasons[j.ID]; ok && r != j.Reason {
			p.Reasons = append(p.Reasons, fsm.JobReason{Job: j.ID, Reason: r})
		}
	}
	p.Placed = res.Reasons
	return p, nil
}

// QueueOptions are the placement options that order the queue under pol:
// the multifactor order of prs (pol's Scheduler "shoal"), or under "qssf"
// placement.QSSFOrder's inputs — that order as its base and tie-break,
// each job's fair-share factor from prs, pol's StarveAfter and AgingHalf,
// and each pending job's run time predicted from the finished jobs of
// its user and of its shape, archived (hist, the History of the archive; nil for none) and
// live: placement.PredictorWith, which is PredictorFrom over both.
// It is pure: the pass's time reaches QSSFOrder through PlaceWith.
func QueueOptions(pol cluster.Policy, prs []placement.Priority, hist *placement.History, live, pending []*cluster.Job) placement.Options {
	opts := placement.Options{Policy: placement.PolicyShoal, Order: placement.PriorityOrder(prs)}
	if pol.SchedulerName() != cluster.SchedulerQSSF {
		return opts
	}
	opts.Policy = placement.PolicyQSSF
	opts.StarveAfter, opts.AgingHalf = pol.StarveAfter, pol.AgingHalf
	opts.FairShare = make(map[cluster.JobID]float64, len(prs))
	for _, pr := range prs {
		opts.FairShare[pr.Job] = pr.Factors.FairShare
	}
	pred := placement.PredictorWith(hist, live)
	opts.Estimates = make(map[cluster.JobID]time.Duration, len(pending))
	for _, j := range pending {
		if est := pred.Predict(j.Spec.User, j.Spec.Request); est > 0 {
			opts.Estimates[j.ID] = est
		}
	}
	return opts
}

// jobRecords are the jobs the queue order reads: the archived ones
// (still counted in fair-share usage and run-time predictions) and the
// live ones.
func jobRecords(v *fsm.View) []*cluster.Job {
	return append(slices.Clone(v.Archived()), v.Jobs()...)
}

// Priorities is every pending job's priority at now, in the order the
// scheduler takes them under the shoal scheduler (under qssf: the
// tie-break and fair-share factors of QSSFOrder). The pass computes the
// same from the same records (placement.PrioritiesWith, with the
// archive's History: the same bits) and GET /v1/priority calls it, so
// `shoal priority` shows exactly what the pass reads. Archived jobs
// still count in fair-share usage (decayed), as Slurm's usage outlives
// MinJobAge.
func Priorities(v *fsm.View, now time.Time) []placement.Priority {
	return placement.Priorities(QueuePolicy(v), jobRecords(v), ClusterGPUs(v), now)
}

// QueuePolicy is the replicated queue policy, or the default while none
// was set.
func QueuePolicy(v *fsm.View) cluster.Policy {
	if p := v.Policy(); p != nil {
		return *p
	}
	return cluster.DefaultPolicy()
}

// ClusterGPUs is what the job-size factor measures a request against: the
// GPUs of every node that is up.
func ClusterGPUs(v *fsm.View) int {
	n := 0
	for _, nd := range v.Nodes() {
		if nd.Status == cluster.NodeUp {
			n += len(nd.GPUs)
		}
	}
	return n
}

// FairShare is the fair-share tree at now (sshare), from the jobs and
// policy Priorities uses, so it shows the factors that order the queue.
func FairShare(v *fsm.View, now time.Time) []placement.ShareAssoc {
	return placement.FairShareTree(QueuePolicy(v), jobRecords(v), now)
}
