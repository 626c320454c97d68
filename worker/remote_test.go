package worker

import (
	"context"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// TestRemoteTake: a worker takes a server's state in unless it is a
// member (it reads its replica) or the state is older than the one it
// holds (a lagging server); a newer one wakes whoever waits on the old;
// hints are taken from any answer, and Drop forgets the view and wakes
// its waiters (DESIGN "Membership and roles": workers follow their own
// allocations).
func TestRemoteTake(t *testing.T) {
	var r Remote
	if r.Current() != nil {
		t.Fatal("a new Remote holds a view")
	}
	job := &cluster.Job{ID: 1, State: cluster.JobRunning, Alloc: &cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: "w1"}}}}
	r.Take(Reply{Server: true, Index: 10, Digest: "d10", State: FollowState{Jobs: []*cluster.Job{job}}, Leader: "s1", LeaderAddr: "a1"})
	got := r.Current()
	if got == nil || got.Index != 10 {
		t.Fatalf("view after an answer at 10 = %v; want index 10", got)
	}
	if _, ok := got.Job(1); !ok {
		t.Error("the view lacks job 1")
	}
	if name, addr := r.LeaderHint(); name != "s1" || addr != "a1" {
		t.Errorf("LeaderHint = %s, %s; want s1, a1", name, addr)
	}
	ch := got.Changed()
	r.Take(Reply{Server: true, Index: 9})
	if r.Current() != got {
		t.Error("an answer at index 9 replaced the view at 10")
	}
	r.Take(Reply{Server: true, Member: true, Index: 12})
	if r.Current() != got {
		t.Error("an answer to a member replaced the view")
	}
	r.Take(Reply{Leader: "s2", LeaderAddr: "a2"})
	if r.Current() != got {
		t.Error("hints alone replaced the view")
	}
	if name, _ := r.LeaderHint(); name != "s2" {
		t.Errorf("LeaderHint after hints = %s; want s2", name)
	}
	select {
	case <-ch:
		t.Fatal("Changed closed before a newer view came")
	default:
	}
	r.Take(Reply{Server: true, Index: 12, Digest: "d12"})
	select {
	case <-ch:
	default:
		t.Error("a newer view did not close the old one's Changed")
	}
	if q, _ := r.Begin(func() {}, false, time.Minute); q.Index != 12 || q.Digest != "d12" {
		t.Errorf("Begin query = %+v; want index 12, digest d12", q)
	}
	r.Done()
	newer := r.Current().Changed()
	r.Drop()
	if r.Current() != nil {
		t.Error("Drop kept the view")
	}
	select {
	case <-newer:
	default:
		t.Error("Drop did not wake the view's waiters")
	}
	r.Drop() // twice is harmless
}

// TestRemoteBegin: a follow call asks the server to wait only once a view
// is held, and not right after a Kick (the hints may be stale) or when it
// asks for hints only; a Kick cancels the call in flight.
func TestRemoteBegin(t *testing.T) {
	var r Remote
	if q, wait := r.Begin(func() {}, false, time.Minute); wait != 0 || q != (FollowQuery{}) {
		t.Errorf("Begin with no view = %+v, %v; want an empty query and no wait", q, wait)
	}
	r.Done()
	r.Take(Reply{Server: true, Index: 5, Digest: "d5"})
	if _, wait := r.Begin(func() {}, false, time.Minute); wait != time.Minute {
		t.Errorf("Begin with a view: wait %v; want 1m", wait)
	}
	r.Done()
	if _, wait := r.Begin(func() {}, true, time.Minute); wait != 0 {
		t.Errorf("Begin for hints: wait %v; want none", wait)
	}
	r.Done()
	ctx, cancel := context.WithCancel(t.Context())
	_, _ = r.Begin(cancel, false, time.Minute)
	r.Kick()
	if ctx.Err() == nil {
		t.Error("Kick did not end the call in flight")
	}
	r.Done()
	if _, wait := r.Begin(func() {}, false, time.Minute); wait != 0 {
		t.Errorf("Begin after a Kick: wait %v; want none", wait)
	}
	r.Done()
	if _, wait := r.Begin(func() {}, false, time.Minute); wait != time.Minute {
		t.Errorf("the Begin after that: wait %v; want 1m again", wait)
	}
	r.Done()
	r.Kick() // no call in flight: only the next answers at once
}

// TestRemoteKnown: the follow loop gets a copy of where the servers are,
// which a follow reply updating the remote view meanwhile cannot change.
func TestRemoteKnown(t *testing.T) {
	var r Remote
	r.Take(Reply{Leader: "s1", Servers: []HintServer{{Name: "s1", APIAddr: "s1:7070", Voter: true}, {Name: "s2", APIAddr: "s2:7070"}}})
	now := time.Unix(1000, 0)
	r.PassOver("s2", now)
	k := r.Known()
	if k.Leader != "s1" || len(k.Servers) != 2 || k.Servers[1] != (Server{Name: "s2", APIAddr: "s2:7070"}) || !k.Failed["s2"].Equal(now) {
		t.Errorf("known = %+v; want leader s1, servers s1 and s2, s2 failed at %v", k, now)
	}
	r.PassOver("s1", now)
	if _, ok := k.Failed["s1"]; ok {
		t.Error("a later pass-over changed the copy the loop holds")
	}
	if got := r.Servers(); len(got) != 2 || !got[0].Voter {
		t.Errorf("Servers = %v; want s1 (voter) and s2", got)
	}
}
