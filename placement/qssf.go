package placement

import (
	"cmp"
	"math/bits"
	"slices"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// DefaultStarveAfter is Options.StarveAfter's default: under PolicyQSSF
// a job that has waited this long goes ahead of every job that has not.
// Ten days, tuned on the Helios trace at 64 nodes (BENCHMARKS.md), where
// EASY backfill's p99 wait is 6 days: shorter thresholds turn a heavily
// loaded queue back into FIFO and raise both the average and p99 waits.
const DefaultStarveAfter = 10 * 24 * time.Hour

// DefaultAgingHalf is Options.AgingHalf's default: under PolicyQSSF a
// job's predicted service counts half after waiting this long, a third
// after twice as long, and so on.
const DefaultAgingHalf = time.Hour

// noLimitEstimate is the predicted run time of a job with neither an
// estimate nor a time limit: longer than any trace job, so such a job
// ranks as the largest of its size.
const noLimitEstimate = 365 * 24 * time.Hour

// minFairShare bounds the fair-share divisor, so that an association far
// over its share still ages to the front (its service counts at most
// 1/minFairShare times). It was 1/64: on the Helios trace with noisy
// limits and fair share, an over-share user's jobs then ranked as if 64
// times longer, aged past nothing within StarveAfter and waited until
// they starved: qssf's p99 wait was 1.01-1.63x EASY backfill's over
// three limit seeds. At 1/4 it is 0.85-1.03x (1/8: 0.90-1.17x), the
// average no higher (BENCHMARKS.md, "Issue 15's goal").
const minFairShare = 1.0 / 4

// QSSFOrder is the order PolicyQSSF takes queue's jobs in at now
// (shortest predicted service first with aging, after Helios'
// quasi-shortest-service-first and SJF with aging):
//
//  1. Starving jobs first: those that have waited Options.StarveAfter or
//     longer, in Options.Order (the multifactor order) or, without it, by
//     ID. The first of them that does not fit gets the EASY reservation,
//     and backfill never delays it, so once a job is the first starving
//     one it starts by the time limits of the jobs it waits behind,
//     whatever arrives after it (TestQSSFStarvationBound).
//  2. Then the others, by ascending score: the job's predicted service
//     (GPUs × Options.Estimates, else its TimeLimit) divided by
//     1 + wait/AgingHalf (aging) and by its fair-share factor
//     (Options.FairShare, floored at 1/4; 1 when absent); ties by
//     Options.Order, then ID.
//
// Scores are compared as float64 computed from integers in a fixed order,
// so every replica gets the same order. A job submitted after now counts
// as not waiting. QSSFOrder is pure.
func QSSFOrder(queue []*cluster.Job, now time.Time, opts Options) []cluster.JobID {
	starve, half := opts.StarveAfter, opts.AgingHalf
	if starve <= 0 {
		starve = DefaultStarveAfter
	}
	if half <= 0 {
		half = DefaultAgingHalf
	}
	jobs := byOrder(queue, opts.Order) // base order: rank is the position
	type keyed struct {
		id      cluster.JobID
		rank    int
		starved bool
		score   float64
	}
	ks := make([]keyed, len(jobs))
	for i, j := range jobs {
		wait := max(now.Sub(j.SubmitTime), 0)
		k := keyed{id: j.ID, rank: i, starved: wait >= starve}
		if !k.starved {
			req := j.Spec.Request
			gpus := max(int64(req.Nodes)*int64(req.GPUsPerNode), 1)
			est, ok := opts.Estimates[j.ID]
			if !ok || est <= 0 {
				est = req.TimeLimit
			}
			if est <= 0 {
				est = noLimitEstimate
			}
			service := float64(gpus) * est.Seconds()
			aged := service / (1 + float64(wait)/float64(half))
			f := 1.0
			if v, ok := opts.FairShare[j.ID]; ok {
				f = min(max(v, minFairShare), 1)
			}
			k.score = aged / f
		}
		ks[i] = k
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		switch {
		case a.starved != b.starved:
			if a.starved {
				return -1
			}
			return 1
		case a.starved:
			return cmp.Compare(a.rank, b.rank)
		}
		return cmp.Or(cmp.Compare(a.score, b.score), cmp.Compare(a.rank, b.rank))
	})
	ids := make([]cluster.JobID, len(ks))
	for i, k := range ks {
		ids[i] = k.id
	}
	return ids
}

// Predictor predicts a job's run time from its time limit and the
// recent jobs like it, for Options.Estimates: what a live cluster knows
// (Helios' QSSF predicts from user and job-name history; Shoal keeps no
// names). Limits are poor estimates, but how much of them jobs use can
// be learnt: Predictor keeps the used fractions (run time over limit, at
// most 1) of the last PredictorWindow finished jobs of each user, and of
// each shape (node count, GPUs per node and the limit's power-of-two
// class) among the jobs that name no user (the Alibaba trace names
// none; live jobs always do); Observe each finished job in the order
// they end. Predict is the job's limit times the mean used fraction of
// its user's jobs, or for a job without a user of its shape's; with no
// such history, the limit itself. With exact limits that is the limit.
// A new user's job gets its limit, not the fraction of other users' jobs
// of its shape: on the Helios and Philly traces with noisy limits that
// predicted worse than the limit (BENCHMARKS.md). A job without a limit
// gets the mean of the last run times of its user (of its shape, without
// a user: limitless jobs of its size), or 0 (unknown). The zero
// Predictor is ready to use; it keeps O(users + shapes) memory.
type Predictor struct {
	users  map[string]*recentRuns
	shapes map[shape]*recentRuns
}

// PredictorWindow is how many of a user's (a shape's) latest jobs
// Predictor keeps.
const PredictorWindow = 8

// shape is what Predictor groups the jobs of no user by: the gang's size
// and the limit's class (limitClass).
type shape struct {
	nodes, gpusPerNode, limitClass int
}

// shapeOf is req's shape.
func shapeOf(req cluster.Request) shape {
	return shape{nodes: req.Nodes, gpusPerNode: req.GPUsPerNode, limitClass: limitClass(req.TimeLimit)}
}

// limitClass is 0 for no limit, else 1 + the bit length of the limit in
// whole seconds: limits within a factor of two of each other (the round
// values users ask for: 1 h, 2 h, 4 h, 1 d, 7 d) mostly share a class.
func limitClass(limit time.Duration) int {
	if limit <= 0 {
		return 0
	}
	return 1 + bits.Len64(uint64(limit/time.Second))
}

// recentRuns is one user's or shape's last jobs, each in a ring.
type recentRuns struct {
	used  [PredictorWindow]float64 // run time over limit, jobs with a limit
	runs  [PredictorWindow]time.Duration
	nUsed int // jobs with a limit observed, all time
	nRuns int // jobs observed, all time
}

// Observe records that a job of user (empty: none, as in a trace without
// users: it is filed under its shape) with request req ran for ran;
// req.TimeLimit 0 means none.
func (p *Predictor) Observe(user string, req cluster.Request, ran time.Duration) {
	if user != "" {
		if p.users == nil {
			p.users = make(map[string]*recentRuns)
		}
		observe(p.users, user, ran, req.TimeLimit)
		return
	}
	if p.shapes == nil {
		p.shapes = make(map[shape]*recentRuns)
	}
	observe(p.shapes, shapeOf(req), ran, req.TimeLimit)
}

// observe adds a run to m[k]'s rings.
func observe[K comparable](m map[K]*recentRuns, k K, ran, limit time.Duration) {
	u := m[k]
	if u == nil {
		u = &recentRuns{}
		m[k] = u
	}
	ran = max(ran, 0)
	u.runs[u.nRuns%PredictorWindow] = ran
	u.nRuns++
	if limit > 0 {
		u.used[u.nUsed%PredictorWindow] = min(float64(ran)/float64(limit), 1)
		u.nUsed++
	}
}

// Predict is the predicted run time of a job of user (empty: none) with
// request req: from the user's history, or with no user from the shape's;
// see Predictor. It is never more than a positive limit,
// and at least 1 s when known.
func (p *Predictor) Predict(user string, req cluster.Request) time.Duration {
	limit := req.TimeLimit
	if user != "" {
		if est, ok := p.users[user].predict(limit); ok {
			return est
		}
		return max(limit, 0)
	}
	if est, ok := p.shapes[shapeOf(req)].predict(limit); ok {
		return est
	}
	return max(limit, 0)
}

// predict is u's prediction for a job with limit limit, or false when u
// (nil: never seen) has no run that tells: limit times the mean used
// fraction, or without a limit the mean run time.
func (u *recentRuns) predict(limit time.Duration) (time.Duration, bool) {
	if u == nil {
		return 0, false
	}
	if limit > 0 {
		k := min(u.nUsed, PredictorWindow)
		if k == 0 {
			return 0, false
		}
		sum := 0.0
		for _, f := range u.used[:k] { // summed in ring order: deterministic
			sum += f
		}
		return min(max(time.Duration(float64(limit)*(sum/float64(k))), time.Second), limit), true
	}
	k := min(u.nRuns, PredictorWindow)
	if k == 0 {
		return 0, false
	}
	var sum time.Duration
	for _, r := range u.runs[:k] {
		sum += r
	}
	return max(sum/time.Duration(k), time.Second), true
}

// PredictorFrom builds a Predictor from job records, as the leader has
// them: every job that ran and ended (a start and an end time), observed
// in order of end time, ties by ID. It is pure.
func PredictorFrom(jobs []*cluster.Job) *Predictor {
	var done []*cluster.Job
	for _, j := range jobs {
		if j != nil && j.State.Terminal() && !j.StartTime.IsZero() && !j.EndTime.IsZero() {
			done = append(done, j)
		}
	}
	slices.SortFunc(done, func(a, b *cluster.Job) int {
		return cmp.Or(a.EndTime.Compare(b.EndTime), cmp.Compare(a.ID, b.ID))
	})
	p := &Predictor{}
	for _, j := range done {
		p.Observe(j.Spec.User, j.Spec.Request, j.EndTime.Sub(j.StartTime))
	}
	return p
}
