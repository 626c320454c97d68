package leader

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/placement"
)

// TestQueueOptions: the queue policy's scheduler picks the pass's
// placement options; under qssf they carry QSSFOrder's inputs: the
// multifactor order, fair-share factors, the tunables, and run times
// predicted from the users' finished jobs (live or archived).
func TestQueueOptions(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	h := time.Hour
	job := func(id cluster.JobID, user string, limit time.Duration) *cluster.Job {
		return &cluster.Job{ID: id, State: cluster.JobPending, SubmitTime: t0,
			Spec: cluster.Spec{User: user, Request: cluster.Request{Nodes: 1, GPUsPerNode: 8, TimeLimit: limit}}}
	}
	ran := func(id cluster.JobID, user string, limit, took time.Duration) *cluster.Job {
		j := job(id, user, limit)
		j.State, j.StartTime, j.EndTime = cluster.JobCompleted, t0.Add(-10*h), t0.Add(-10*h+took)
		return j
	}
	// ada's finished jobs used a quarter and three quarters of their
	// limits: her jobs are predicted to run half theirs. bob has none.
	history := []*cluster.Job{ran(1, "ada", 4*h, h), ran(2, "ada", 4*h, 3*h)}
	pending := []*cluster.Job{job(3, "bob", 2*h), job(4, "ada", 2*h), job(5, "bob", 0)}
	prs := []placement.Priority{
		{Job: 5, Factors: placement.Factors{FairShare: 1}},
		{Job: 3, Factors: placement.Factors{FairShare: 1}},
		{Job: 4, Factors: placement.Factors{FairShare: 0.25}},
	}
	for _, tc := range []struct {
		name string
		pol  cluster.Policy
		want placement.Options
	}{{
		name: "default: multifactor priority order",
		pol:  cluster.DefaultPolicy(),
		want: placement.Options{Policy: placement.PolicyShoal, Order: []cluster.JobID{5, 3, 4}},
	}, {
		name: "qssf: predictions, fair share and tunables",
		pol:  cluster.Policy{Scheduler: cluster.SchedulerQSSF, StarveAfter: 48 * h, AgingHalf: 2 * h},
		want: placement.Options{Policy: placement.PolicyQSSF, Order: []cluster.JobID{5, 3, 4},
			// bob: his limit; ada: half of hers; bob without a limit
			// and history: none (QSSFOrder then ranks it last).
			Estimates:   map[cluster.JobID]time.Duration{3: 2 * h, 4: h},
			FairShare:   map[cluster.JobID]float64{3: 1, 4: 0.25, 5: 1},
			StarveAfter: 48 * h, AgingHalf: 2 * h},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			// ada's first job is archived, her second still live.
			live := append(history[1:], pending...)
			got := QueueOptions(tc.pol, prs, placement.NewHistory(nil, history[:1]), live, pending)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("QueueOptions (-want +got):\n%s", diff)
			}
		})
	}
}
