package sim

import (
	"container/heap"
	"errors"
	"fmt"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/placement"
)

// Options choose the simulated cluster and the policy.
type Options struct {
	Cluster Cluster
	Policy  placement.Policy
	// Limits is how job time limits are set (zero: LimitsExact); Seed
	// draws LimitsNoisy's limits.
	Limits Limits
	Seed   uint64
	// StarveAfter and AgingHalf tune PolicyQSSF (placement.Options);
	// zero means placement's defaults.
	StarveAfter, AgingHalf time.Duration
	// FairShare orders the queue as the leader does: every pass takes
	// jobs in the multifactor priority order of placement.Priorities
	// under cluster.DefaultPolicy (age and fair share, users from the
	// trace, one account) and gives PolicyQSSF each job's fair-share
	// factor. Off, jobs are taken by ID (fifo, backfill, shoal) and QSSF
	// counts every job at F = 1.
	FairShare bool
}

// Outcome is what became of one trace job.
type Outcome struct {
	Job Job
	// ID is the job's queue position: 1, 2, ... in trace order.
	ID      cluster.JobID
	Request cluster.Request
	// Unplaceable says why the job could never fit the simulated cluster;
	// empty for a job that ran.
	Unplaceable string
	// Start and End are seconds on the trace's clock; End is Start plus
	// the duration.
	Start, End int64
	// Nodes is the gang in rank order.
	Nodes []placement.Assignment
	// Leaves is how many leaf switches the gang spans.
	Leaves int
}

// Ran reports whether the job was placed (every placeable job is).
func (o *Outcome) Ran() bool { return o.Unplaceable == "" }

// Sample is the cluster after the scheduling pass at Time.
type Sample struct {
	Time     int64 // seconds on the trace's clock
	BusyGPUs int   // GPUs held by running jobs
	Queued   int   // jobs waiting
	Running  int   // jobs running
}

// Result is a whole replay.
type Result struct {
	Options Options
	// Jobs holds every trace job, in trace order (by ID).
	Jobs []Outcome
	// Passes counts scheduling passes (PlaceWith calls).
	Passes int
	// Timeline has one sample per event timestamp.
	Timeline []Sample
}

// completion is a running job's end event.
type completion struct {
	end int64
	job int // index in Result.Jobs
}

type completions []completion

func (h completions) Len() int { return len(h) }
func (h completions) Less(a, b int) bool {
	return h[a].end < h[b].end || (h[a].end == h[b].end && h[a].job < h[b].job)
}
func (h completions) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *completions) Push(x any)   { *h = append(*h, x.(completion)) }
func (h *completions) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// at converts trace seconds to the time placement sees.
func at(s int64) time.Time { return time.Unix(s, 0).UTC() }

// Replay runs jobs (sorted by Submit, as Parse returns them) through the
// policy on the simulated cluster, event by event: at each distinct
// timestamp it ends the jobs due, queues the jobs submitted, and runs one
// scheduling pass over the whole queue; every started job ends exactly
// its duration later. It keeps one placement.View for the whole replay,
// updated with Start and Finish. It fails on an invalid Options, on jobs
// out of submit order, and (a bug, never expected) if placement proposes
// a GPU that is taken or leaves a placeable job waiting on an idle
// cluster.
func Replay(jobs []Job, opts Options) (*Result, error) {
	if err := opts.Cluster.Validate(); err != nil {
		return nil, err
	}
	if _, err := ParseLimits(string(opts.Limits)); err != nil {
		return nil, err
	}
	if _, err := placement.PlaceWith(nil, nil, time.Time{}, placement.Options{Policy: opts.Policy}); err != nil {
		return nil, err
	}
	c := opts.Cluster
	nodes := c.Build()
	nodeIdx := make(map[string]int, len(nodes))
	for i, n := range nodes {
		nodeIdx[n.Name] = i
	}
	res := &Result{Options: opts, Jobs: make([]Outcome, len(jobs))}
	cjobs := make([]cluster.Job, len(jobs)) // what placement sees, by index
	for i, j := range jobs {
		if i > 0 && j.Submit < jobs[i-1].Submit {
			return nil, fmt.Errorf("job %q: submitted at %d, before job %q at %d; want jobs sorted by submit time",
				j.ID, j.Submit, jobs[i-1].ID, jobs[i-1].Submit)
		}
		o := &res.Jobs[i]
		o.Job, o.ID, o.Request = j, cluster.JobID(i+1), c.Request(j)
		o.Request.TimeLimit = time.Duration(opts.limit(i, j)) * time.Second
		if err := placement.Check(nodes, o.Request); err != nil {
			o.Unplaceable = err.Error()
		}
		cjobs[i] = cluster.Job{ID: o.ID, State: cluster.JobPending, SubmitTime: at(j.Submit),
			Spec: cluster.Spec{Request: o.Request, User: j.User}}
	}

	known := make([]*cluster.Job, len(cjobs))
	for i := range cjobs {
		known[i] = &cjobs[i]
	}
	view := placement.NewView(nodes, nil)
	popts := placement.Options{Policy: opts.Policy, OmitReasons: true,
		StarveAfter: opts.StarveAfter, AgingHalf: opts.AgingHalf}
	// QSSF predicts run times from the finished jobs of each user and
	// shape, as the leader would from its job records
	// (placement.PredictorFrom).
	qssf := opts.Policy == placement.PolicyQSSF
	var predictor placement.Predictor
	if qssf {
		popts.Estimates = make(map[cluster.JobID]time.Duration)
	}
	if opts.FairShare {
		popts.FairShare = make(map[cluster.JobID]float64)
	}
	fsPolicy := cluster.DefaultPolicy()
	var (
		pending []*cluster.Job // by ID
		ends    completions
		next    int // next job to submit
		busy    int // GPUs held
	)
	for next < len(jobs) || len(ends) > 0 {
		now := int64(-1)
		if next < len(jobs) {
			now = jobs[next].Submit
		}
		if len(ends) > 0 && (now < 0 || ends[0].end < now) {
			now = ends[0].end
		}
		for len(ends) > 0 && ends[0].end == now {
			e := heap.Pop(&ends).(completion)
			if err := view.Finish(res.Jobs[e.job].ID); err != nil {
				return nil, err
			}
			busy -= gpusHeld(&res.Jobs[e.job])
			cjobs[e.job].State, cjobs[e.job].EndTime = cluster.JobCompleted, at(now)
			if qssf {
				o := &res.Jobs[e.job]
				predictor.Observe(o.Job.User, o.Request, time.Duration(o.End-o.Start)*time.Second)
			}
		}
		for ; next < len(jobs) && jobs[next].Submit == now; next++ {
			if res.Jobs[next].Ran() {
				pending = append(pending, &cjobs[next])
			}
		}
		if len(pending) > 0 {
			if qssf {
				clear(popts.Estimates)
				for _, j := range pending {
					popts.Estimates[j.ID] = predictor.Predict(j.Spec.User, j.Spec.Request)
				}
			}
			if opts.FairShare {
				// Every job submitted so far: usage comes from the
				// allocations of those that ran.
				prs := placement.Priorities(fsPolicy, known[:next], c.TotalGPUs(), at(now))
				popts.Order = placement.PriorityOrder(prs)
				clear(popts.FairShare)
				for _, p := range prs {
					popts.FairShare[p.Job] = p.Factors.FairShare
				}
			}
			pr, err := placement.PlaceWith(view, pending, at(now), popts)
			if err != nil {
				return nil, err
			}
			res.Passes++
			for _, d := range pr.Decisions {
				i := int(d.Job) - 1
				o, cj := &res.Jobs[i], &cjobs[i]
				o.Start, o.End, o.Nodes = now, now+o.Job.Duration, d.Nodes
				o.Leaves = leaves(c, nodeIdx, d.Nodes)
				cj.State, cj.StartTime = cluster.JobRunning, at(now)
				cj.Alloc = &cluster.Allocation{Nodes: make([]cluster.NodeAlloc, len(d.Nodes))}
				for k, a := range d.Nodes {
					cj.Alloc.Nodes[k] = cluster.NodeAlloc{Node: a.Node, GPUs: a.GPUs, CPUs: a.CPUs, MemMiB: a.MemMiB, State: cluster.TaskRunning}
				}
				if err := view.Start(cj); err != nil {
					return nil, fmt.Errorf("job %q at %d: placement proposed %+v: %w", o.Job.ID, now, d.Nodes, err)
				}
				busy += gpusHeld(o)
				heap.Push(&ends, completion{end: o.End, job: i})
			}
			if len(pr.Decisions) > 0 {
				kept := pending[:0]
				for _, j := range pending {
					if j.State == cluster.JobPending {
						kept = append(kept, j)
					}
				}
				clear(pending[len(kept):])
				pending = kept
			}
		}
		res.Timeline = append(res.Timeline, Sample{Time: now, BusyGPUs: busy, Queued: len(pending), Running: len(ends)})
	}
	if len(pending) > 0 {
		return nil, errors.New(stuck(res, pending))
	}
	return res, nil
}

// stuck describes jobs left waiting once nothing runs: a bug in
// placement (Check and the policy disagree) rather than in the trace.
func stuck(res *Result, pending []*cluster.Job) string {
	o := &res.Jobs[int(pending[0].ID)-1]
	return fmt.Sprintf("%d jobs never started on an idle cluster, the first %q (%d nodes x %d GPUs)",
		len(pending), o.Job.ID, o.Request.Nodes, o.Request.GPUsPerNode)
}

// gpusHeld is how many GPUs a placed job holds.
func gpusHeld(o *Outcome) int {
	n := 0
	for _, a := range o.Nodes {
		n += len(a.GPUs)
	}
	return n
}

// leaves counts the distinct leaf switches of a gang.
func leaves(c Cluster, nodeIdx map[string]int, as []placement.Assignment) int {
	seen := make(map[int]bool, len(as))
	for _, a := range as {
		seen[c.Leaf(nodeIdx[a.Node])] = true
	}
	return len(seen)
}
