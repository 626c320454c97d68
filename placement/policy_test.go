package placement

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/shoal-sched/shoal/cluster"
)

// limited returns a pending job asking for nodes x gpus for at most limit.
func limited(id cluster.JobID, nodes, gpus int, limit time.Duration) *cluster.Job {
	j := pending(id, nodes, gpus)
	j.Spec.Request.TimeLimit = limit
	return j
}

// runningFor returns a running job that started at start with limit
// (0: none) and holds every GPU of each named node (8 GPUs each).
func runningFor(id cluster.JobID, start time.Time, limit time.Duration, nodes ...string) *cluster.Job {
	var spec []any
	for _, n := range nodes {
		spec = append(spec, n, seq(0, 7))
	}
	j := holding(id, cluster.JobRunning, false, spec...)
	j.StartTime = start
	j.Spec.Request.TimeLimit = limit
	return j
}

func full(names ...string) []Assignment {
	var as []Assignment
	for _, n := range names {
		as = append(as, asg(n, seq(0, 7)...))
	}
	return as
}

// TestPlaceWith covers the three policies. Backfill rules protect the
// reservation of the first blocked job (EASY): a later job starts only if
// it ends by then or avoids the reserved GPUs.
func TestPlaceWith(t *testing.T) {
	hour := time.Hour
	type want struct {
		decisions   []Decision
		reasons     reasons
		reservation *Reservation
	}
	tests := []struct {
		name    string
		policy  Policy
		nodes   []*cluster.Node
		jobs    []*cluster.Job
		queue   []*cluster.Job
		want    want
		omitted bool // OmitReasons
	}{{
		name:   "fifo ignores topology: first nodes by name",
		policy: PolicyFIFO,
		nodes:  cat(mkLeaf("a", 1, 8, "x", "s0"), mkLeaf("b", 2, 8, "y", "s0")),
		queue:  []*cluster.Job{pending(1, 2, 8)},
		want:   want{decisions: []Decision{{Job: 1, Nodes: full("a1", "b1")}}},
	}, {
		name:   "backfill places first fit too",
		policy: PolicyBackfill,
		nodes:  cat(mkLeaf("a", 1, 8, "x", "s0"), mkLeaf("b", 2, 8, "y", "s0")),
		queue:  []*cluster.Job{pending(1, 2, 8)},
		want:   want{decisions: []Decision{{Job: 1, Nodes: full("a1", "b1")}}},
	}, {
		name:   "shoal keeps the gang under one leaf",
		policy: PolicyShoal,
		nodes:  cat(mkLeaf("a", 1, 8, "x", "s0"), mkLeaf("b", 2, 8, "y", "s0")),
		queue:  []*cluster.Job{pending(1, 2, 8)},
		want:   want{decisions: []Decision{{Job: 1, Nodes: full("b1", "b2")}}},
	}, {
		name:   "fifo takes the lowest free GPUs, not NVLink pairs",
		policy: PolicyFIFO,
		nodes: func() []*cluster.Node {
			n := mkNode("n1", 4, "a", "s0")
			for i := range n.GPUs {
				n.GPUs[i].NVLinkPeers = []int{i ^ 1}
			}
			return []*cluster.Node{n}
		}(),
		jobs:  []*cluster.Job{holding(9, cluster.JobRunning, false, "n1", []int{0})},
		queue: []*cluster.Job{pending(1, 1, 2)},
		want:  want{decisions: []Decision{{Job: 1, Nodes: []Assignment{asg("n1", 1, 2)}}}},
	}, {
		name:   "fifo: the blocked job holds back a job that would fit",
		policy: PolicyFIFO,
		nodes:  mkLeaf("n", 2, 8, "a", "s0"),
		jobs:   []*cluster.Job{runningFor(9, now, hour, "n1")},
		queue:  []*cluster.Job{limited(1, 2, 8, hour), limited(2, 1, 1, time.Minute)},
		want:   want{reasons: reasons{1: cluster.ReasonResources, 2: cluster.ReasonPriority}},
	}, {
		name:   "backfill: a job that ends by the reservation starts",
		policy: PolicyBackfill,
		nodes:  mkLeaf("n", 2, 8, "a", "s0"),
		jobs:   []*cluster.Job{runningFor(9, now.Add(-hour/2), hour, "n1")},
		queue:  []*cluster.Job{limited(1, 2, 8, hour), limited(2, 1, 1, hour/2)},
		want: want{
			decisions:   []Decision{{Job: 2, Nodes: []Assignment{asg("n2", 0)}}},
			reasons:     reasons{1: cluster.ReasonResources},
			reservation: &Reservation{Job: 1, Start: now.Add(hour / 2), Nodes: full("n1", "n2")},
		},
	}, {
		name:   "backfill: a job that would delay the reservation waits",
		policy: PolicyBackfill,
		nodes:  mkLeaf("n", 2, 8, "a", "s0"),
		jobs:   []*cluster.Job{runningFor(9, now.Add(-hour/2), hour, "n1")},
		queue:  []*cluster.Job{limited(1, 2, 8, hour), limited(2, 1, 1, hour/2+time.Second), pending(3, 1, 1)},
		want: want{
			reasons:     reasons{1: cluster.ReasonResources, 2: cluster.ReasonPriority, 3: cluster.ReasonPriority},
			reservation: &Reservation{Job: 1, Start: now.Add(hour / 2), Nodes: full("n1", "n2")},
		},
	}, {
		name:   "backfill: a long job on GPUs the reservation does not need starts",
		policy: PolicyBackfill,
		nodes:  mkLeaf("n", 4, 8, "a", "s0"),
		jobs:   []*cluster.Job{runningFor(9, now, hour, "n1", "n2")},
		queue:  []*cluster.Job{limited(1, 3, 8, hour), pending(2, 1, 8), pending(3, 1, 1)},
		want: want{
			decisions:   []Decision{{Job: 2, Nodes: full("n4")}},
			reasons:     reasons{1: cluster.ReasonResources, 3: cluster.ReasonPriority},
			reservation: &Reservation{Job: 1, Start: now.Add(hour), Nodes: full("n1", "n2", "n3")},
		},
	}, {
		name:   "backfill: the reservation counts jobs started in the same call",
		policy: PolicyBackfill,
		nodes:  mkLeaf("n", 3, 8, "a", "s0"),
		jobs:   []*cluster.Job{runningFor(9, now, 2*hour, "n3")},
		queue: []*cluster.Job{limited(1, 1, 8, hour), limited(2, 2, 8, hour), limited(3, 1, 4, hour),
			limited(4, 1, 4, hour+time.Second)},
		want: want{
			decisions: []Decision{{Job: 1, Nodes: full("n1")}, {Job: 3, Nodes: []Assignment{asg("n2", 0, 1, 2, 3)}}},
			reasons:   reasons{2: cluster.ReasonResources, 4: cluster.ReasonPriority},
			// At now+1h job 1 has ended and n2 is free: n1 and n2.
			reservation: &Reservation{Job: 2, Start: now.Add(hour), Nodes: full("n1", "n2")},
		},
	}, {
		name:   "backfill: the earliest of several ends that suffices",
		policy: PolicyBackfill,
		nodes:  mkLeaf("n", 3, 8, "a", "s0"),
		jobs: []*cluster.Job{runningFor(7, now, 3*hour, "n1"), runningFor(8, now, hour, "n2"),
			runningFor(9, now, 2*hour, "n3")},
		queue: []*cluster.Job{limited(1, 2, 8, hour)},
		want: want{
			reasons:     reasons{1: cluster.ReasonResources},
			reservation: &Reservation{Job: 1, Start: now.Add(2 * hour), Nodes: full("n2", "n3")},
		},
	}, {
		name:   "backfill: a job past its limit counts as ending now",
		policy: PolicyBackfill,
		nodes:  mkLeaf("n", 2, 8, "a", "s0"),
		jobs:   []*cluster.Job{runningFor(9, now.Add(-2*hour), hour, "n1")},
		queue:  []*cluster.Job{limited(1, 2, 8, hour), limited(2, 1, 8, time.Second)},
		want: want{
			reasons:     reasons{1: cluster.ReasonResources, 2: cluster.ReasonPriority},
			reservation: &Reservation{Job: 1, Start: now, Nodes: full("n1", "n2")},
		},
	}, {
		name:   "backfill: no reservation behind a job without a limit, so FIFO",
		policy: PolicyBackfill,
		nodes:  mkLeaf("n", 2, 8, "a", "s0"),
		jobs:   []*cluster.Job{runningFor(9, now, 0, "n1")},
		queue:  []*cluster.Job{limited(1, 2, 8, hour), limited(2, 1, 1, time.Second)},
		want:   want{reasons: reasons{1: cluster.ReasonResources, 2: cluster.ReasonPriority}},
	}, {
		name:   "shoal: backfill with a topology-aware reservation",
		policy: PolicyShoal,
		nodes:  cat(mkLeaf("a", 2, 8, "x", "s0"), mkLeaf("b", 2, 8, "y", "s0")),
		jobs: []*cluster.Job{runningFor(8, now, hour, "a1"), runningFor(9, now, hour, "b1"),
			holding(10, cluster.JobRunning, false, "a2", seq(0, 3))},
		queue: []*cluster.Job{limited(1, 2, 8, hour), limited(2, 1, 4, 3*hour), limited(3, 1, 4, hour)},
		want: want{
			// At now+1h a1 and b1 are free, a2 still half busy (job 10
			// has no limit): the reservation is leaf y, where first fit
			// would take a1 and b1. Job 2 runs past it, so it may not use
			// b2: it takes a2's other half. Job 3 ends by then and takes
			// half of b2.
			decisions: []Decision{{Job: 2, Nodes: []Assignment{asg("a2", 4, 5, 6, 7)}},
				{Job: 3, Nodes: []Assignment{asg("b2", 0, 1, 2, 3)}}},
			reasons:     reasons{1: cluster.ReasonResources},
			reservation: &Reservation{Job: 1, Start: now.Add(hour), Nodes: full("b1", "b2")},
		},
	}, {
		name:   "ReqNodeNotAvail and BadConstraints block nothing",
		policy: PolicyBackfill,
		nodes:  mkLeaf("n", 1, 8, "a", "s0"),
		queue:  []*cluster.Job{pending(1, 2, 1), pending(2, 0, 1), pending(3, 1, 8)},
		want: want{
			decisions: []Decision{{Job: 3, Nodes: full("n1")}},
			reasons:   reasons{1: cluster.ReasonReqNodeNotAvail, 2: ReasonBadConstraints},
		},
	}, {
		name:    "OmitReasons",
		policy:  PolicyFIFO,
		nodes:   mkLeaf("n", 1, 8, "a", "s0"),
		queue:   []*cluster.Job{pending(1, 1, 4), pending(2, 1, 8), pending(3, 1, 1)},
		want:    want{decisions: []Decision{{Job: 1, Nodes: []Assignment{asg("n1", 0, 1, 2, 3)}}}},
		omitted: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := Result{Decisions: tt.want.decisions, Reasons: tt.want.reasons, Reservation: tt.want.reservation}
			if w.Reasons == nil {
				w.Reasons = reasons{}
			}
			got, err := PlaceWith(NewView(tt.nodes, tt.jobs), tt.queue, now, Options{Policy: tt.policy, OmitReasons: tt.omitted})
			if err != nil {
				t.Fatalf("PlaceWith() error %v", err)
			}
			if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("PlaceWith(%s) = %+v; want %+v; diff (-want +got):\n%s", tt.policy, got, w, diff)
			}
		})
	}
}

func TestPlaceWithPolicyNames(t *testing.T) {
	tests := []struct {
		in      string
		wantErr bool
	}{{"fifo", false}, {"backfill", false}, {"shoal", false}, {"", true}, {"FIFO", true}, {"easy", true}}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			p, err := ParsePolicy(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParsePolicy(%q) = %q, %v; want error %v", tt.in, p, err, tt.wantErr)
			}
			_, err = PlaceWith(NewView(nil, nil), nil, now, Options{Policy: Policy(tt.in)})
			if wantErr := tt.wantErr && tt.in != ""; (err != nil) != wantErr {
				t.Fatalf("PlaceWith(policy %q) error %v; want error %v", tt.in, err, wantErr)
			}
		})
	}
}

// TestViewStartFinish checks the incremental View against one built from
// scratch, and that Start refuses to double-book (DESIGN invariant 1).
func TestViewStartFinish(t *testing.T) {
	nodes := cat(mkLeaf("a", 2, 8, "x", "s0"), mkLeaf("b", 2, 8, "y", "s0"))
	j1 := runningFor(1, now, hour(), "a1")
	j2 := holding(2, cluster.JobRunning, false, "b1", []int{0, 1}, "b2", []int{7})
	j2.StartTime, j2.Spec.Request.TimeLimit = now, time.Minute
	v := NewView(nodes, nil)
	for _, j := range []*cluster.Job{j1, j2} {
		if err := v.Start(j); err != nil {
			t.Fatalf("Start(job %d) = %v", j.ID, err)
		}
	}
	same := func(t *testing.T, got, want *View) {
		t.Helper()
		opt := cmp.AllowUnexported(View{}, nodeInfo{}, leafInfo{}, span{}, holder{}, heldNode{})
		if diff := cmp.Diff(want, got, opt, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("incremental view differs from NewView (-want +got):\n%s", diff)
		}
	}
	same(t, v, NewView(nodes, []*cluster.Job{j2, j1}))

	errs := []struct {
		name string
		job  *cluster.Job
		is   error
	}{
		{"nil job", nil, nil},
		{"no alloc", pending(3, 1, 1), nil},
		{"already holds", runningFor(1, now, 0, "a2"), nil},
		{"unknown node", holding(3, cluster.JobRunning, false, "zz", []int{0}), nil},
		{"gpu out of range", holding(3, cluster.JobRunning, false, "a2", []int{8}), nil},
		{"gpu twice", holding(3, cluster.JobRunning, false, "a2", []int{1, 1}), nil},
		{"node twice", holding(3, cluster.JobRunning, false, "a2", []int{1}, "a2", []int{2}), nil},
		{"all released", holding(3, cluster.JobRunning, true, "a2", []int{1}), nil},
		{"double booking", holding(3, cluster.JobRunning, false, "a2", []int{0}, "b1", []int{1}), ErrTaken},
	}
	for _, e := range errs {
		t.Run(e.name, func(t *testing.T) {
			err := v.Start(e.job)
			if err == nil || (e.is != nil && !errors.Is(err, e.is)) {
				t.Fatalf("Start() = %v; want an error (wrapping %v)", err, e.is)
			}
			same(t, v, NewView(nodes, []*cluster.Job{j1, j2}))
		})
	}
	if err := v.Finish(1); err != nil {
		t.Fatalf("Finish(1) = %v", err)
	}
	same(t, v, NewView(nodes, []*cluster.Job{j2}))
	if err := v.Finish(1); err == nil {
		t.Fatal("Finish(1) twice: want an error")
	}
	if err := v.Finish(2); err != nil {
		t.Fatalf("Finish(2) = %v", err)
	}
	same(t, v, NewView(nodes, nil))
}

// TestFinishSharedGPU: a GPU that two allocations list (inconsistent
// input NewView tolerates) stays taken until both have finished.
func TestFinishSharedGPU(t *testing.T) {
	nodes := []*cluster.Node{mkNode("n1", 1, "a", "s0")}
	v := NewView(nodes, []*cluster.Job{
		holding(1, cluster.JobRunning, false, "n1", []int{0}),
		holding(2, cluster.JobRunning, false, "n1", []int{0}),
	})
	q := []*cluster.Job{pending(3, 1, 1)}
	for _, id := range []cluster.JobID{1, 2} {
		if got := Place(v, q, now); len(got.Decisions) != 0 {
			t.Fatalf("Place() before job %d finished = %+v; want nothing placed", id, got)
		}
		if err := v.Finish(id); err != nil {
			t.Fatalf("Finish(%d) = %v", id, err)
		}
	}
	if got := Place(v, q, now); len(got.Decisions) != 1 {
		t.Fatalf("Place() after both finished = %+v; want job 3 placed", got)
	}
}

func hour() time.Duration { return time.Hour }
