package consensus

import (
	"strconv"

	"github.com/hashicorp/raft"
)

// CommitIndex is the highest log index this server knows to be committed:
// its own on the leader, the one the leader last told it on a follower.
// An agent compares it with AppliedIndex to know when its replica has
// caught up after a restart.
func (r *Raft) CommitIndex() uint64 { return r.raft.CommitIndex() }

// Stats are this server's raft counters, for the agent's metrics.
type Stats struct {
	Term, LastIndex, CommitIndex, AppliedIndex uint64
	// LeaderChanges counts the times this server saw a leader elected
	// (any server, itself included) since it opened.
	LeaderChanges uint64
}

// Stats reads the counters. Raft reports them as strings; one that does
// not parse reads 0.
func (r *Raft) Stats() Stats {
	m := r.raft.Stats()
	num := func(k string) uint64 {
		n, _ := strconv.ParseUint(m[k], 10, 64)
		return n
	}
	return Stats{
		Term:          num("term"),
		LastIndex:     num("last_log_index"),
		CommitIndex:   num("commit_index"),
		AppliedIndex:  num("applied_index"),
		LeaderChanges: r.leaderChanges.Load(),
	}
}

// observed is raft's observer filter: leader changes, and the vote
// requests a follower re-checks its leader on (recheck.go).
func observed(o *raft.Observation) bool {
	switch o.Data.(type) {
	case raft.LeaderObservation, raft.RequestPreVoteRequest, raft.RequestVoteRequest:
		return true
	}
	return false
}

// countLeader counts an observed leader change when it names a leader
// (raft also reports losing one, as an empty leader).
func (r *Raft) countLeader(o raft.Observation) {
	if lo, ok := o.Data.(raft.LeaderObservation); ok && lo.LeaderID != "" {
		r.leaderChanges.Add(1)
	}
}
