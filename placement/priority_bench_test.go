package placement

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// BenchmarkPriorities is one scheduling pass's priority computation on a
// large queue: 10,000 pending jobs and 100,000 finished ones (whose
// allocations are the fair-share usage) from 500 users in 20 accounts.
func BenchmarkPriorities(b *testing.B) {
	p, jobs := benchQueue()
	b.ReportAllocs()
	for b.Loop() {
		if ps := Priorities(p, jobs, 80000, now); len(ps) != benchPending {
			b.Fatalf("%d priorities; want %d", len(ps), benchPending)
		}
	}
}

// BenchmarkQSSFInputs is what a pass adds under PolicyQSSF on the same
// queue: run-time predictions from the 100,000 finished jobs and
// QSSFOrder over the 10,000 pending ones.
func BenchmarkQSSFInputs(b *testing.B) {
	p, jobs := benchQueue()
	prs := Priorities(p, jobs, 80000, now)
	pending := jobs[len(jobs)-benchPending:]
	opts := Options{Order: PriorityOrder(prs), FairShare: make(map[cluster.JobID]float64, len(prs))}
	for _, pr := range prs {
		opts.FairShare[pr.Job] = pr.Factors.FairShare
	}
	b.ReportAllocs()
	for b.Loop() {
		pred := PredictorFrom(jobs)
		opts.Estimates = make(map[cluster.JobID]time.Duration, len(pending))
		for _, j := range pending {
			opts.Estimates[j.ID] = pred.Predict(j.Spec.User, j.Spec.Request)
		}
		if ids := QSSFOrder(pending, now, opts); len(ids) != benchPending {
			b.Fatalf("%d ordered; want %d", len(ids), benchPending)
		}
	}
}

// benchPending is how many of benchQueue's jobs are pending (the last).
const benchPending = 10000

// benchQueue is a large queue: 10,000 pending jobs and 100,000 finished
// ones from 500 users in 20 accounts, and a policy with every factor.
func benchQueue() (cluster.Policy, []*cluster.Job) {
	const pendingJobs, historical, users, accounts = benchPending, 100000, 500, 20
	p := cluster.DefaultPolicy()
	p.Weights.JobSize, p.Weights.QoS = 500, 2000
	for a := range accounts {
		p.Accounts = append(p.Accounts, cluster.AccountShare{Name: fmt.Sprintf("acct%02d", a), Shares: int64(1 + a)})
	}
	p.QoS = []cluster.QoSLevel{{Name: "high", Priority: 100}, {Name: "normal", Priority: 10}}
	jobs := make([]*cluster.Job, 0, pendingJobs+historical)
	for i := range pendingJobs + historical {
		u := i * 7919 % users
		j := &cluster.Job{
			ID: cluster.JobID(i + 1),
			Spec: cluster.Spec{
				User: fmt.Sprintf("user%03d", u), Account: fmt.Sprintf("acct%02d", u%accounts),
				QoS:     []string{"normal", "high", ""}[i%3],
				Request: cluster.Request{Nodes: 1 + i%4, GPUsPerNode: 8, TasksPerNode: 1, TimeLimit: time.Duration(1+i%8) * time.Hour},
			},
			SubmitTime: now.Add(-time.Duration(pendingJobs+historical-i) * time.Minute),
		}
		if i < historical {
			j.State = cluster.JobCompleted
			j.StartTime = j.SubmitTime.Add(time.Minute)
			j.EndTime = j.StartTime.Add(time.Duration(1+i%240) * time.Minute)
			j.Alloc = &cluster.Allocation{}
			for n := range j.Spec.Request.Nodes {
				j.Alloc.Nodes = append(j.Alloc.Nodes, cluster.NodeAlloc{Node: fmt.Sprint("n", n), GPUs: seq(0, 7), Released: true})
			}
		} else {
			j.State = cluster.JobPending
		}
		jobs = append(jobs, j)
	}
	return p, jobs
}

// BenchmarkPrioritiesWarm is BenchmarkPriorities as the leader's pass
// computes it with the cache warm: the 100,000 finished jobs archived
// and digested by an earlier pass (History), the 10,000 pending ones
// live. Same priorities, bit for bit (TestHistoryIdentity).
func BenchmarkPrioritiesWarm(b *testing.B) {
	p, jobs := benchQueue()
	benchPrioritiesWarm(b, p, jobs)
}

// BenchmarkPrioritiesWarmNoDecay is BenchmarkPrioritiesWarm under a
// policy without decay (half_life 0): the archive's usage is then the
// same at every now after its last end, summed once in the History.
func BenchmarkPrioritiesWarmNoDecay(b *testing.B) {
	p, jobs := benchQueue()
	p.HalfLife = 0
	benchPrioritiesWarm(b, p, jobs)
}

// benchPrioritiesWarm times PrioritiesWith under policy p over the
// pending tail of jobs, the rest archived and digested once before.
func benchPrioritiesWarm(b *testing.B, p cluster.Policy, jobs []*cluster.Job) {
	archive, live := jobs[:len(jobs)-benchPending], jobs[len(jobs)-benchPending:]
	h := NewHistory(nil, archive)
	b.ReportAllocs()
	for b.Loop() {
		if ps := PrioritiesWith(p, NewHistory(h, archive), live, 80000, now); len(ps) != benchPending {
			b.Fatalf("%d priorities; want %d", len(ps), benchPending)
		}
	}
}

// BenchmarkQSSFInputsWarm is BenchmarkQSSFInputs with the cache warm:
// predictions from the archive's History and the live jobs
// (PredictorWith), then QSSFOrder over the 10,000 pending jobs.
func BenchmarkQSSFInputsWarm(b *testing.B) {
	p, jobs := benchQueue()
	archive, live := jobs[:len(jobs)-benchPending], jobs[len(jobs)-benchPending:]
	h := NewHistory(nil, archive)
	prs := PrioritiesWith(p, h, live, 80000, now)
	opts := Options{Order: PriorityOrder(prs), FairShare: make(map[cluster.JobID]float64, len(prs))}
	for _, pr := range prs {
		opts.FairShare[pr.Job] = pr.Factors.FairShare
	}
	b.ReportAllocs()
	for b.Loop() {
		pred := PredictorWith(NewHistory(h, archive), live)
		opts.Estimates = make(map[cluster.JobID]time.Duration, len(live))
		for _, j := range live {
			opts.Estimates[j.ID] = pred.Predict(j.Spec.User, j.Spec.Request)
		}
		if ids := QSSFOrder(live, now, opts); len(ids) != benchPending {
			b.Fatalf("%d ordered; want %d", len(ids), benchPending)
		}
	}
}

// BenchmarkNewHistory is what a pass adds when the archive changed since
// the last one: "cold" digests the 100,000 finished jobs from scratch
// (the first pass of a leader, or after a restore); "archived" carries
// an earlier History over after one archive command that moved 1,000
// more finished jobs in and dropped the 1,000 oldest (the archive at its
// ArchiveMax).
func BenchmarkNewHistory(b *testing.B) {
	_, jobs := benchQueue()
	archive := jobs[:len(jobs)-benchPending]
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			NewHistory(nil, archive)
		}
	})
	b.Run("archived", func(b *testing.B) {
		const moved = 1000
		prev := NewHistory(nil, archive[:len(archive)-moved])
		next := archive[moved:]
		b.ReportAllocs()
		for b.Loop() {
			NewHistory(prev, next)
		}
	})
}

// BenchmarkPredictor is the run-time predictor alone on benchQueue's
// records: "records" builds it from every record (PredictorFrom, what
// each qssf pass did: sort the 100,000 finished jobs by end), "history"
// from the archive's History and the live jobs (PredictorWith, a pass
// with the cache warm). Both give the same Predictor.
func BenchmarkPredictor(b *testing.B) {
	_, jobs := benchQueue()
	archive, live := jobs[:len(jobs)-benchPending], jobs[len(jobs)-benchPending:]
	b.Run("records", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			PredictorFrom(jobs)
		}
	})
	b.Run("history", func(b *testing.B) {
		h := NewHistory(nil, archive)
		b.ReportAllocs()
		for b.Loop() {
			PredictorWith(NewHistory(h, archive), live)
		}
	})
}
