package placement

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/shoal-sched/shoal/cluster"
	"pgregory.net/rapid"
)

// submitted returns a pending job of nodes x gpus with limit, submitted
// at at.
func submitted(id cluster.JobID, nodes, gpus int, limit time.Duration, at time.Time) *cluster.Job {
	j := limited(id, nodes, gpus, limit)
	j.SubmitTime = at
	return j
}

// TestQSSFOrder covers QSSFOrder's rules one at a time.
func TestQSSFOrder(t *testing.T) {
	t0 := time.Unix(1_000_000, 0).UTC()
	h := time.Hour
	tests := []struct {
		name  string
		queue []*cluster.Job
		now   time.Time
		opts  Options
		want  []cluster.JobID
	}{{
		name: "shortest service (GPUs x limit) first, ties by ID",
		queue: []*cluster.Job{
			submitted(1, 1, 8, 1*h, t0), // 8 GPU-h
			submitted(2, 1, 1, 4*h, t0), // 4
			submitted(3, 2, 8, 1*h, t0), // 16
			submitted(4, 1, 2, 2*h, t0), // 4
			submitted(5, 1, 1, 30*60*time.Second, t0),
		},
		now:  t0,
		want: []cluster.JobID{5, 2, 4, 1, 3},
	}, {
		name: "estimates replace limits; a job without either is last",
		queue: []*cluster.Job{
			submitted(1, 1, 1, 10*h, t0),
			submitted(2, 1, 1, 2*h, t0),
			submitted(3, 1, 1, 0, t0),
			submitted(4, 1, 1, 0, t0),
		},
		now:  t0,
		opts: Options{Estimates: map[cluster.JobID]time.Duration{1: h, 4: 3 * h}},
		want: []cluster.JobID{1, 2, 4, 3},
	}, {
		name: "aging: waiting divides the service by 1 + wait/AgingHalf",
		queue: []*cluster.Job{
			submitted(1, 1, 8, 2*h, t0),          // 16 GPU-h, waited 3 h: 16/4 = 4
			submitted(2, 1, 1, 5*h, t0.Add(3*h)), // 5, new
			submitted(3, 1, 1, 3*h, t0.Add(3*h)), // 3, new
		},
		now:  t0.Add(3 * h),
		opts: Options{AgingHalf: h},
		want: []cluster.JobID{3, 1, 2},
	}, {
		name: "a submit time after now counts as no wait",
		queue: []*cluster.Job{
			submitted(1, 1, 1, 2*h, t0.Add(10*h)),
			submitted(2, 1, 1, 3*h, t0),
		},
		now:  t0,
		want: []cluster.JobID{1, 2},
	}, {
		name: "starving jobs first, in Options.Order, whatever their size",
		queue: []*cluster.Job{
			submitted(1, 4, 8, 100*h, t0),
			submitted(2, 1, 1, h, t0.Add(20*h)),
			submitted(3, 8, 8, 100*h, t0.Add(1*h)),
			submitted(4, 1, 8, 100*h, t0.Add(19*h)), // waited 5 h: not starving
		},
		now:  t0.Add(24 * h),
		opts: Options{StarveAfter: 6 * h, Order: []cluster.JobID{3, 4, 2, 1}},
		want: []cluster.JobID{3, 1, 2, 4},
	}, {
		name: "fair share divides the score; equal scores keep Options.Order",
		queue: []*cluster.Job{
			submitted(1, 1, 1, h, t0),
			submitted(2, 1, 1, h, t0),
			submitted(3, 1, 2, h, t0),
			submitted(4, 1, 1, h, t0),
		},
		now: t0,
		opts: Options{Order: []cluster.JobID{4, 3, 2, 1},
			FairShare: map[cluster.JobID]float64{1: 0.25, 2: 1, 3: 1, 4: 1}},
		want: []cluster.JobID{4, 2, 3, 1},
	}, {
		name: "fair share is floored at 1/4: far over its share still ranks",
		queue: []*cluster.Job{
			submitted(1, 1, 1, h, t0),
			submitted(2, 1, 1, 5*h, t0),
			submitted(3, 1, 1, 3*h, t0),
		},
		now:  t0,
		opts: Options{FairShare: map[cluster.JobID]float64{1: 0, 2: 1, 3: 1}},
		want: []cluster.JobID{3, 1, 2}, // 4 GPU-h (1 h at 1/4) between 3 and 5
	}, {
		name: "a factor above the floor divides as it is",
		queue: []*cluster.Job{
			submitted(1, 1, 1, 2*h, t0),
			submitted(2, 1, 1, 3*h, t0),
			submitted(3, 1, 1, 5*h, t0),
		},
		now:  t0,
		opts: Options{FairShare: map[cluster.JobID]float64{1: 0.5, 2: 1, 3: 1}},
		want: []cluster.JobID{2, 1, 3}, // 4 GPU-h (2 h at 1/2) between 3 and 5
	}, {
		name: "nil and repeated jobs are dropped",
		queue: []*cluster.Job{
			submitted(2, 1, 1, h, t0), nil, submitted(1, 1, 1, 2*h, t0), submitted(2, 1, 1, h, t0),
		},
		now:  t0,
		want: []cluster.JobID{2, 1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, QSSFOrder(tt.queue, tt.now, tt.opts)); diff != "" {
				t.Errorf("QSSFOrder() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlaceWithQSSF: the shorter job gets the one free node and the
// reservation follows the QSSF order, with shoal's placement.
func TestPlaceWithQSSF(t *testing.T) {
	t0 := time.Unix(1_000_000, 0).UTC()
	nodes := cat(mkLeaf("a", 1, 8, "x", "s0"), mkLeaf("b", 2, 8, "y", "s0"))
	run := runningFor(9, t0, time.Hour, "b1")
	queue := []*cluster.Job{
		submitted(1, 2, 8, 10*time.Hour, t0), // long gang, first by ID
		submitted(2, 1, 8, time.Hour, t0),
		submitted(3, 2, 8, 2*time.Hour, t0),
	}
	for _, tc := range []struct {
		policy    Policy
		decisions []Decision
		reserved  cluster.JobID
	}{
		// shoal, by ID: the long gang takes both free nodes; job 2
		// reserves.
		{PolicyShoal, []Decision{{Job: 1, Nodes: full("a1", "b2")}}, 2},
		// qssf: job 2 (8 GPU-h) first (each leaf has one free node:
		// ties by name); then job 3 (32) reserves ahead of job 1 (160).
		{PolicyQSSF, []Decision{{Job: 2, Nodes: full("a1")}}, 3},
	} {
		v := NewView(nodes, []*cluster.Job{run})
		res, err := PlaceWith(v, queue, t0, Options{Policy: tc.policy})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.decisions, res.Decisions); diff != "" {
			t.Errorf("%s: decisions (-want +got):\n%s", tc.policy, diff)
		}
		if res.Reservation == nil || res.Reservation.Job != tc.reserved {
			t.Errorf("%s: reservation %+v, want job %d's", tc.policy, res.Reservation, tc.reserved)
		}
	}
}

// TestQSSFStarvationBound replays an adversarial stream on 2 nodes x 8
// GPUs: one 16-GPU gang, then every 10 minutes four new 1-GPU one-hour
// jobs, more than the cluster can run, each of them far shorter than the
// gang. Every job ends at its limit. Without the starvation threshold
// the gang never starts within two days; with StarveAfter 6 h it starts
// no later than StarveAfter plus the longest limit it waits behind (1 h)
// plus one step.
func TestQSSFStarvationBound(t *testing.T) {
	const step = 10 * time.Minute
	t0 := time.Unix(1_000_000, 0).UTC()
	nodes := mkLeaf("a", 2, 8, "x", "s0")
	for _, tc := range []struct {
		starve time.Duration
		bound  time.Duration // the gang must start by t0 + bound; 0: must not
	}{
		{starve: 6 * time.Hour, bound: 6*time.Hour + time.Hour + step},
		{starve: 1000 * time.Hour},
	} {
		gang := submitted(1, 2, 8, time.Hour, t0)
		queue := []*cluster.Job{gang}
		var running []*cluster.Job
		next := cluster.JobID(2)
		var started time.Time
		for now := t0; now.Before(t0.Add(48*time.Hour)) && started.IsZero(); now = now.Add(step) {
			running = slices.DeleteFunc(running, func(j *cluster.Job) bool {
				return !j.StartTime.Add(j.Spec.Request.TimeLimit).After(now)
			})
			for range 4 {
				queue = append(queue, submitted(next, 1, 1, time.Hour, now))
				next++
			}
			res, err := PlaceWith(NewView(nodes, running), queue, now,
				Options{Policy: PolicyQSSF, StarveAfter: tc.starve, OmitReasons: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range res.Decisions {
				i := slices.IndexFunc(queue, func(j *cluster.Job) bool { return j.ID == d.Job })
				j := queue[i]
				queue = slices.Delete(queue, i, i+1)
				j.State, j.StartTime = cluster.JobRunning, now
				j.Alloc = &cluster.Allocation{}
				for _, a := range d.Nodes {
					j.Alloc.Nodes = append(j.Alloc.Nodes, cluster.NodeAlloc{Node: a.Node, GPUs: a.GPUs, State: cluster.TaskRunning})
				}
				running = append(running, j)
				if j.ID == gang.ID {
					started = now
				}
			}
		}
		switch {
		case tc.bound == 0 && !started.IsZero():
			t.Errorf("StarveAfter %s: the gang started after %s; want the stream to starve it", tc.starve, started.Sub(t0))
		case tc.bound > 0 && started.IsZero():
			t.Errorf("StarveAfter %s: the gang never started in 48 h; want it by %s", tc.starve, tc.bound)
		case tc.bound > 0 && started.Sub(t0) > tc.bound:
			t.Errorf("StarveAfter %s: the gang started after %s; want at most %s", tc.starve, started.Sub(t0), tc.bound)
		}
	}
}

// TestQSSFOrderProperties: QSSFOrder is a permutation of the queue's
// distinct jobs that does not depend on the queue's order, and puts
// every starving job before every other.
func TestQSSFOrderProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		t0 := time.Unix(1_000_000, 0).UTC()
		now := t0.Add(time.Duration(rapid.IntRange(0, 100).Draw(t, "now")) * time.Hour)
		starve := time.Duration(rapid.IntRange(1, 50).Draw(t, "starve")) * time.Hour
		opts := Options{StarveAfter: starve, Estimates: map[cluster.JobID]time.Duration{},
			FairShare: map[cluster.JobID]float64{}}
		var queue []*cluster.Job
		ids := map[cluster.JobID]bool{}
		for range rapid.IntRange(0, 20).Draw(t, "jobs") {
			id := cluster.JobID(rapid.IntRange(1, 30).Draw(t, "id"))
			j := submitted(id, rapid.IntRange(1, 4).Draw(t, "nodes"), rapid.IntRange(0, 8).Draw(t, "gpus"),
				time.Duration(rapid.IntRange(0, 48).Draw(t, "limit"))*time.Hour,
				t0.Add(time.Duration(rapid.IntRange(0, 100).Draw(t, "submit"))*time.Hour))
			if rapid.Bool().Draw(t, "estimated") {
				opts.Estimates[id] = time.Duration(rapid.IntRange(0, 48).Draw(t, "estimate")) * time.Hour
			}
			if rapid.Bool().Draw(t, "fair") {
				opts.FairShare[id] = rapid.Float64Range(0, 1).Draw(t, "share")
			}
			queue = append(queue, j)
			ids[id] = true
		}
		got := QSSFOrder(queue, now, opts)
		if len(got) != len(ids) {
			t.Fatalf("QSSFOrder() = %v: %d jobs, want the %d distinct ones", got, len(got), len(ids))
		}
		first := map[cluster.JobID]*cluster.Job{}
		for _, j := range queue {
			if first[j.ID] == nil {
				first[j.ID] = j
			}
		}
		seenFresh := false
		for _, id := range got {
			if !ids[id] {
				t.Fatalf("QSSFOrder() = %v: job %d twice or not queued", got, id)
			}
			delete(ids, id)
			starving := now.Sub(first[id].SubmitTime) >= starve
			if starving && seenFresh {
				t.Fatalf("QSSFOrder() = %v: starving job %d after a job that is not", got, id)
			}
			seenFresh = seenFresh || !starving
		}
		// The same distinct jobs in another order give the same order.
		var distinct []*cluster.Job
		for _, id := range got {
			distinct = append(distinct, first[id])
		}
		slices.Reverse(distinct)
		if again := QSSFOrder(distinct, now, opts); !slices.Equal(again, got) {
			t.Fatalf("QSSFOrder() depends on the queue's order: %v, then %v", got, again)
		}
	})
}

// TestPredictor covers Predict after a series of Observe calls: by
// user, or for a job without one by shape (nodes, GPUs per node, limit
// class), else the limit.
func TestPredictor(t *testing.T) {
	h := time.Hour
	type obs struct {
		user       string
		nodes, gpn int
		ran, limit time.Duration
	}
	tests := []struct {
		name       string
		seen       []obs
		user       string
		nodes, gpn int
		limit      time.Duration
		want       time.Duration
	}{
		{name: "no history: the limit", user: "u", limit: 5 * h, want: 5 * h},
		{name: "no history, no limit: unknown", user: "u", want: 0},
		{name: "exact limits give the limit", seen: []obs{{"u", 1, 1, h, h}, {"u", 1, 1, 2 * h, 2 * h}}, user: "u", limit: 7 * h, want: 7 * h},
		{name: "a user who uses a quarter of the limit", seen: []obs{{"u", 1, 1, h, 4 * h}, {"u", 1, 1, 2 * h, 8 * h}},
			user: "u", limit: 12 * h, want: 3 * h},
		{name: "mean of used fractions", seen: []obs{{"u", 1, 1, h, 4 * h}, {"u", 1, 1, 3 * h, 4 * h}}, user: "u", limit: 10 * h, want: 5 * h},
		{name: "another user's job of another shape does not count", seen: []obs{{"v", 2, 1, h, 4 * h}}, user: "u", limit: 10 * h, want: 10 * h},
		{name: "a run past its limit counts as all of it", seen: []obs{{"u", 1, 1, 5 * h, h}}, user: "u", limit: 3 * h, want: 3 * h},
		{name: "at least 1 s", seen: []obs{{"u", 1, 1, 0, h}}, user: "u", limit: 10 * h, want: time.Second},
		{name: "no limit: mean run time", seen: []obs{{"u", 1, 1, h, 0}, {"u", 1, 1, 3 * h, 4 * h}}, user: "u", want: 2 * h},
		{name: "only the last PredictorWindow jobs count",
			seen: append(slices.Repeat([]obs{{"u", 1, 1, h, 4 * h}}, 3), slices.Repeat([]obs{{"u", 1, 1, 2 * h, 2 * h}}, PredictorWindow)...),
			user: "u", limit: 6 * h, want: 6 * h},
		// Shapes: where the user tells nothing.
		{name: "no user: the shape's used fraction", seen: []obs{{"", 1, 1, h, 4 * h}}, user: "", limit: 4 * h, want: h},
		{name: "a user without history: the limit, not the shape's", seen: []obs{{"v", 1, 1, h, 4 * h}}, user: "u", limit: 4 * h, want: 4 * h},
		{name: "users' jobs do not count for the shape", seen: []obs{{"v", 1, 1, h, 4 * h}}, user: "", limit: 4 * h, want: 4 * h},
		{name: "a user with only limitless jobs: the limit", seen: []obs{{"u", 1, 1, 9 * h, 0}, {"", 1, 1, h, 4 * h}}, user: "u", limit: 4 * h, want: 4 * h},
		{name: "a shape is the node count", seen: []obs{{"", 2, 1, h, 4 * h}}, limit: 4 * h, want: 4 * h},
		{name: "a shape is the GPUs per node", seen: []obs{{"", 1, 8, h, 4 * h}}, limit: 4 * h, want: 4 * h},
		{name: "limits in one power-of-two class share a shape", seen: []obs{{"", 1, 1, h, 5 * h}}, limit: 6 * h, want: 72 * time.Minute},
		{name: "a limit in another class does not", seen: []obs{{"", 1, 1, h, 4 * h}}, limit: 10 * h, want: 10 * h},
		{name: "no limit, no user: the shape's mean run time", seen: []obs{{"", 1, 1, h, 0}, {"", 1, 1, 3 * h, 0}}, want: 2 * h},
		{name: "no limit: limited jobs are another shape", seen: []obs{{"", 1, 1, h, 4 * h}}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Predictor
			req := func(nodes, gpn int, limit time.Duration) cluster.Request {
				return cluster.Request{Nodes: max(nodes, 1), GPUsPerNode: max(gpn, 1), TimeLimit: limit}
			}
			for _, o := range tt.seen {
				p.Observe(o.user, req(o.nodes, o.gpn, o.limit), o.ran)
			}
			if got := p.Predict(tt.user, req(tt.nodes, tt.gpn, tt.limit)); got != tt.want {
				t.Errorf("Predict(%q, %d x %d, %s) = %s, want %s", tt.user, tt.nodes, tt.gpn, tt.limit, got, tt.want)
			}
		})
	}
}

// TestPredictorFrom: only ended jobs count, in order of end, so the
// window keeps the latest.
func TestPredictorFrom(t *testing.T) {
	t0 := time.Unix(1_000_000, 0).UTC()
	h := time.Hour
	ended := func(id cluster.JobID, st cluster.JobState, ran, limit time.Duration, end time.Time) *cluster.Job {
		j := limited(id, 1, 1, limit)
		j.State, j.Spec.User = st, "u"
		j.StartTime, j.EndTime = end.Add(-ran), end
		return j
	}
	var jobs []*cluster.Job
	// The newest PredictorWindow jobs used half their limit; one older
	// job (listed last) used all of it.
	for i := range PredictorWindow {
		jobs = append(jobs, ended(cluster.JobID(i+2), cluster.JobCompleted, h, 2*h, t0.Add(time.Duration(i+1)*h)))
	}
	jobs = append(jobs, ended(1, cluster.JobFailed, 2*h, 2*h, t0),
		ended(99, cluster.JobRunning, h, 100*h, time.Time{}), nil)
	if got := PredictorFrom(jobs).Predict("u", cluster.Request{Nodes: 1, GPUsPerNode: 1, TimeLimit: 10 * h}); got != 5*h {
		t.Errorf("PredictorFrom(...).Predict(u, 10h) = %s, want 5h", got)
	}
}
