package placement

import (
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// TestEarliestStart: now when the job fits, else when enough running jobs
// reach their limits; never when it waits on jobs without limits.
func TestEarliestStart(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	nodes := mkLeaf("n", 2, 4, "a", "s0")
	limited := func(id cluster.JobID, limit time.Duration, node string) *cluster.Job {
		j := holding(id, cluster.JobRunning, false, node, seq(0, 3))
		j.StartTime, j.Spec.Request.TimeLimit = now, limit
		return j
	}
	for _, tc := range []struct {
		name  string
		jobs  []*cluster.Job
		want  *cluster.Job
		start time.Duration // after now; -1: not ok
	}{
		{"fits now", []*cluster.Job{limited(1, time.Hour, "n1")}, pending(9, 1, 4), 0},
		{"when the first limit ends", []*cluster.Job{limited(1, time.Hour, "n1"), limited(2, 2*time.Hour, "n2")}, pending(9, 1, 4), time.Hour},
		{"two nodes: when both have ended", []*cluster.Job{limited(1, time.Hour, "n1"), limited(2, 2*time.Hour, "n2")}, pending(9, 2, 4), 2 * time.Hour},
		{"behind a job with no limit", []*cluster.Job{limited(1, 0, "n1"), limited(2, 0, "n2")}, pending(9, 1, 4), -1},
		{"too big ever", nil, pending(9, 3, 4), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start, nodes, ok := EarliestStart(NewView(nodes, tc.jobs), tc.want, now)
			switch {
			case tc.start < 0 && ok:
				t.Fatalf("EarliestStart = %s on %v; want none", start, nodes)
			case tc.start >= 0 && (!ok || !start.Equal(now.Add(tc.start)) || len(nodes) != tc.want.Spec.Request.Nodes):
				t.Fatalf("EarliestStart = %s on %v, %v; want %s on %d nodes", start, nodes, ok, now.Add(tc.start), tc.want.Spec.Request.Nodes)
			}
		})
	}
}
