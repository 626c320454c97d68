package leader

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/placement"
)

// TestPassHistory: a pass given the History its predecessor left
// (PassInput.History, as the scheduling loop carries it) plans exactly
// what a pass without one plans, and its queue inputs (priorities,
// predicted run times, the order) are exactly those computed from every
// job record, over random runs of a real FSM: jobs submitted, placed,
// run and ended, archived (the oldest dropped at a small ArchiveMax),
// the policy changed (scheduler, half-life, weights, shares), the state
// restored from its snapshot, the clock moved. DESIGN: decisions are
// pure functions of the replicated state.
func TestPassHistory(t *testing.T) {
	var archived, restored, reused int
	rapid.Check(t, func(t *rapid.T) {
		h := &harness{s: fsm.New(), now: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
		must := func(r fsm.Result, err error) {
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
		}
		for i := range 3 {
			n := cluster.Node{Name: fmt.Sprint("n", i), APIAddr: "127.0.0.1:7000", CPUs: 64,
				Topology: cluster.Topology{Switch: "leaf0", SwitchParent: "spine0"}}
			for g := range 4 {
				n.GPUs = append(n.GPUs, cluster.GPU{Index: g, UUID: fmt.Sprintf("GPU-%d-%d", i, g), Model: "H100"})
			}
			must(h.apply(fsm.CmdUpsertNode, fsm.UpsertNode{Node: n, Time: h.now}))
		}
		rec := &recorder{h: h}
		var hist *placement.History
		for step := range rapid.IntRange(1, 30).Draw(t, "steps") {
			switch rapid.IntRange(0, 6).Draw(t, "op") {
			case 0, 1:
				for range rapid.IntRange(1, 4).Draw(t, "submit") {
					sp := cluster.Spec{Name: "train", Command: []string{"train"}, UID: 1000, GID: 1000,
						User:    rapid.SampledFrom([]string{"ann", "bob", "cy"}).Draw(t, "user"),
						Account: rapid.SampledFrom([]string{"", "bio", "phys"}).Draw(t, "account"),
						Request: cluster.Request{Nodes: rapid.IntRange(1, 2).Draw(t, "nodes"), GPUsPerNode: rapid.IntRange(1, 4).Draw(t, "gpus"),
							TimeLimit: time.Duration(rapid.SampledFrom([]int{0, 600, 3600}).Draw(t, "limit")) * time.Second}.WithDefaults()}
					must(h.apply(fsm.CmdSubmitJob, fsm.SubmitJob{Spec: sp, Time: h.now}))
				}
			case 2: // some running jobs run and end
				for _, j := range h.s.View().Jobs() {
					if j.State != cluster.JobRunning || j.Alloc == nil || !rapid.Bool().Draw(t, "end") {
						continue
					}
					for _, n := range j.Alloc.NodeNames() {
						must(h.apply(fsm.CmdTaskStarted, fsm.TaskStarted{Job: j.ID, Incarnation: j.Incarnation, Node: n, Time: h.now}))
					}
					h.now = h.now.Add(time.Duration(rapid.IntRange(1, 7200).Draw(t, "ran")) * time.Second)
					for _, n := range j.Alloc.NodeNames() {
						must(h.apply(fsm.CmdTaskExited, fsm.TaskExited{Job: j.ID, Incarnation: j.Incarnation, Node: n,
							ExitCode: rapid.IntRange(0, 1).Draw(t, "code"), Time: h.now}))
					}
				}
			case 3:
				before := h.now.Add(-time.Duration(rapid.IntRange(0, 3600).Draw(t, "age")) * time.Second)
				must(h.apply(fsm.CmdArchiveJobs, fsm.ArchiveJobs{Before: before, Time: h.now}))
			case 4:
				p := cluster.DefaultPolicy()
				p.Scheduler = rapid.SampledFrom([]string{"", cluster.SchedulerQSSF}).Draw(t, "scheduler")
				p.HalfLife = rapid.SampledFrom([]time.Duration{0, time.Hour, 7 * 24 * time.Hour}).Draw(t, "halfLife")
				p.Weights.FairShare = int64(rapid.IntRange(0, 100000).Draw(t, "wFairShare"))
				p.Weights.JobSize = int64(rapid.IntRange(0, 1000).Draw(t, "wSize"))
				p.ArchiveMax = rapid.IntRange(0, 12).Draw(t, "archiveMax")
				if rapid.Bool().Draw(t, "accounts") {
					p.Accounts = []cluster.AccountShare{{Name: "bio", Shares: int64(rapid.IntRange(1, 9).Draw(t, "bioShares")),
						Users: []cluster.UserShare{{Name: "ann", Shares: int64(rapid.IntRange(1, 9).Draw(t, "annShares"))}}}}
				}
				must(h.apply(fsm.CmdSetPolicy, fsm.SetPolicy{Policy: p, Time: h.now}))
			case 5:
				data, err := h.s.Snapshot()
				if err != nil {
					t.Fatalf("snapshot: %v", err)
				}
				if err := h.s.Restore(data); err != nil {
					t.Fatalf("restore: %v", err)
				}
				restored++
			case 6:
				h.now = h.now.Add(time.Duration(rapid.IntRange(1, 36000).Draw(t, "tick")) * time.Second)
			}
			if len(h.s.View().Archived()) > 0 {
				archived++
			}
			v, now := h.s.View(), h.now
			want, err := Pass(PassInput{View: v, Now: now})
			if err != nil {
				t.Fatalf("step %d: pass: %v", step, err)
			}
			got, err := Pass(PassInput{View: v, Now: now, History: hist})
			if err != nil {
				t.Fatalf("step %d: pass with history: %v", step, err)
			}
			if got.History != nil && got.History == hist {
				reused++
			}
			if got.History != nil {
				checkQueueInputs(t, step, v, now, got)
			}
			want.History, got.History = nil, nil
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d: plan with the last pass's History differs (-without +with):\n%s", step, gocmp.Diff(want, got))
			}
			// Act as the scheduling loop does, carrying its History.
			s := Scheduler{State: h.s, Propose: rec, Clock: fixedClock(now), Metrics: rec, Log: slog.New(slog.DiscardHandler)}
			if hist, err = s.Pass(context.Background(), v, hist); err != nil {
				t.Fatalf("step %d: scheduler pass: %v", step, err)
			}
		}
	})
	// The runs above must have reached what they check.
	if archived == 0 || restored == 0 || reused == 0 {
		t.Errorf("passes with an archive %d, restores %d, Histories reused %d; want each > 0", archived, restored, reused)
	}
}

// checkQueueInputs checks p's priorities, predictions and order against
// those computed from every record of v (no History).
func checkQueueInputs(t *rapid.T, step int, v *fsm.View, now time.Time, p Plan) {
	pol := QueuePolicy(v)
	wantPrs := Priorities(v, now)
	gotPrs := placement.PrioritiesWith(pol, p.History, v.Jobs(), ClusterGPUs(v), now)
	if !reflect.DeepEqual(gotPrs, wantPrs) {
		t.Fatalf("step %d: priorities with the History differ (-records +history):\n%s", step, gocmp.Diff(wantPrs, gotPrs))
	}
	var queue []*cluster.Job
	for _, id := range p.Order {
		j, _ := v.Job(id)
		queue = append(queue, j)
	}
	want := QueueOptions(pol, wantPrs, nil, jobRecords(v), queue)
	got := QueueOptions(pol, gotPrs, p.History, v.Jobs(), queue)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("step %d: queue options with the History differ (-records +history):\n%s", step, gocmp.Diff(want, got))
	}
	order := want.Order
	if want.Policy == placement.PolicyQSSF {
		order = placement.QSSFOrder(queue, now, want)
	}
	if !slices.Equal(p.Order, order) {
		t.Fatalf("step %d: pass order %v; from every record %v", step, p.Order, order)
	}
}
