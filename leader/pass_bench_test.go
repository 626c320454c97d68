package leader

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
)

// benchArchived and benchQueued size benchState.
const benchArchived, benchQueued = 100000, 1000

// benchState is a real FSM with 64 nodes × 8 GPUs, the qssf queue
// policy, 100,000 finished jobs in the accounting archive (1 to 4 hours
// each, from 500 users in 20 accounts; archived 500 at a time, as the
// archive loop does) and 1,000 pending jobs of 1 to 4 nodes × 8 GPUs
// with limits.
func benchState(b *testing.B) (*fsm.State, time.Time) {
	h := &harness{s: fsm.New(), now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	apply := func(t fsm.CmdType, body any) fsm.Result {
		r, err := h.apply(t, body)
		if err == nil {
			err = r.Err
		}
		if err != nil {
			b.Fatalf("apply %v: %v", t, err)
		}
		return r
	}
	const nodes, gpus = 64, 8
	for i := range nodes {
		n := cluster.Node{Name: fmt.Sprintf("n%02d", i), APIAddr: "127.0.0.1:7000", CPUs: 64,
			Topology: cluster.Topology{Switch: fmt.Sprint("leaf", i/16), SwitchParent: "spine0"}}
		for g := range gpus {
			n.GPUs = append(n.GPUs, cluster.GPU{Index: g, UUID: fmt.Sprintf("GPU-%d-%d", i, g), Model: "H100"})
		}
		apply(fsm.CmdUpsertNode, fsm.UpsertNode{Node: n, Time: h.now})
	}
	pol := cluster.DefaultPolicy()
	pol.Scheduler = cluster.SchedulerQSSF
	apply(fsm.CmdSetPolicy, fsm.SetPolicy{Policy: pol, Time: h.now})
	spec := func(i, nodes, gpus int, limit time.Duration) cluster.Spec {
		u := i * 7919 % 500
		return cluster.Spec{Name: "train", Command: []string{"train"}, UID: 1000, GID: 1000,
			User: fmt.Sprintf("user%03d", u), Account: fmt.Sprintf("acct%02d", u%20),
			Request: cluster.Request{Nodes: nodes, GPUsPerNode: gpus, TimeLimit: limit}.WithDefaults()}
	}
	const round = 500 // one GPU each, every GPU at most once
	for r := range benchArchived / round {
		var ds []fsm.Decision
		for k := range round {
			i := r*round + k
			id := apply(fsm.CmdSubmitJob, fsm.SubmitJob{Spec: spec(i, 1, 1, time.Duration(1+i%8)*time.Hour), Time: h.now}).JobID
			ds = append(ds, fsm.Decision{Job: id, Nodes: []fsm.Placement{{Node: fmt.Sprintf("n%02d", k%nodes), GPUs: []int{k / nodes}, CPUs: []int{k / nodes}}}})
		}
		for batch := range slices.Chunk(ds, MaxDecisionsPerApply) {
			if r := apply(fsm.CmdAllocate, fsm.Allocate{Time: h.now, Consumable: true, Decisions: batch}); len(r.Rejected) > 0 {
				b.Fatalf("allocate: %v", r.Rejected)
			}
		}
		for _, j := range h.s.View().Jobs() {
			if j.State != cluster.JobRunning {
				continue
			}
			n := j.Alloc.Nodes[0].Node
			apply(fsm.CmdTaskStarted, fsm.TaskStarted{Job: j.ID, Incarnation: j.Incarnation, Node: n, Time: h.now.Add(-time.Duration(1+int(j.ID)%4) * time.Hour)})
			apply(fsm.CmdTaskExited, fsm.TaskExited{Job: j.ID, Incarnation: j.Incarnation, Node: n, Time: h.now})
		}
		h.now = h.now.Add(10 * time.Minute)
		apply(fsm.CmdArchiveJobs, fsm.ArchiveJobs{Before: h.now, Time: h.now})
	}
	for i := range benchQueued {
		apply(fsm.CmdSubmitJob, fsm.SubmitJob{Spec: spec(i, 1+i%4, gpus, time.Duration(1+i%8)*time.Hour), Time: h.now})
	}
	if n := len(h.s.View().Archived()); n != benchArchived {
		b.Fatalf("%d archived jobs; want %d", n, benchArchived)
	}
	return h.s, h.now.Add(time.Minute)
}

// BenchmarkPassArchive100k is one scheduling pass of the leader under
// the qssf queue policy with 100,000 finished jobs archived and 1,000
// pending (benchState): "cold" as every pass was before the archive's
// History was carried over, and as a leader's first pass is; "warm" as
// the next passes are, with the History of the last pass (the archive
// unchanged since). The plan is not applied, so each pass decides the
// same.
func BenchmarkPassArchive100k(b *testing.B) {
	s, now := benchState(b)
	v := s.View()
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if p, err := Pass(PassInput{View: v, Now: now}); err != nil || len(p.Order) != benchQueued {
				b.Fatalf("Pass: %d ordered, %v; want %d", len(p.Order), err, benchQueued)
			}
		}
	})
	b.Run("warm", func(b *testing.B) {
		p, err := Pass(PassInput{View: v, Now: now})
		if err != nil {
			b.Fatal(err)
		}
		hist := p.History
		b.ReportAllocs()
		for b.Loop() {
			if p, err := Pass(PassInput{View: v, Now: now, History: hist}); err != nil || len(p.Order) != benchQueued {
				b.Fatalf("Pass: %d ordered, %v; want %d", len(p.Order), err, benchQueued)
			}
		}
	})
}
