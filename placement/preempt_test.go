package placement

import (
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// TestVictims: the victim set frees a placement the policy would take, at
// the fewest GPU-hours lost, with no victim to spare.
func TestVictims(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	running := func(id cluster.JobID, ran time.Duration, byNode ...any) *cluster.Job {
		return runningSince(now, id, ran, byNode...)
	}
	nodes := cat(mkLeaf("a", 2, 4, "a", "s0"), mkLeaf("b", 2, 4, "b", "s0"))
	tests := []preemptCase{{
		name: "the cheaper of two that each free enough",
		jobs: []*cluster.Job{
			running(1, 10*time.Hour, "a1", seq(0, 3)),
			running(2, time.Hour, "a2", seq(0, 3)),
			running(3, time.Hour, "b1", seq(0, 3), "b2", seq(0, 3)),
		},
		want:    pending(10, 1, 4),
		victims: []cluster.JobID{2},
		ok:      true,
	}, {
		name: "a 2-node job: two cheap ones rather than one dear one",
		jobs: []*cluster.Job{
			running(1, 10*time.Hour, "a1", seq(0, 3), "a2", seq(0, 3)),
			running(2, time.Hour, "b1", seq(0, 3)),
			running(3, time.Hour, "b2", seq(0, 3)),
		},
		want:    pending(10, 2, 4),
		victims: []cluster.JobID{2, 3},
		ok:      true,
	}, {
		name: "half a node free: only the other half is needed",
		jobs: []*cluster.Job{
			running(1, time.Hour, "a1", seq(0, 1)),
			running(2, 2*time.Hour, "a2", seq(0, 3)),
			running(3, 3*time.Hour, "b1", seq(0, 3)),
			running(4, 4*time.Hour, "b2", seq(0, 3)),
		},
		want:    pending(10, 1, 4),
		victims: []cluster.JobID{1},
		ok:      true,
	}, {
		name: "a spared victim: freeing the cheap one first is not needed once the dear one goes",
		jobs: []*cluster.Job{
			running(1, time.Hour, "a1", seq(0, 0)),
			running(2, 2*time.Hour, "a1", seq(1, 3), "a2", seq(0, 3), "b1", seq(0, 3), "b2", seq(0, 3)),
		},
		want:    pending(10, 1, 4),
		victims: []cluster.JobID{2},
		ok:      true,
	}, {
		name: "only candidates may go: not enough",
		jobs: []*cluster.Job{
			running(1, time.Hour, "a1", seq(0, 3), "a2", seq(0, 3)),
			running(2, time.Hour, "b1", seq(0, 3), "b2", seq(0, 3)),
		},
		want:  pending(10, 3, 4),
		cands: []cluster.JobID{1},
		ok:    false,
	}}
	runPreemptCases(t, nodes, now, tests, "Victims", func(v *View, job *cluster.Job, cands []*cluster.Job) (Plan, bool) {
		victims, ok := Victims(v, job, cands, now)
		return Plan{Victims: victims}, ok
	})
}
