package placement

import (
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// TestPreempt: preemption shrinks elastic jobs rather than stopping jobs,
// mixes both when shrinking alone is not enough, and keeps no shrink or
// victim it can spare.
func TestPreempt(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	running := func(id cluster.JobID, ran time.Duration, byNode ...any) *cluster.Job {
		return runningSince(now, id, ran, byNode...)
	}
	// elastic: a running elastic job with minimum min.
	elastic := func(id cluster.JobID, min int, ran time.Duration, byNode ...any) *cluster.Job {
		j := running(id, ran, byNode...)
		j.Alloc.Elastic = true
		j.Spec.Request.Nodes, j.Spec.Request.NodesMax = min, len(byNode)/2
		return j
	}
	nodes := cat(mkLeaf("a", 2, 4, "a", "s0"), mkLeaf("b", 2, 4, "b", "s0"))
	tests := []preemptCase{{
		name: "shrinking alone makes room: nobody stopped, though a cheaper victim would do",
		jobs: []*cluster.Job{
			elastic(1, 2, 10*time.Hour, "a1", seq(0, 3), "a2", seq(0, 3), "b1", seq(0, 3)),
			running(2, time.Minute, "b2", seq(0, 3)),
		},
		want:    pending(10, 1, 4),
		shrinks: []Shrink{{Job: 1, Node: "b1"}},
		ok:      true,
	}, {
		name: "shrinking frees one node, a 2-node job needs a victim too",
		jobs: []*cluster.Job{
			elastic(1, 2, time.Hour, "a1", seq(0, 3), "a2", seq(0, 3), "b1", seq(0, 3)),
			running(2, time.Hour, "b2", seq(0, 3)),
		},
		want:    pending(10, 2, 4),
		shrinks: []Shrink{{Job: 1, Node: "b1"}},
		victims: []cluster.JobID{2},
		ok:      true,
	}, {
		name: "the cheapest victim that completes the room; the dearer spared",
		jobs: []*cluster.Job{
			elastic(1, 1, time.Hour, "a1", seq(0, 3), "a2", seq(0, 3)),
			running(2, 9*time.Hour, "b1", seq(0, 3)),
			running(3, time.Hour, "b2", seq(0, 3)),
		},
		want:    pending(10, 2, 4),
		shrinks: []Shrink{{Job: 1, Node: "a2"}},
		victims: []cluster.JobID{3},
		ok:      true,
	}, {
		name: "an elastic job stopped whole gives up no node besides",
		jobs: []*cluster.Job{
			elastic(1, 1, time.Minute, "a1", seq(0, 3), "a2", seq(0, 3)),
			running(2, 9*time.Hour, "b1", seq(0, 3), "b2", seq(0, 3)),
		},
		want:    pending(10, 2, 4),
		victims: []cluster.JobID{1},
		ok:      true,
	}, {
		name: "a shrink no longer needed once a victim is chosen is spared",
		jobs: []*cluster.Job{
			elastic(1, 1, time.Hour, "a1", seq(0, 3), "a2", seq(0, 3)),
			running(2, time.Minute, "b1", seq(0, 3), "b2", seq(0, 3)),
		},
		want:    pending(10, 2, 4),
		victims: []cluster.JobID{2},
		ok:      true,
	}, {
		name: "at its minimum an elastic job offers nothing: stopping is the only way",
		jobs: []*cluster.Job{
			elastic(1, 2, time.Minute, "a1", seq(0, 3), "a2", seq(0, 3)),
			running(2, time.Hour, "b1", seq(0, 3), "b2", seq(0, 3)),
		},
		want:    pending(10, 1, 4),
		victims: []cluster.JobID{1},
		ok:      true,
	}, {
		name: "not enough even with every candidate",
		jobs: []*cluster.Job{
			elastic(1, 1, time.Hour, "a1", seq(0, 3), "a2", seq(0, 3)),
			running(2, time.Hour, "b1", seq(0, 3), "b2", seq(0, 3)),
		},
		want:  pending(10, 3, 4),
		cands: []cluster.JobID{1},
		ok:    false,
	}}
	runPreemptCases(t, nodes, now, tests, "Preempt", func(v *View, job *cluster.Job, cands []*cluster.Job) (Plan, bool) {
		return Preempt(v, job, cands, now)
	})
}
