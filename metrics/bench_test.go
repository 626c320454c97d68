package metrics

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/gossip"
)

// BenchmarkScrapeLeader100Nodes is one /metrics scrape of the leader of a
// 100-node cluster (8 GPUs each) with 400 one-node jobs running and 200
// pending: the Reading's Samples, the Go and process collectors, the
// histograms, and the text encoding. (The agent's own gathering adds a
// raft configuration read and a gossip member list.)
func BenchmarkScrapeLeader100Nodes(b *testing.B) {
	s := fsm.New()
	idx := uint64(0)
	apply := func(t fsm.CmdType, body any) {
		idx++
		data, err := fsm.Encode(t, body)
		if err != nil {
			b.Fatal(err)
		}
		if r := s.Apply(idx, data); r.Err != nil {
			b.Fatalf("apply %s: %v", t, r.Err)
		}
	}
	var members []gossip.Member
	for i := range 100 {
		n := cluster.Node{Name: fmt.Sprintf("n%03d", i), APIAddr: "127.0.0.1:7070", CPUs: 64, MemoryMiB: 512 << 10}
		for g := range 8 {
			n.GPUs = append(n.GPUs, cluster.GPU{Index: g, UUID: fmt.Sprintf("GPU-%d-%d", i, g)})
		}
		apply(fsm.CmdUpsertNode, fsm.UpsertNode{Node: n, Time: t0})
		members = append(members, gossip.Member{Name: n.Name, Status: gossip.StatusAlive})
	}
	for i := range 600 {
		apply(fsm.CmdSubmitJob, fsm.SubmitJob{RequestID: fmt.Sprint(i), Spec: spec(2), Time: t0})
	}
	var ds []fsm.Decision
	for i := range 400 {
		ds = append(ds, fsm.Decision{Job: cluster.JobID(i + 1), Nodes: []fsm.Placement{{
			Node: fmt.Sprintf("n%03d", i/4), GPUs: []int{2 * (i % 4), 2*(i%4) + 1},
		}}})
	}
	apply(fsm.CmdAllocate, fsm.Allocate{Time: t0, Decisions: ds})
	v := s.View()
	m := New(func() Reading {
		return Reading{Now: t0.Add(time.Minute), Node: "n000", View: v, Leader: true, Members: members,
			RaftConfigReadable: true, Raft: RaftReading{Voters: 5, Nonvoters: 95}, LastRenew: t0}
	})
	h := m.Handler()
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		if rec.Code != 200 {
			b.Fatalf("scrape: %d %s", rec.Code, rec.Body)
		}
	}
}
