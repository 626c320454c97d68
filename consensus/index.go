package consensus

// CommitIndex is the highest log index this server knows to be committed:
// its own on the leader, the one the leader last told it on a follower.
// An agent compares it with AppliedIndex to know when its replica has
// caught up after a restart.
func (r *Raft) CommitIndex() uint64 { return r.raft.CommitIndex() }
