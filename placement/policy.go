package placement

import (
	"fmt"
	"math/bits"
	"slices"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// Policy names a queue and placement policy for PlaceWith.
type Policy string

// The policies. All place gangs all-or-nothing and take jobs in ascending
// ID order; they differ in where a job goes and in whether a later job may
// start while an earlier one waits.
const (
	// PolicyFIFO is strict FIFO with no topology preference: the first
	// job that does not fit holds back every later one, and a gang takes
	// the first usable nodes by name with enough free GPUs, and on each
	// node its lowest free GPUs.
	PolicyFIFO Policy = "fifo"
	// PolicyBackfill is EASY backfill (see PlaceWith) with PolicyFIFO's
	// first-fit placement.
	PolicyBackfill Policy = "backfill"
	// PolicyShoal is Place's topology-aware placement (one leaf switch,
	// else fewest leaves under one parent; best fit; NVLink and NUMA
	// inside a node) with EASY backfill.
	PolicyShoal Policy = "shoal"
	// PolicyQSSF is PolicyShoal's placement and EASY backfill taking
	// jobs in QSSFOrder instead: starving jobs first, then shortest
	// predicted service (GPUs × predicted run time) first, aged and
	// weighted by fair share. The leader's pass uses it when the queue
	// policy's scheduler is qssf (leader.QueueOptions): Order from
	// PriorityOrder(prs), FairShare from each prs[i].Factors.FairShare
	// and Estimates from PredictorFrom(its jobs).Predict(user, limit).
	PolicyQSSF Policy = "qssf"
)

// Policies returns every policy, in the order tools list them.
func Policies() []Policy { return []Policy{PolicyFIFO, PolicyBackfill, PolicyShoal, PolicyQSSF} }

// ParsePolicy returns the policy named s, or an error naming the
// accepted names.
func ParsePolicy(s string) (Policy, error) {
	if p := Policy(s); slices.Contains(Policies(), p) {
		return p, nil
	}
	return "", fmt.Errorf("policy %q: want fifo, backfill, shoal or qssf", s)
}

// Options tune PlaceWith.
type Options struct {
	// Policy is the policy to apply; the zero value means PolicyShoal.
	Policy Policy
	// OmitReasons leaves Result.Reasons empty, sparing a map entry per
	// waiting job per call for a caller that reads only the decisions
	// (the trace simulator, which calls PlaceWith after every event).
	OmitReasons bool
	// Order, when set, is the order jobs are taken in (the leader passes
	// PriorityOrder(Priorities(...))): the EASY reservation then goes to
	// the first job in it that does not fit. Queue jobs it does not name
	// come after it, by ID. Nil keeps ascending ID order.
	Order []cluster.JobID
	// Estimates, FairShare, StarveAfter and AgingHalf are read by
	// PolicyQSSF only (see QSSFOrder). Estimates are predicted run times
	// (a Predictor's); a job without one is predicted to run its
	// TimeLimit. FairShare is each job's fair-share factor in [0,1]
	// (Priority.Factors.FairShare); a job without one counts 1. Zero
	// StarveAfter and AgingHalf mean DefaultStarveAfter and
	// DefaultAgingHalf.
	Estimates   map[cluster.JobID]time.Duration
	FairShare   map[cluster.JobID]float64
	StarveAfter time.Duration
	AgingHalf   time.Duration
	// Spread lays out the ranks of a job with NTasks (not elastic) when
	// it starts, as Slurm sizes them, from the CPUs its
	// nodes have free (Assignment.Tasks; see spreadTasks). The leader
	// sets it once every server applies such decisions (protocol 5).
	Spread bool
}

// Reservation is where and when the first job that cannot start now will
// start at the latest if every job holding resources ends by its time
// limit: the earliest moment enough of them have ended, and the nodes and
// GPUs the policy would give it then. Nodes are in rank order, as in a
// Decision.
type Reservation struct {
	Job   cluster.JobID
	Start time.Time
	Nodes []Assignment
}

// PlaceWith is Place under a chosen policy. Jobs are taken in ascending
// ID order, or in Options.Order when given, and placed as the policy says until one does not fit: that job
// pends with Resources. Under PolicyFIFO every later job then pends with
// Priority. The backfilling policies (PolicyBackfill, PolicyShoal) do EASY
// backfill instead:
//
//   - The blocked job gets a Reservation: the View's jobs holding
//     resources, and the jobs this call started before it, are freed in
//     order of their expected ends (StartTime + Request.TimeLimit; now +
//     TimeLimit for this call's; an end already past counts as now) until
//     the job fits. A job with no time limit never ends here.
//   - Every later job may still start now, but only if it ends by the
//     reservation (it has a TimeLimit and now + TimeLimit is not after
//     Reservation.Start) or it fits without any reserved GPU. Either way
//     the reserved GPUs are free at Reservation.Start when limits hold, so
//     backfill never delays the reservation. Jobs that do not start pend
//     with Priority.
//   - When no reservation exists (the job waits on GPUs held by jobs with
//     no limit), later jobs wait as under PolicyFIFO: backfilling then
//     could starve the blocked job for ever.
//
// EASY (one reservation, for the first blocked job) rather than
// conservative backfill (one per waiting job) keeps a call linear in the
// queue, and with exact limits it already bounds the head job's wait; the
// reservation is computed afresh on every call, so it only ever moves
// earlier as jobs end early.
//
// An unknown Policy is an error. PlaceWith is as pure as Place: the same
// View, queue, now and options always give the same Result, and neither
// the View nor the jobs are modified.
func PlaceWith(v *View, queue []*cluster.Job, now time.Time, opts Options) (Result, error) {
	var r rules
	switch opts.Policy {
	case PolicyFIFO:
	case PolicyBackfill:
		r.backfill = true
	case PolicyShoal, "":
		r = rules{topology: true, backfill: true}
	case PolicyQSSF:
		r = rules{topology: true, backfill: true, order: QSSFOrder(queue, now, opts), spread: opts.Spread}
		return place(v, queue, now, r, opts.OmitReasons), nil
	default:
		return Result{Reasons: make(map[cluster.JobID]string)}, fmt.Errorf("policy %q: want fifo, backfill, shoal or qssf", opts.Policy)
	}
	r.order, r.spread = opts.Order, opts.Spread
	return place(v, queue, now, r, opts.OmitReasons), nil
}

// reserve finds job id's reservation: it frees, in a copy of s, the
// View's holders and done (jobs this call started) in order of expected
// end until req fits, and places it there as the policy would. It returns
// nil when req does not fit even once every job with a limit has ended.
//
// A GPU that two holders list (View.dup) counts as free from the first
// end: such a reservation may come too early, never too late, and only
// backfill decisions read it.
func (s *state) reserve(id cluster.JobID, req cluster.Request, done []started, now time.Time, topology bool) *Reservation {
	held := s.v.held
	// held is sorted by end with never-ending jobs last; so is done, once
	// sorted, since its ends are now + limit.
	done = slices.Clone(done)
	slices.SortStableFunc(done, func(a, b started) int { return holderOrder(a.end, 0, b.end, 0) })
	endOf := func(t time.Time) time.Time {
		if !t.IsZero() && t.Before(now) {
			return now
		}
		return t
	}
	f := s.clone()
	i, k := 0, 0
	for {
		// The next end, over both sorted lists; zero ends (never) are last.
		var t time.Time
		if i < len(held) && !held[i].end.IsZero() {
			t = endOf(held[i].end)
		}
		if k < len(done) && !done[k].end.IsZero() && (t.IsZero() || done[k].end.Before(t)) {
			t = done[k].end
		}
		if t.IsZero() {
			return nil
		}
		for ; i < len(held) && !held[i].end.IsZero() && !endOf(held[i].end).After(t); i++ {
			for _, h := range held[i].nodes {
				f.give(h)
				f.vacate(h.node, held[i].excl)
			}
		}
		for ; k < len(done) && !done[k].end.IsZero() && !done[k].end.After(t); k++ {
			for _, h := range done[k].held {
				f.give(h)
				f.vacate(h.node, done[k].excl)
			}
		}
		if !f.mayFit(req.Nodes, req.GPUsPerNode) {
			continue
		}
		d, _, ok := f.start(id, req, topology, nil, false)
		if !ok {
			continue
		}
		return &Reservation{Job: id, Start: t, Nodes: d.Nodes}
	}
}

// without returns a copy of s with the reservation's GPUs that are free
// now taken, and its nodes occupied by it (whole when excl): no job that
// would still run at the reservation may take them whole, nor share them
// with an exclusive reservation.
func (s *state) without(r *Reservation, excl bool) *state {
	m := s.clone()
	for _, a := range r.Nodes {
		ni := s.v.byName[a.Node]
		m.takeFree(heldNode{node: ni, gpus: a.GPUs, cpus: a.CPUs, mem: a.MemMiB})
		m.occupy(ni, excl)
	}
	return m
}

// firstFit returns the first req.Nodes usable nodes, by name, with req's
// GPUs, CPUs and memory free, or nil when there are not that many.
func (s *state) firstFit(req cluster.Request) []int {
	count, g, c, m := req.Nodes, req.GPUsPerNode, req.CPUsPerNode(), req.MemPerNode()
	if !s.mayFit(count, g) {
		return nil
	}
	nodes := make([]int, 0, count)
	for i := range s.v.nodes {
		if s.v.nodes[i].usable && s.fitsNow(i, g, c, m) {
			nodes = append(nodes, i)
			if len(nodes) == count {
				return nodes
			}
		}
	}
	return nil
}

// lowestGPUs returns node ni's g lowest free GPU positions (nil for g 0).
// The node must have g free.
func (s *state) lowestGPUs(ni, g int) []int {
	if g <= 0 {
		return nil
	}
	n := &s.v.nodes[ni]
	gpus := make([]int, 0, g)
	for w := 0; len(gpus) < g && w < wordsFor(len(n.node.GPUs)); w++ {
		for x := s.words[n.off+w]; x != 0 && len(gpus) < g; x &= x - 1 {
			gpus = append(gpus, w*64+bits.TrailingZeros64(x))
		}
	}
	return gpus
}
