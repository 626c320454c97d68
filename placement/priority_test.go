package placement

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/shoal-sched/shoal/cluster"
	"pgregory.net/rapid"
)

// near reports whether a and b agree to 1e-9 relative.
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestDecayedUsage(t *testing.T) {
	h := time.Hour
	for _, tc := range []struct {
		name       string
		start, end time.Time
		half       time.Duration
		want       float64
	}{
		// 3600/ln2 × (2^-1 − 2^-2), by hand: 1298.4255368...
		{"held two to one hours ago", now.Add(-2 * h), now.Add(-h), h, 1298.4255368000672},
		// 3600/ln2 × (1 − 2^-1) = 2596.85...
		{"running for one half-life", now.Add(-h), now, h, 2596.8510736001344},
		{"end after now is cut at now", now.Add(-h), now.Add(5 * h), h, 2596.8510736001344},
		{"no decay", now.Add(-2 * h), now.Add(-h), 0, 3600},
		{"empty interval", now.Add(-h), now.Add(-h), h, 0},
		{"starts in the future", now.Add(h), now.Add(2 * h), h, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DecayedUsage(tc.start, tc.end, now, tc.half); !near(got, tc.want) {
				t.Fatalf("DecayedUsage = %v; want %v", got, tc.want)
			}
		})
	}
}

// job returns a job of user in account with the given state.
func pjob(id cluster.JobID, st cluster.JobState, user, account string, nodes, gpus int) *cluster.Job {
	j := pending(id, nodes, gpus)
	j.State = st
	j.Spec.User, j.Spec.Account = user, account
	j.SubmitTime = now
	return j
}

// used returns a finished job of user in account that held gpus GPUs on
// one node over [now-from, now-to].
func used(id cluster.JobID, user, account string, gpus int, from, to time.Duration) *cluster.Job {
	j := pjob(id, cluster.JobCompleted, user, account, 1, gpus)
	j.Alloc = &cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: "n1", GPUs: seq(0, gpus-1), Released: true}}}
	j.StartTime, j.EndTime = now.Add(-from), now.Add(-to)
	return j
}

func factorOf(t *testing.T, ps []Priority, id cluster.JobID) Priority {
	t.Helper()
	for _, p := range ps {
		if p.Job == id {
			return p
		}
	}
	t.Fatalf("no priority for job %d in %+v", id, ps)
	return Priority{}
}

func TestPriorityFactors(t *testing.T) {
	h := time.Hour
	pol := cluster.Policy{
		Weights:  cluster.Weights{Age: 1000, FairShare: 10000, JobSize: 400, QoS: 2000},
		MaxAge:   10 * h,
		HalfLife: 0,
		QoS:      []cluster.QoSLevel{{Name: "high", Priority: 100}, {Name: "normal", Priority: 25}},
	}
	for _, tc := range []struct {
		name  string
		job   func() *cluster.Job
		gpus  int
		pol   func(*cluster.Policy)
		want  Factors
		prio  int64
		extra []*cluster.Job
	}{
		{name: "age half of max", job: func() *cluster.Job {
			j := pjob(1, cluster.JobPending, "u", "", 1, 0)
			j.SubmitTime = now.Add(-5 * h)
			return j
		}, want: Factors{Age: 0.5, FairShare: 1}, prio: 500 + 10000},
		{name: "age capped at 1", job: func() *cluster.Job {
			j := pjob(1, cluster.JobPending, "u", "", 1, 0)
			j.SubmitTime = now.Add(-50 * h)
			return j
		}, want: Factors{Age: 1, FairShare: 1}, prio: 11000},
		{name: "submitted in the future", job: func() *cluster.Job {
			j := pjob(1, cluster.JobPending, "u", "", 1, 0)
			j.SubmitTime = now.Add(h)
			return j
		}, want: Factors{FairShare: 1}, prio: 10000},
		{name: "no max age: age 1", job: func() *cluster.Job { return pjob(1, cluster.JobPending, "u", "", 1, 0) },
			pol: func(p *cluster.Policy) { p.MaxAge = 0 }, want: Factors{Age: 1, FairShare: 1}, prio: 11000},
		{name: "job size: 8 of 32 GPUs", job: func() *cluster.Job { return pjob(1, cluster.JobPending, "u", "", 2, 4) },
			gpus: 32, want: Factors{JobSize: 0.25, FairShare: 1}, prio: 100 + 10000},
		{name: "job size capped at 1", job: func() *cluster.Job { return pjob(1, cluster.JobPending, "u", "", 8, 8) },
			gpus: 32, want: Factors{JobSize: 1, FairShare: 1}, prio: 400 + 10000},
		{name: "job size: no GPUs in the cluster", job: func() *cluster.Job { return pjob(1, cluster.JobPending, "u", "", 2, 4) },
			gpus: 0, want: Factors{FairShare: 1}, prio: 10000},
		{name: "qos normal is 25 of 100", job: func() *cluster.Job {
			j := pjob(1, cluster.JobPending, "u", "", 1, 0)
			j.Spec.QoS = "normal"
			return j
		}, want: Factors{QoS: 0.25, FairShare: 1}, prio: 500 + 10000},
		{name: "unknown qos is 0", job: func() *cluster.Job {
			j := pjob(1, cluster.JobPending, "u", "", 1, 0)
			j.Spec.QoS = "gold"
			return j
		}, want: Factors{FairShare: 1}, prio: 10000},
		{name: "partition debug is 10 of 40", job: func() *cluster.Job {
			j := pjob(1, cluster.JobPending, "u", "", 1, 0)
			j.Spec.Request.Partition = "debug"
			return j
		}, pol: func(p *cluster.Policy) {
			p.Weights.Partition = 800
			p.Partitions = []cluster.Partition{{Name: "debug", Priority: 10}, {Name: "gpu", Priority: 40}}
		}, want: Factors{Partition: 0.25, FairShare: 1}, prio: 200 + 10000},
		{name: "an administrator's priority replaces the sum", job: func() *cluster.Job {
			j := pjob(1, cluster.JobPending, "u", "", 1, 0)
			j.Spec.Nice = 300
			j.AdminPriority = 77
			return j
		}, want: Factors{FairShare: 1}, prio: 77},
		{name: "nice is subtracted", job: func() *cluster.Job {
			j := pjob(1, cluster.JobPending, "u", "", 1, 0)
			j.Spec.Nice = 300
			return j
		}, want: Factors{FairShare: 1}, prio: 10000 - 300},
		{name: "negative nice adds", job: func() *cluster.Job {
			j := pjob(1, cluster.JobPending, "u", "", 1, 0)
			j.Spec.Nice = -300
			return j
		}, want: Factors{FairShare: 1}, prio: 10000 + 300},
		{name: "weighted sum is truncated", job: func() *cluster.Job {
			j := pjob(1, cluster.JobPending, "u", "", 1, 0)
			j.SubmitTime = now.Add(-time.Minute) // age 1/600: 1.666... weighted
			return j
		}, want: Factors{Age: 1.0 / 600, FairShare: 1}, prio: 10001},
		// Two users in the default account, one share each (S = 1/2): u
		// used everything (U = 1): F = 2^(-1/0.5) = 0.25.
		{name: "fair-share of the only user with usage", job: func() *cluster.Job { return pjob(9, cluster.JobPending, "u", "", 1, 0) },
			extra: []*cluster.Job{used(1, "u", "", 2, 2*h, h), pjob(2, cluster.JobCompleted, "v", "", 1, 0)},
			want:  Factors{FairShare: 0.25}, prio: 2500},
		{name: "fair-share of a user with none", job: func() *cluster.Job { return pjob(9, cluster.JobPending, "v", "", 1, 0) },
			extra: []*cluster.Job{used(1, "u", "", 2, 2*h, h)},
			want:  Factors{FairShare: 1}, prio: 10000},
		{name: "no share: fair-share 0", job: func() *cluster.Job { return pjob(9, cluster.JobPending, "v", "physics", 1, 0) },
			pol: func(p *cluster.Policy) {
				p.Accounts = []cluster.AccountShare{{Name: "physics", Shares: 0}}
			},
			want: Factors{FairShare: 0}, prio: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := *pol.Clone()
			if tc.pol != nil {
				tc.pol(&p)
			}
			j := tc.job()
			jobs := append(slices.Clone(tc.extra), j)
			slices.SortFunc(jobs, func(a, b *cluster.Job) int { return int(a.ID) - int(b.ID) })
			ps := Priorities(p, jobs, tc.gpus, now)
			if len(ps) != 1 {
				t.Fatalf("Priorities = %+v; want one pending job", ps)
			}
			got := ps[0]
			if !near(got.Factors.Age, tc.want.Age) || !near(got.Factors.FairShare, tc.want.FairShare) ||
				!near(got.Factors.JobSize, tc.want.JobSize) || !near(got.Factors.QoS, tc.want.QoS) {
				t.Fatalf("Factors = %+v; want %+v", got.Factors, tc.want)
			}
			if got.Priority != tc.prio {
				t.Fatalf("Priority = %d (weighted %+v); want %d", got.Priority, got.Weighted, tc.prio)
			}
			if got.Weighted.FairShare != got.Factors.FairShare*float64(p.Weights.FairShare) {
				t.Fatalf("Weighted.FairShare = %v; want factor × weight", got.Weighted.FairShare)
			}
		})
	}
}

// physicsAndBio is the fair-share fixture TestFairShareAccounts works by
// hand: physics has 60 shares (alice 2, bob 1), bio 40 (carol, unlisted);
// alice used 100 GPU-s, carol 300, bob none, and each has a pending job
// (3, 4 and 5).
func physicsAndBio() (cluster.Policy, []*cluster.Job) {
	p := cluster.Policy{
		Weights: cluster.Weights{FairShare: 1000},
		Accounts: []cluster.AccountShare{
			{Name: "bio", Shares: 40},
			{Name: "physics", Shares: 60, Users: []cluster.UserShare{{Name: "alice", Shares: 2}, {Name: "bob", Shares: 1}}},
		},
	}
	jobs := []*cluster.Job{
		used(1, "alice", "physics", 1, 100*time.Second, 0),
		used(2, "carol", "bio", 3, 100*time.Second, 0),
		pjob(3, cluster.JobPending, "alice", "physics", 1, 1),
		pjob(4, cluster.JobPending, "bob", "physics", 1, 1),
		pjob(5, cluster.JobPending, "carol", "bio", 1, 1),
	}
	return p, jobs
}

// TestFairShareAccounts: the classic formula with accounts and users
// within them, by hand. physics has 60 shares (alice 2, bob 1), bio 40
// (carol, unlisted: 1 of 1). Usage (no decay): alice 100 GPU-s, carol
// 300, bob none: total 400.
//
//	alice: S = 0.6 × 2/3 = 0.4, U = 0.25: F = 2^-0.625 = 0.64841977...
//	bob:   S = 0.6 × 1/3 = 0.2, U = 0:    F = 1
//	carol: S = 0.4 × 1/1 = 0.4, U = 0.75: F = 2^-1.875 = 0.27262693...
func TestFairShareAccounts(t *testing.T) {
	p, jobs := physicsAndBio()
	ps := Priorities(p, jobs, 8, now)
	for _, want := range []struct {
		id cluster.JobID
		f  float64
	}{{3, 0.6484197773255048}, {4, 1}, {5, 0.2726269331663144}} {
		if got := factorOf(t, ps, want.id).Factors.FairShare; !near(got, want.f) {
			t.Errorf("job %d: FairShare = %v; want %v", want.id, got, want.f)
		}
	}
	if got := PriorityOrder(ps); !slices.Equal(got, []cluster.JobID{4, 3, 5}) {
		t.Errorf("order = %v; want [4 3 5]", got)
	}
	// A running job's usage counts up to now; the usage decays.
	p.HalfLife = time.Hour
	run := used(6, "bob", "physics", 1, time.Hour, 0)
	run.State, run.EndTime = cluster.JobRunning, time.Time{}
	ps = Priorities(p, append(jobs, run), 8, now)
	if f := factorOf(t, ps, 4).Factors.FairShare; f >= 1 {
		t.Errorf("bob with a running job: FairShare = %v; want below 1", f)
	}
}

// TestPriorityOrder: descending priority, ties by ascending ID, and a
// heavy user's earlier job goes after a light user's later one.
func TestPriorityOrder(t *testing.T) {
	def := cluster.DefaultPolicy()
	for _, tc := range []struct {
		name string
		jobs []*cluster.Job
		want []cluster.JobID
	}{
		{"ties by id", []*cluster.Job{
			pjob(3, cluster.JobPending, "u", "", 1, 1),
			pjob(1, cluster.JobPending, "u", "", 1, 1),
			pjob(2, cluster.JobPending, "v", "", 1, 1),
		}, []cluster.JobID{1, 2, 3}},
		{"equal users keep fifo under the default policy", func() []*cluster.Job {
			var js []*cluster.Job
			for i := 1; i <= 5; i++ {
				j := pjob(cluster.JobID(i), cluster.JobPending, fmt.Sprint("u", i%2), "", 1, 1)
				j.SubmitTime = now.Add(-time.Duration(10-i) * time.Hour)
				js = append(js, j)
			}
			return js
		}(), []cluster.JobID{1, 2, 3, 4, 5}},
		{"heavy user after light user", []*cluster.Job{
			used(1, "heavy", "", 8, 3*time.Hour, time.Hour),
			func() *cluster.Job {
				j := pjob(2, cluster.JobPending, "heavy", "", 1, 8)
				j.SubmitTime = now.Add(-time.Hour)
				return j
			}(),
			pjob(3, cluster.JobPending, "light", "", 1, 8),
		}, []cluster.JobID{3, 2}},
		{"nice sends a job back", func() []*cluster.Job {
			a, b := pjob(1, cluster.JobPending, "u", "", 1, 1), pjob(2, cluster.JobPending, "u", "", 1, 1)
			a.Spec.Nice = 1
			return []*cluster.Job{a, b}
		}(), []cluster.JobID{2, 1}},
		{"only pending jobs", []*cluster.Job{
			pjob(1, cluster.JobRunning, "u", "", 1, 1),
			pjob(2, cluster.JobPending, "u", "", 1, 1),
			pjob(3, cluster.JobCancelled, "u", "", 1, 1),
		}, []cluster.JobID{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PriorityOrder(Priorities(def, tc.jobs, 16, now))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("order = %v; want %v", got, tc.want)
			}
		})
	}
}

// TestPlaceWithOrder: with an order, the reservation goes to the first
// job in it that does not fit, not the lowest ID, and a job the order puts
// first starts ahead of an older one.
func TestPlaceWithOrder(t *testing.T) {
	nodes := mkLeaf("n", 2, 4, "l1", "s1")
	running := holding(100, cluster.JobRunning, false, "n1", seq(0, 3))
	running.StartTime = now
	running.Spec.Request.TimeLimit = time.Hour
	big := pending(1, 2, 4) // needs both nodes: waits for job 100
	small := pending(2, 1, 4)
	small.Spec.Request.TimeLimit = 2 * time.Hour // would run past the reservation
	queue := []*cluster.Job{big, small}
	for _, pol := range []Policy{PolicyBackfill, PolicyShoal} {
		// ID order: 1 reserves n1+n2 at now+1h, so 2 (2h) may not take n2.
		res, _ := PlaceWith(NewView(nodes, []*cluster.Job{running}), queue, now, Options{Policy: pol})
		if len(res.Decisions) != 0 || res.Reservation == nil || res.Reservation.Job != 1 {
			t.Fatalf("%s by id: %+v; want job 1 reserved and nothing started", pol, res)
		}
		// Job 2 first: it starts on n2; job 1 then reserves from 100's end
		// and 2's, and nothing behind may delay it.
		res, _ = PlaceWith(NewView(nodes, []*cluster.Job{running}), queue, now, Options{Policy: pol, Order: []cluster.JobID{2, 1}})
		want := []Decision{{Job: 2, Nodes: []Assignment{asg("n2", 0, 1, 2, 3)}}}
		if !gocmp.Equal(res.Decisions, want) || res.Reservation == nil || res.Reservation.Job != 1 ||
			!res.Reservation.Start.Equal(now.Add(2*time.Hour)) {
			t.Fatalf("%s ordered [2 1]: %+v, reservation %+v; want 2 on n2, 1 reserved at now+2h", pol, res.Decisions, res.Reservation)
		}
	}
	// FIFO follows the order too: what comes first and blocks holds back
	// the rest.
	res, _ := PlaceWith(NewView(nodes, []*cluster.Job{running}), queue, now, Options{Policy: PolicyFIFO, Order: []cluster.JobID{1}})
	if len(res.Decisions) != 0 || res.Reasons[1] != cluster.ReasonResources || res.Reasons[2] != cluster.ReasonPriority {
		t.Fatalf("fifo ordered [1]: %+v; want 1 Resources, 2 Priority", res)
	}
}

// TestPlaceWithOrderProperties extends TestPlaceWithProperties to any
// order: decisions follow it; the reservation is the first job in it that
// pends with Resources; and backfill never delays that reservation (the
// jobs behind it in the order do not change it). DESIGN invariant 1 is
// checked by TestPlaceWithProperties on the same generator.
func TestPlaceWithOrderProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes, running, queue := genBackfill(t)
		policy := rapid.SampledFrom([]Policy{PolicyBackfill, PolicyShoal}).Draw(t, "policy")
		var ids []cluster.JobID
		for _, j := range inOrder(queue) {
			ids = append(ids, j.ID)
		}
		order := rapid.Permutation(ids).Draw(t, "order")
		v := NewView(nodes, running)
		res, err := PlaceWith(v, queue, now, Options{Policy: policy, Order: order})
		if err != nil {
			t.Fatal(err)
		}
		pos := map[cluster.JobID]int{}
		for i, id := range order {
			pos[id] = i
		}
		for i := 1; i < len(res.Decisions); i++ {
			if pos[res.Decisions[i].Job] <= pos[res.Decisions[i-1].Job] {
				t.Fatalf("decisions %v do not follow order %v", res.Decisions, order)
			}
		}
		blocked := -1
		for i, id := range order {
			if res.Reasons[id] == cluster.ReasonResources {
				if blocked >= 0 {
					t.Fatalf("jobs %d and %d both pend with Resources", order[blocked], id)
				}
				blocked = i
			}
		}
		r := res.Reservation
		if r == nil {
			return
		}
		if blocked < 0 || r.Job != order[blocked] {
			t.Fatalf("reservation for job %d; order %v, reasons %v", r.Job, order, res.Reasons)
		}
		head := order[:blocked+1]
		var headJobs []*cluster.Job
		for _, j := range inOrder(queue) {
			if slices.Contains(head, j.ID) {
				headJobs = append(headJobs, j)
			}
		}
		alone, _ := PlaceWith(v, headJobs, now, Options{Policy: policy, Order: head})
		if !gocmp.Equal(alone.Reservation, r) {
			t.Fatalf("reservation %+v; with no job behind it %+v: backfill moved it", r, alone.Reservation)
		}
	})
}
