package worker

import (
	"slices"
	"testing"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
)

// TestAnswerFollow: when a server answers a follow query it holds.
func TestAnswerFollow(t *testing.T) {
	q := FollowQuery{Index: 10, Digest: "d1", Lease: 12}
	tests := []struct {
		name           string
		q              FollowQuery
		w              FollowWake
		answer, rehint bool
	}{
		{"nothing of the worker's changed: hold", q, FollowWake{Index: 11, Digest: "d1", Leader: "s1", Told: "s1"}, false, false},
		{"its state changed", q, FollowWake{Index: 11, Digest: "d2", Leader: "s1", Told: "s1"}, true, false},
		{"the wait is over", q, FollowWake{Index: 11, Digest: "d1", Leader: "s1", Told: "s1", WaitOver: true}, true, false},
		{"its lease entry applied", q, FollowWake{Index: 12, Digest: "d1", Leader: "s1", Told: "s1"}, true, false},
		{"a lease entry it has seen", FollowQuery{Index: 12, Digest: "d1", Lease: 12}, FollowWake{Index: 13, Digest: "d1", Leader: "s1", Told: "s1"}, false, false},
		{"a new leader: hints again", q, FollowWake{Index: 11, Digest: "d1", Leader: "s2", Told: "s1"}, true, true},
		{"a leader where the hints named none", q, FollowWake{Index: 11, Digest: "d1", Leader: "s2"}, true, true},
		{"no leader now: not news", q, FollowWake{Index: 11, Digest: "d1", Told: "s1"}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answer, rehint := AnswerFollow(tt.q, tt.w)
			if answer != tt.answer || rehint != tt.rehint {
				t.Errorf("AnswerFollow = %v, %v; want %v, %v", answer, rehint, tt.answer, tt.rehint)
			}
		})
	}
}

// TestFollowStateOf: a worker is sent the jobs that hold it and their
// nodes, the security state without the CA's key, and a digest that moves
// with any of them (node's follow_test round-trips it through a reply).
func TestFollowStateOf(t *testing.T) {
	nodes := []*cluster.Node{{Name: "w1", ModifyIndex: 1}, {Name: "w2", ModifyIndex: 1}, {Name: "w3", ModifyIndex: 1}}
	job := func(id cluster.JobID, modify uint64, on ...string) *cluster.Job {
		j := &cluster.Job{ID: id, ModifyIndex: modify, State: cluster.JobRunning, Alloc: &cluster.Allocation{}}
		for _, n := range on {
			j.Alloc.Nodes = append(j.Alloc.Nodes, cluster.NodeAlloc{Node: n})
		}
		return j
	}
	jobs := []*cluster.Job{job(1, 5, "w1", "w2"), job(2, 6, "w3")}
	sec := &cluster.Security{CAKey: []byte("secret"), TokenKey: []byte("tk")}
	st, sum := FollowStateOf(fsm.PartialView(10, jobs, nodes, nil, sec, nil), "w1")
	var names []string
	for _, n := range st.Nodes {
		names = append(names, n.Name)
	}
	if len(st.Jobs) != 1 || st.Jobs[0].ID != 1 || !slices.Equal(names, []string{"w1", "w2"}) {
		t.Errorf("FollowStateOf(w1) = %d jobs, nodes %v; want job 1 on w1, w2", len(st.Jobs), names)
	}
	if st.Security == nil || st.Security.CAKey != nil || string(st.Security.TokenKey) != "tk" || sec.CAKey == nil {
		t.Errorf("security sent = %+v (view's CA key %q); want the token key, no CA key, the view's untouched", st.Security, sec.CAKey)
	}
	moved := []*cluster.Job{job(1, 11, "w1", "w2"), jobs[1]}
	if _, s2 := FollowStateOf(fsm.PartialView(11, moved, nodes, nil, sec, nil), "w1"); s2 == sum {
		t.Error("digest unchanged after w1's job changed")
	}
	other := []*cluster.Job{jobs[0], job(2, 11, "w3")}
	if _, s3 := FollowStateOf(fsm.PartialView(11, other, nodes, nil, sec, nil), "w1"); s3 != sum {
		t.Error("digest of w1 changed with w3's job")
	}
}
