package consensus

import (
	"context"
	"testing"
	"time"
)

// TestCommandsAppliedBy: a barrier after the last command leaves raft's
// commit index above the state machine's, which never sees it; the
// replica has still applied every command (an agent's readiness,
// node.caughtUp, waited forever on such a tail: a one-node cluster stayed
// "catching up" for a minute on a loaded box). A command not applied yet
// is one to wait for.
func TestCommandsAppliedBy(t *testing.T) {
	nodes := newCluster(t, 1, FastTiming())
	n := waitLeader(t, nodes)
	_, index := submit(t, nodes, "first")
	waitFor(t, "the command applied", func() bool { return n.st.Index() >= index })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.r.Barrier(ctx); err != nil {
		t.Fatalf("Barrier = %v", err)
	}
	applied, commit := n.st.Index(), n.r.CommitIndex()
	if commit <= applied {
		t.Fatalf("commit %d, applied %d: want the barrier above the last command", commit, applied)
	}
	if !n.r.CommandsAppliedBy(applied, commit) {
		t.Errorf("CommandsAppliedBy(%d, %d) = false; only a barrier follows the last command", applied, commit)
	}
	if n.r.CommandsAppliedBy(applied-1, commit) {
		t.Errorf("CommandsAppliedBy(%d, %d) = true; the command at %d is not applied", applied-1, commit, applied)
	}
	if !n.r.CommandsAppliedBy(commit, commit) {
		t.Errorf("CommandsAppliedBy(%d, %d) = false; want true", commit, commit)
	}
}
