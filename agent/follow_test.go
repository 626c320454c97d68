package agent

import (
	"fmt"
	"slices"
	"testing"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/gossip"
	"github.com/shoal-sched/shoal/leader"
	"github.com/shoal-sched/shoal/worker"
)

func followJob(id cluster.JobID, modify uint64, nodes ...cluster.NodeAlloc) *cluster.Job {
	return &cluster.Job{ID: id, ModifyIndex: modify, State: cluster.JobRunning, Alloc: &cluster.Allocation{Nodes: nodes}}
}

// TestFollowStateOf: a worker is sent exactly the jobs worker.Reconcile
// acts on for it (an unreleased share of the node), with the nodes of
// their allocations, and the digest it waits on changes with any of them
// (DESIGN "Membership and roles": workers follow their own allocations).
func TestFollowStateOf(t *testing.T) {
	nodes := []*cluster.Node{{Name: "w1", ModifyIndex: 1}, {Name: "w2", ModifyIndex: 1}, {Name: "w3", ModifyIndex: 1}}
	jobs := []*cluster.Job{
		followJob(1, 5, cluster.NodeAlloc{Node: "w1"}, cluster.NodeAlloc{Node: "w2"}),
		followJob(2, 6, cluster.NodeAlloc{Node: "w3"}),
		followJob(3, 7, cluster.NodeAlloc{Node: "w1", Released: true}),
		{ID: 4, State: cluster.JobPending},
	}
	v := fsm.PartialView(10, jobs, nodes, nil, nil, nil)
	st, sum := worker.FollowStateOf(v, "w1")
	var ids []cluster.JobID
	for _, j := range st.Jobs {
		ids = append(ids, j.ID)
	}
	var names []string
	for _, n := range st.Nodes {
		names = append(names, n.Name)
	}
	if !slices.Equal(ids, []cluster.JobID{1}) || !slices.Equal(names, []string{"w1", "w2"}) {
		t.Errorf("worker.FollowStateOf(w1) = jobs %v, nodes %v; want [1], [w1 w2]", ids, names)
	}
	if _, again := worker.FollowStateOf(v, "w1"); again != sum {
		t.Errorf("digest not stable: %s, then %s", sum, again)
	}
	if _, other := worker.FollowStateOf(v, "w3"); other == sum {
		t.Errorf("w1 and w3 have the same digest %s", sum)
	}
	changed := slices.Clone(jobs)
	changed[0] = followJob(1, 11, cluster.NodeAlloc{Node: "w1"}, cluster.NodeAlloc{Node: "w2"})
	if _, s2 := worker.FollowStateOf(fsm.PartialView(11, changed, nodes, nil, nil, nil), "w1"); s2 == sum {
		t.Error("digest unchanged after w1's job changed")
	}
	// An unrelated job's change does not wake w1.
	changed = slices.Clone(jobs)
	changed[1] = followJob(2, 11, cluster.NodeAlloc{Node: "w3"})
	if _, s3 := worker.FollowStateOf(fsm.PartialView(11, changed, nodes, nil, nil, nil), "w1"); s3 != sum {
		t.Error("digest of w1 changed with w3's job")
	}
	// The state round-trips into the worker's partial view.
	data, err := encodeFollowState(st, "w1")
	if err != nil {
		t.Fatal(err)
	}
	took, err := decodeFollowReply(api.FollowReply{Server: true, Index: 10, Digest: sum, State: data})
	if err != nil {
		t.Fatal(err)
	}
	var r worker.Remote
	r.Take(took)
	got := r.Current()
	if j, ok := got.Job(1); !ok || got.Index != 10 || j.Alloc.Find("w2") != 1 {
		t.Errorf("remote view = index %d, job 1 %v; want index 10 and job 1 on w1, w2", got.Index, ok)
	}
	if _, ok := got.Node("w2"); !ok {
		t.Error("remote view lacks node w2")
	}
	if _, err := decodeFollowReply(api.FollowReply{Server: true, Index: 11, State: []byte{0xc1}}); err == nil {
		t.Error("decodeFollowReply took a state that is not msgpack")
	}
	// Hints carry over as they are.
	hints, err := decodeFollowReply(api.FollowReply{Leader: "s1", LeaderAddr: "a1", Servers: []api.FollowServer{{Name: "s1", APIAddr: "a1", Voter: true}}, State: []byte{0xc1}})
	if err != nil || hints.Server || hints.Leader != "s1" || hints.LeaderAddr != "a1" || len(hints.Servers) != 1 || hints.Servers[0] != (worker.HintServer{Name: "s1", APIAddr: "a1", Voter: true}) {
		t.Errorf("decodeFollowReply(hints) = %+v, %v; want the hints of s1 and no state", hints, err)
	}
}

// TestReplicaCap: bounded membership waits for every live agent to be
// able to be a worker (a rolling upgrade from before workers keeps every
// node a server); negative replicas mean none.
func TestReplicaCap(t *testing.T) {
	alive := func(name string, protocol int) gossip.Member {
		return gossip.Member{Name: name, Status: gossip.StatusAlive, Meta: gossip.Meta{Protocol: protocol}}
	}
	older := alive("old", leader.WorkersProtocol-1)
	dead := older
	dead.Status = gossip.StatusFailed
	tests := []struct {
		name     string
		replicas int
		members  []gossip.Member
		want     int
	}{
		{"all new", 2, []gossip.Member{alive("a", leader.WorkersProtocol), alive("b", leader.WorkersProtocol)}, 2},
		{"none asked", -1, []gossip.Member{alive("a", leader.WorkersProtocol)}, -1},
		{"an older agent alive: no cap", 2, []gossip.Member{alive("a", leader.WorkersProtocol), older}, 0},
		{"an unannounced agent: no cap", 2, []gossip.Member{alive("a", leader.WorkersProtocol), alive("u", 0)}, 0},
		{"an older agent dead: cap", 2, []gossip.Member{alive("a", leader.WorkersProtocol), dead}, 2},
	}
	for _, tt := range tests {
		if got := leader.ReplicaCap(tt.replicas, liveProtocols(tt.members)); got != tt.want {
			t.Errorf("%s: ReplicaCap(%d, liveProtocols) = %d; want %d", tt.name, tt.replicas, got, tt.want)
		}
	}
}

// TestFollowStateWithholdsTheCAKey: a worker gets the security state it
// checks tokens, revocations and the keyring with, never the CA's key.
func TestFollowStateWithholdsTheCAKey(t *testing.T) {
	sec := &cluster.Security{CACert: []byte("cert"), CAKey: []byte("key"), TokenKey: []byte("tok")}
	st, _ := worker.FollowStateOf(fsm.PartialView(3, nil, nil, nil, sec, nil), "w1")
	if st.Security == nil || st.Security.CAKey != nil || string(st.Security.TokenKey) != "tok" || string(st.Security.CACert) != "cert" {
		t.Errorf("follow security = %+v; want the certificate and token key without the CA key", st.Security)
	}
	if string(sec.CAKey) != "key" {
		t.Error("FollowStateOf modified the view's security state")
	}
}

// BenchmarkFollowStateAllWorkers is what one applied entry costs the
// servers while every worker of a 1,000-node cluster holds a follow
// query: worker.FollowStateOf for each of the 1,000 nodes over a fresh view of
// 10,000 running jobs (one to four nodes each).
func BenchmarkFollowStateAllWorkers(b *testing.B) {
	const nodeCount, jobCount = 1000, 10000
	nodes := make([]*cluster.Node, nodeCount)
	for i := range nodes {
		nodes[i] = &cluster.Node{Name: fmt.Sprintf("w%04d", i), ModifyIndex: 1}
	}
	jobs := make([]*cluster.Job, jobCount)
	for i := range jobs {
		var allocs []cluster.NodeAlloc
		for k := range 1 + i%4 {
			allocs = append(allocs, cluster.NodeAlloc{Node: nodes[(i*7+k)%nodeCount].Name})
		}
		jobs[i] = followJob(cluster.JobID(i+1), uint64(i+1), allocs...)
	}
	b.ReportAllocs()
	for range b.N {
		b.StopTimer()
		v := fsm.PartialView(uint64(jobCount+1), jobs, nodes, nil, nil, nil) // each entry is a new view
		b.StartTimer()
		for _, n := range nodes {
			if _, sum := worker.FollowStateOf(v, n.Name); sum == "" {
				b.Fatal("no digest")
			}
		}
	}
}
