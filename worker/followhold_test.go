package worker

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/internal/clock"
)

// replica is a FollowSource whose view, leader and membership a test
// changes; apply publishes a new view and wakes whoever waits on the old.
type replica struct {
	mu      sync.Mutex
	view    *fsm.View
	changed chan struct{}
	leader  string
	member  bool
}

func newReplica(index uint64, jobs []*cluster.Job) *replica {
	r := &replica{leader: "s1", member: true}
	r.apply(index, jobs)
	return r
}

func (r *replica) apply(index uint64, jobs []*cluster.Job) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.changed
	r.changed = make(chan struct{})
	r.view = fsm.PartialView(index, jobs, []*cluster.Node{{Name: "w1", ModifyIndex: 1}}, nil, nil, r.changed)
	if old != nil {
		close(old)
	}
}

func (r *replica) set(f func(r *replica)) {
	r.mu.Lock()
	f(r)
	r.mu.Unlock()
}

func (r *replica) View() *fsm.View { r.mu.Lock(); defer r.mu.Unlock(); return r.view }
func (r *replica) Leader() string  { r.mu.Lock(); defer r.mu.Unlock(); return r.leader }
func (r *replica) Member(context.Context) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.member
}

// TestFollowHolder: a server holds a worker's follow query until its
// state changes, its lease entry is applied, a new leader is known or its
// wait is over; a server removed meanwhile ends it with hints only; the
// worker's going away ends it with the context's error. (DESIGN: a worker
// learns of a new leader without waiting for its lease renewal to fail.)
func TestFollowHolder(t *testing.T) {
	onW1 := func(modify uint64) []*cluster.Job {
		return []*cluster.Job{{ID: 1, ModifyIndex: modify, State: cluster.JobRunning, Alloc: &cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: "w1"}}}}}
	}
	_, sum := FollowStateOf(fsm.PartialView(10, onW1(5), []*cluster.Node{{Name: "w1", ModifyIndex: 1}}, nil, nil, nil), "w1")
	const held = time.Minute + time.Second/2
	tests := []struct {
		name    string
		q       FollowQuery
		wait    time.Duration
		change  func(r *replica) // once held for held
		want    FollowAnswer     // Index, Rehint, Removed (State and Digest checked apart)
		waited  time.Duration
		cancels bool
	}{
		{"unknown digest: at once", FollowQuery{Index: 0, Digest: ""}, 30 * time.Second, nil, FollowAnswer{Index: 10}, 0, false},
		{"no wait: at once", FollowQuery{Index: 10, Digest: sum}, 0, nil, FollowAnswer{Index: 10}, 0, false},
		{"nothing changes: the wait's end", FollowQuery{Index: 10, Digest: sum}, 90 * time.Second, nil, FollowAnswer{Index: 10}, 90 * time.Second, false},
		{"its job changes", FollowQuery{Index: 10, Digest: sum}, 5 * time.Minute, func(r *replica) { r.apply(11, onW1(11)) }, FollowAnswer{Index: 11}, held, false},
		{"another's entry: held", FollowQuery{Index: 10, Digest: sum}, 5 * time.Minute, func(r *replica) { r.apply(11, onW1(5)) }, FollowAnswer{Index: 11}, 5 * time.Minute, false},
		{"its lease entry applied", FollowQuery{Index: 10, Digest: sum, Lease: 12}, 5 * time.Minute, func(r *replica) { r.apply(12, onW1(5)) }, FollowAnswer{Index: 12}, held, false},
		{"a new leader", FollowQuery{Index: 10, Digest: sum}, 5 * time.Minute, func(r *replica) { r.set(func(r *replica) { r.leader = "s2" }); r.apply(11, onW1(5)) }, FollowAnswer{Index: 11, Rehint: true}, held, false},
		{"removed from the servers", FollowQuery{Index: 10, Digest: sum}, 5 * time.Minute, func(r *replica) { r.set(func(r *replica) { r.member = false }) }, FollowAnswer{Removed: true}, time.Minute + time.Second, false},
		{"the worker goes away", FollowQuery{Index: 10, Digest: sum}, 5 * time.Minute, nil, FollowAnswer{}, held, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newReplica(10, onW1(5))
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				h := FollowHolder{Source: r, Clock: clock.Wall{}, Poll: time.Second}
				start := time.Now()
				var got FollowAnswer
				var err error
				var waited time.Duration
				done := make(chan struct{})
				go func() {
					defer close(done)
					got, err = h.Hold(ctx, "w1", tt.q, "s1", tt.wait)
					waited = time.Since(start)
				}()
				time.Sleep(held) // off the Poll ticks, so that the order is sure
				if tt.change != nil {
					tt.change(r)
				}
				if tt.cancels {
					cancel()
				}
				<-done
				if waited != tt.waited {
					t.Errorf("answered after %v; want %v", waited, tt.waited)
				}
				if tt.cancels {
					if err == nil {
						t.Errorf("Hold = %+v, nil; want the context's error", got)
					}
					return
				}
				if err != nil || got.Index != tt.want.Index || got.Rehint != tt.want.Rehint || got.Removed != tt.want.Removed {
					t.Errorf("Hold = index %d rehint %v removed %v, %v; want %+v", got.Index, got.Rehint, got.Removed, err, tt.want)
				}
				if !got.Removed && (len(got.State.Jobs) != 1 || got.Digest == "") {
					t.Errorf("Hold state = %d jobs, digest %q; want job 1 and a digest", len(got.State.Jobs), got.Digest)
				}
			})
		})
	}
}

// TestFollowHints: a server that knows a leader names the configuration's
// servers with their API addresses and says whether the asking node is
// one; one that knows none passes on what it heard.
func TestFollowHints(t *testing.T) {
	config := []ConfigServer{{Name: "s1", Voter: true}, {Name: "s2", Voter: true}, {Name: "r1"}}
	addr := map[string]string{"s1": "a1:7070", "r1": "a3:7070"}
	heard := []HintServer{{Name: "s9", APIAddr: "a9:7070", Voter: true}}
	named := []HintServer{{"s1", "a1:7070", true}, {"s2", "", true}, {"r1", "a3:7070", false}}
	tests := []struct {
		name        string
		node        string
		knowsLeader bool
		want        []HintServer
		member      bool
	}{
		{"a worker asks", "w1", true, named, false},
		{"a nonvoter asks", "r1", true, named, true},
		{"a voter asks", "s2", true, named, true},
		{"no leader known: what it heard", "s2", false, heard, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, member := FollowHints(tt.node, tt.knowsLeader, config, addr, heard)
			if !slices.Equal(got, tt.want) || member != tt.member {
				t.Errorf("FollowHints(%s) = %v, %v; want %v, %v", tt.node, got, member, tt.want, tt.member)
			}
		})
	}
}
