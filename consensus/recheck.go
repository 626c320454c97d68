package consensus

import (
	"time"

	"github.com/hashicorp/raft"
)

// Learning at once that the leader is gone.
//
// raft's followers check for a silent leader on a timer that fires at a
// random point between one and two HeartbeatTimeouts, and a follower that
// still knows a leader refuses every (pre-)vote. With three voters and the
// leader killed, the first survivor to time out asks the other for a
// pre-vote and is refused, because the other's timer has not fired yet:
// the election waits for the slower of the two timers, up to three
// HeartbeatTimeouts after the leader's last message.
//
// So a follower that observes a (pre-)vote request from another server
// while it still believes in a silent leader re-checks at the moment its
// own HeartbeatTimeout has passed since the leader's last contact, instead
// of at its timer's random later tick. The re-check is raft's own: a
// follower whose leader is still talking to it keeps following (pre-vote
// and the refusal stay what stop a partitioned server from disrupting a
// healthy leader); one that has not heard from it for a HeartbeatTimeout
// starts an election, as raft would at its next tick anyway.

// voteCandidate returns the server ID of a (pre-)vote request's sender,
// or "" when o is not one.
func voteCandidate(o raft.Observation) string {
	switch req := o.Data.(type) {
	case raft.RequestPreVoteRequest:
		return string(req.ID)
	case raft.RequestVoteRequest:
		return string(req.ID)
	}
	return ""
}

// recheckView is what a follower knows when it decides on a re-check.
type recheckView struct {
	Follower bool
	// Leader is the ID of the leader it follows; "" for none.
	Leader string
	// LastContact is when it last heard from the leader.
	LastContact      time.Time
	HeartbeatTimeout time.Duration
}

// recheckAt decides, on a (pre-)vote request from candidate, when the
// follower should re-check its leader: once HeartbeatTimeout has passed
// since its last contact. ok is false when there is nothing to re-check:
// not a follower, no leader known (raft already grants then), or the
// request comes from the leader itself.
func recheckAt(v recheckView, candidate string) (at time.Time, ok bool) {
	if !v.Follower || v.Leader == "" || candidate == "" || candidate == v.Leader || v.LastContact.IsZero() {
		return time.Time{}, false
	}
	return v.LastContact.Add(v.HeartbeatTimeout), true
}

// recheckDue reports whether, at now, the follower's leader has been
// silent for a HeartbeatTimeout, so raft's heartbeat check would start an
// election.
func recheckDue(v recheckView, now time.Time) bool {
	return v.Follower && v.Leader != "" && !v.LastContact.IsZero() && now.Sub(v.LastContact) >= v.HeartbeatTimeout
}

// recheckView gathers the follower's view from raft.
func (r *Raft) recheckView() recheckView {
	_, id := r.raft.LeaderWithID()
	return recheckView{
		Follower:         r.raft.State() == raft.Follower,
		Leader:           string(id),
		LastContact:      r.raft.LastContact(),
		HeartbeatTimeout: r.raft.ReloadableConfig().HeartbeatTimeout,
	}
}

// recheckLeader makes raft run its follower heartbeat check now. raft has
// no call for that; ReloadConfig with a shorter HeartbeatTimeout wakes a
// follower's heartbeat timer at once (hashicorp/raft v1.7.3: ReloadConfig
// signals followerNotifyCh, on which runFollower sets its timer to 0;
// TestShorterHeartbeatTimeoutChecksAtOnce pins it). The timeout is put back right
// after (1ns shorter meanwhile), so the configuration is unchanged.
func (r *Raft) recheckLeader() {
	rc := r.raft.ReloadableConfig()
	shorter := rc
	shorter.HeartbeatTimeout -= time.Nanosecond
	if err := r.raft.ReloadConfig(shorter); err != nil {
		// E.g. LeaderLeaseTimeout == HeartbeatTimeout: raft's own timer
		// still fires, only later.
		r.log.Debug("re-check leader: cannot nudge raft's heartbeat timer", "err", err)
		return
	}
	if err := r.raft.ReloadConfig(rc); err != nil {
		r.log.Error("re-check leader: restore raft's heartbeat timeout", "timeout", rc.HeartbeatTimeout, "err", err)
	}
}
