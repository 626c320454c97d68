package fsm

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// BenchmarkApplySubmit measures one SubmitJob entry, request id dedupe and
// hash included.
func BenchmarkApplySubmit(b *testing.B) {
	s := New()
	entries := make([][]byte, 1024)
	for i := range entries {
		entries[i] = mustEncode(b, CmdSubmitJob, SubmitJob{RequestID: fmt.Sprintf("req-%d", i), Spec: spec(2, 4), Time: t0})
	}
	b.ReportAllocs()
	index := uint64(0)
	for i := 0; b.Loop(); i++ {
		index++
		// Repeating request ids after the first 1024 exercises the duplicate path too.
		if r := s.Apply(index, entries[i%len(entries)]); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}

// BenchmarkView measures building a view after each change of a state with
// 10,000 jobs (half running) and 1,000 nodes: the cost blocking queries pay.
func BenchmarkView(b *testing.B) {
	h := newHarness()
	const nodes, jobs = 1000, 10000
	for i := range nodes {
		h.must(b, CmdUpsertNode, UpsertNode{Node: gpuNode(fmt.Sprintf("n%04d", i), 8, "leaf0")})
	}
	var ds []Decision
	for i := range jobs {
		h.must(b, CmdSubmitJob, SubmitJob{RequestID: fmt.Sprintf("req-%d", i), Spec: spec(1, 1)})
		if i%2 == 0 {
			n := i / 2
			ds = append(ds, place(cluster.JobID(i+1), fmt.Sprintf("n%04d", n%nodes), []int{n / nodes}))
		}
	}
	if r := h.must(b, CmdAllocate, Allocate{Decisions: ds}); len(r.Rejected) != 0 {
		b.Fatalf("setup rejected %d decisions, first %+v", len(r.Rejected), r.Rejected[0])
	}
	reasons := []string{cluster.ReasonResources, cluster.ReasonPriority}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h.must(b, CmdSetReasons, SetReasons{Reasons: []JobReason{{Job: 2, Reason: reasons[i%2]}}})
		if v := h.s.View(); len(v.Jobs()) != jobs {
			b.Fatalf("view has %d jobs; want %d", len(v.Jobs()), jobs)
		}
	}
}

// BenchmarkForgetRequests is one aging pass (ArchiveJobs with
// ForgetRequests) over a table of n stamped request ids, a twentieth of
// them new (to stamp) and a twentieth old enough to forget: what every
// replica spends applying it. BENCHMARKS.md, "Request ids".
func BenchmarkForgetRequests(b *testing.B) {
	for _, n := range []int{10_000, 30_000, 200_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			now := t0.Add(time.Hour)
			pairs := make([]ridPair, n)
			for i := range pairs {
				p := ridPair{RequestID: fmt.Sprintf("s1000/%032x", i), Job: cluster.JobID(i + 1), Kind: ridStep, At: now.Add(-time.Minute)}
				switch i % 20 {
				case 0:
					p.At = time.Time{}
				case 1:
					p.At = now.Add(-cluster.RequestIDRetention - time.Second)
				}
				pairs[i] = p
			}
			table := newRIDTable(pairs)
			s := New()
			b.ResetTimer()
			for b.Loop() {
				s.rids = table
				s.forgetRequests(now)
			}
		})
	}
}
