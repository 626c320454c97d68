package placement

import (
	"fmt"
	"slices"
	"testing"

	"github.com/shoal-sched/shoal/cluster"
	"pgregory.net/rapid"
)

// TestSpreadProperties: with Options.Spread, over random clusters (jobs
// already holding CPUs) and queues with -n jobs of every distribution,
// every decision lays its ranks out validly and books no CPU twice
// (DESIGN invariant 1, which the FSM checks again on apply): a job's
// Tasks are on all its nodes or none, at least one each and NTasks in
// all, only for a job with -n; each node holds exactly the CPUs of its
// share (CPUsFor, or CPUsAt without Tasks), within the node, free.
func TestSpreadProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes, running, queue := genBackfill(t)
		for _, j := range queue {
			r := &j.Spec.Request
			if rapid.Bool().Draw(t, "ntasks") {
				// A valid -n request, as the submit path makes one: every
				// node runs a rank, TasksPerNode the most any runs.
				n := rapid.IntRange(r.Nodes, r.Nodes*3).Draw(t, "n")
				dist := rapid.SampledFrom([]string{"", "cyclic", "plane=2"}).Draw(t, "dist")
				counts, err := cluster.LayoutCounts(n, r.Nodes, dist)
				if err != nil || slices.Contains(counts, 0) {
					continue
				}
				r.NTasks, r.Distribution, r.TasksPerNode = n, dist, slices.Max(counts)
			}
		}
		policy := rapid.SampledFrom(Policies()).Draw(t, "policy")
		res, err := PlaceWith(NewView(nodes, running), queue, now, Options{Policy: policy, Spread: true})
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]*cluster.Node{}
		for _, n := range nodes {
			if _, dup := byName[n.Name]; !dup {
				byName[n.Name] = n
			}
		}
		byID := map[cluster.JobID]*cluster.Job{}
		for _, j := range queue {
			byID[j.ID] = j
		}
		held := map[string]bool{}
		for _, j := range running {
			for _, na := range j.Alloc.Nodes {
				for _, c := range na.CPUs {
					held[fmt.Sprintf("%s/%d", na.Node, c)] = true
				}
			}
		}
		for _, d := range res.Decisions {
			req := byID[d.Job].Spec.Request
			with, sum := 0, 0
			for _, a := range d.Nodes {
				if a.Tasks > 0 {
					with++
				}
				sum += a.Tasks
			}
			if with > 0 && (with != len(d.Nodes) || sum != req.NTasks || req.NTasks == 0) {
				t.Fatalf("job %d (ntasks %d): tasks %+v; want all nodes or none, %d in all", d.Job, req.NTasks, d.Nodes, req.NTasks)
			}
			for k, a := range d.Nodes {
				n := byName[a.Node]
				want := req.CPUsAt(n, k, len(d.Nodes))
				if a.Tasks > 0 {
					want = req.CPUsFor(n, a.Tasks)
				}
				if n.CPUs > 0 && len(a.CPUs) != want {
					t.Fatalf("job %d on %s: %d CPUs for %d tasks; want %d", d.Job, a.Node, len(a.CPUs), a.Tasks, want)
				}
				for _, c := range a.CPUs {
					key := fmt.Sprintf("%s/%d", a.Node, c)
					if c < 0 || c >= n.CPUs || held[key] {
						t.Fatalf("job %d on %s: CPU %d out of range or held", d.Job, a.Node, c)
					}
					held[key] = true
				}
			}
		}
	})
}
