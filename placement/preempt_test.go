package placement

import (
	"slices"
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
	tests := []struct {
		name    string
		jobs    []*cluster.Job
		want    *cluster.Job
		cands   []cluster.JobID // of jobs; nil: all
		victims []cluster.JobID
		ok      bool
	}{{
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
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewView(nodes, tt.jobs)
			got, ok := Victims(v, tt.want, among(tt.jobs, tt.cands), now)
			if ok != tt.ok || !slices.Equal(got, tt.victims) {
				t.Fatalf("Victims = %v, %v; want %v, %v", got, ok, tt.victims, tt.ok)
			}
			if ok {
				checkFitsAfter(t, nodes, tt.jobs, tt.want, Plan{Victims: got}, now)
			}
		})
	}
}
