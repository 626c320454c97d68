package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/placement"
	"pgregory.net/rapid"
)

// TestReplayProperties replays random small traces on random clusters
// under every policy and checks the schedule independently of placement:
// no GPU is held by two jobs at once (DESIGN invariant 1), every gang has
// the requested shape, every job that fits the cluster runs for exactly
// its duration and no earlier than its submission, a job is unplaceable
// only if it cannot fit the empty cluster, and fifo (without fair share) starts jobs in
// submission order.
func TestReplayProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := Cluster{
			Nodes:          rapid.IntRange(1, 6).Draw(t, "nodes"),
			GPUsPerNode:    rapid.IntRange(1, 4).Draw(t, "gpn"),
			LeafSize:       rapid.IntRange(1, 3).Draw(t, "leaf"),
			LeavesPerSpine: rapid.IntRange(1, 2).Draw(t, "spine"),
		}
		policy := rapid.SampledFrom(placement.Policies()).Draw(t, "policy")
		var jobs []Job
		submit := int64(0)
		for i := range rapid.IntRange(0, 14).Draw(t, "jobs") {
			submit += int64(rapid.IntRange(0, 10).Draw(t, "gap"))
			j := Job{ID: fmt.Sprintf("j%d", i), Submit: submit, Duration: int64(rapid.IntRange(0, 30).Draw(t, "dur")),
				User: rapid.SampledFrom([]string{"", "u", "v"}).Draw(t, "user")}
			if rapid.Bool().Draw(t, "shaped") {
				j.Nodes, j.GPUsPerNode = rapid.IntRange(1, 4).Draw(t, "n"), rapid.IntRange(1, 5).Draw(t, "g")
				j.GPUs = j.Nodes * j.GPUsPerNode
			} else {
				j.GPUs = rapid.IntRange(1, 12).Draw(t, "gpus")
			}
			jobs = append(jobs, j)
		}
		limits := rapid.SampledFrom([]Limits{LimitsExact, LimitsNoisy}).Draw(t, "limits")
		fair := rapid.Bool().Draw(t, "fairshare")
		r, err := Replay(jobs, Options{Cluster: c, Policy: policy, Limits: limits, Seed: rapid.Uint64().Draw(t, "seed"),
			FairShare: fair})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Jobs) != len(jobs) {
			t.Fatalf("Replay() returned %d jobs for %d", len(r.Jobs), len(jobs))
		}
		type use struct {
			job        int
			start, end int64
		}
		held := map[string][]use{} // node/gpu -> uses
		lastStart := int64(-1)
		for i := range r.Jobs {
			o := &r.Jobs[i]
			req := o.Request
			fits := req.Nodes <= c.Nodes && req.GPUsPerNode <= c.GPUsPerNode
			if req.Nodes*req.GPUsPerNode < o.Job.GPUs {
				t.Fatalf("job %s: request %dx%d for %d GPUs", o.Job.ID, req.Nodes, req.GPUsPerNode, o.Job.GPUs)
			}
			if o.Ran() != fits {
				t.Fatalf("job %s (%dx%d on %v): ran %v, unplaceable %q", o.Job.ID, req.Nodes, req.GPUsPerNode, c, o.Ran(), o.Unplaceable)
			}
			if !o.Ran() {
				continue
			}
			if lim := o.Request.TimeLimit; lim < time.Duration(max(o.Job.Duration, 1))*time.Second ||
				(limits == LimitsExact && lim != time.Duration(max(o.Job.Duration, 1))*time.Second) {
				t.Fatalf("job %s: limit %s under --limits %s for duration %d s", o.Job.ID, lim, limits, o.Job.Duration)
			}
			if o.Start < o.Job.Submit || o.End != o.Start+o.Job.Duration {
				t.Fatalf("job %s: submit %d, start %d, end %d, duration %d", o.Job.ID, o.Job.Submit, o.Start, o.End, o.Job.Duration)
			}
			if policy == placement.PolicyFIFO && !fair { // fair share reorders
				if o.Start < lastStart {
					t.Fatalf("fifo started job %s at %d, before an earlier job's start %d", o.Job.ID, o.Start, lastStart)
				}
				lastStart = o.Start
			}
			if len(o.Nodes) != req.Nodes {
				t.Fatalf("job %s: %d nodes; want %d", o.Job.ID, len(o.Nodes), req.Nodes)
			}
			seen := map[string]bool{}
			for _, a := range o.Nodes {
				if seen[a.Node] || len(a.GPUs) != req.GPUsPerNode {
					t.Fatalf("job %s: assignment %+v repeats a node or has the wrong GPU count", o.Job.ID, a)
				}
				seen[a.Node] = true
				for _, g := range a.GPUs {
					if g < 0 || g >= c.GPUsPerNode {
						t.Fatalf("job %s: GPU %d of %s out of range", o.Job.ID, g, a.Node)
					}
					key := fmt.Sprintf("%s/%d", a.Node, g)
					for _, u := range held[key] {
						if o.Start < u.end && u.start < o.End {
							t.Fatalf("GPU %s held by job %s [%d,%d) and job %s [%d,%d)", key,
								r.Jobs[u.job].Job.ID, u.start, u.end, o.Job.ID, o.Start, o.End)
						}
					}
					held[key] = append(held[key], use{job: i, start: o.Start, end: o.End})
				}
			}
		}
	})
}
