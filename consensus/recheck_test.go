package consensus

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestVoteCandidate(t *testing.T) {
	hdr := raft.RPCHeader{ID: []byte("n2"), Addr: []byte("127.0.0.1:2")}
	for _, tc := range []struct {
		name string
		data any
		want string
	}{
		{"pre-vote", raft.RequestPreVoteRequest{RPCHeader: hdr}, "n2"},
		{"vote", raft.RequestVoteRequest{RPCHeader: hdr}, "n2"},
		{"leader change", raft.LeaderObservation{LeaderID: "n2"}, ""},
		{"pre-vote without an id", raft.RequestPreVoteRequest{}, ""},
	} {
		if got := voteCandidate(raft.Observation{Data: tc.data}); got != tc.want {
			t.Errorf("%s: voteCandidate = %q; want %q", tc.name, got, tc.want)
		}
	}
}

func TestRecheckAt(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hb := 500 * time.Millisecond
	following := recheckView{Follower: true, Leader: "n1", LastContact: t0, HeartbeatTimeout: hb}
	for _, tc := range []struct {
		name      string
		view      recheckView
		candidate string
		want      time.Time
		ok        bool
	}{
		{"follower of a leader: when its own timeout has passed", following, "n2", t0.Add(hb), true},
		{"the request comes from the leader itself", following, "n1", time.Time{}, false},
		{"no candidate", following, "", time.Time{}, false},
		{"no leader known: raft grants already", recheckView{Follower: true, LastContact: t0, HeartbeatTimeout: hb}, "n2", time.Time{}, false},
		{"a candidate", recheckView{Leader: "n1", LastContact: t0, HeartbeatTimeout: hb}, "n2", time.Time{}, false},
		{"never heard from the leader", recheckView{Follower: true, Leader: "n1", HeartbeatTimeout: hb}, "n2", time.Time{}, false},
	} {
		got, ok := recheckAt(tc.view, tc.candidate)
		if ok != tc.ok || !got.Equal(tc.want) {
			t.Errorf("%s: recheckAt = %s, %v; want %s, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRecheckDue(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hb := 500 * time.Millisecond
	following := recheckView{Follower: true, Leader: "n1", LastContact: t0, HeartbeatTimeout: hb}
	heardAgain := following
	heardAgain.LastContact = t0.Add(400 * time.Millisecond)
	newLeader := recheckView{Follower: true, Leader: "n2", LastContact: t0.Add(480 * time.Millisecond), HeartbeatTimeout: hb}
	for _, tc := range []struct {
		name string
		view recheckView
		now  time.Time
		want bool
	}{
		{"silent for the heartbeat timeout", following, t0.Add(hb), true},
		{"silent for longer", following, t0.Add(2 * hb), true},
		{"the leader spoke since: keep following it", heardAgain, t0.Add(hb), false},
		{"a new leader took over meanwhile", newLeader, t0.Add(hb), false},
		{"not silent long enough", following, t0.Add(hb - time.Millisecond), false},
		{"no longer a follower", recheckView{Leader: "n1", LastContact: t0, HeartbeatTimeout: hb}, t0.Add(hb), false},
		{"no leader any more", recheckView{Follower: true, LastContact: t0, HeartbeatTimeout: hb}, t0.Add(hb), false},
	} {
		if got := recheckDue(tc.view, tc.now); got != tc.want {
			t.Errorf("%s: recheckDue = %v; want %v", tc.name, got, tc.want)
		}
	}
}

// TestShorterHeartbeatTimeoutChecksAtOnce pins the raft behaviour that
// recheckLeader relies on: ReloadConfig with a shorter HeartbeatTimeout
// makes a follower check its leader's silence at once, not at its timer's
// next tick. Both followers' timeouts are first raised to an hour (their
// timers re-arm with it at their next tick), so neither would ever start
// an election by itself once the leader is gone; one that is then given a
// shorter timeout does, at once.
func TestShorterHeartbeatTimeoutChecksAtOnce(t *testing.T) {
	timing := FastTiming()
	nodes := newCluster(t, 3, timing)
	old := waitLeader(t, nodes)
	var followers []*testNode
	for _, n := range nodes {
		if n == old {
			continue
		}
		followers = append(followers, n)
		rc := n.r.raft.ReloadableConfig()
		rc.HeartbeatTimeout, rc.ElectionTimeout = time.Hour, time.Hour
		if err := n.r.raft.ReloadConfig(rc); err != nil {
			t.Fatalf("raise %s's timeouts: %v", n.id, err)
		}
	}
	// A follower's timer ticks within 2*HeartbeatTimeout and re-arms with
	// the hour.
	time.Sleep(3 * timing.HeartbeatTimeout)
	old.shutdown(t)
	f := followers[0]
	waitFor(t, f.id+" hearing nothing from the leader for a heartbeat timeout", func() bool {
		return time.Since(f.r.LastContact()) > timing.HeartbeatTimeout
	})
	if st := f.r.State(); st != "Follower" {
		t.Fatalf("%s is %s before its timeout was shortened; want Follower (timers not re-armed?)", f.id, st)
	}
	rc := f.r.raft.ReloadableConfig()
	rc.HeartbeatTimeout = timing.HeartbeatTimeout
	if err := f.r.raft.ReloadConfig(rc); err != nil {
		t.Fatalf("shorten %s's heartbeat timeout: %v", f.id, err)
	}
	waitFor(t, f.id+" starting an election", func() bool { return f.r.State() != "Follower" })
}
