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

// maxCommandScan bounds how many entries CommandsAppliedBy reads.
const maxCommandScan = 256

// CommandsAppliedBy reports whether a state machine that has applied the
// commands up to applied has every command committed up to commit: the
// entries after applied are all of kinds it never sees (raft's no-op
// after an election, barriers, configuration changes). The commit index
// counts those, so a replica whose last committed entry is one of them
// would otherwise never look caught up until the next command. An entry
// it cannot read, or more than maxCommandScan to read, counts as a
// command not applied yet.
func (r *Raft) CommandsAppliedBy(applied, commit uint64) bool {
	if commit <= applied {
		return true
	}
	if commit-applied > maxCommandScan {
		return false
	}
	for i := commit; i > applied; i-- {
		var l raft.Log
		if err := r.store.GetLog(i, &l); err != nil || l.Type == raft.LogCommand {
			return false
		}
	}
	return true
}
