package leader

import (
	"context"
	"time"

	"github.com/shoal-sched/shoal/fsm"
)

// What the leader's loops need from the agent that runs them, as plain
// interfaces: the agent (package agent) implements them over raft, the
// FSM and the wall clock; tests can implement them over a fake cluster.

// State is the replicated state a loop reads.
type State interface {
	// View is the state as applied so far.
	View() *fsm.View
	// Diverged is non-nil once this replica stopped applying the log:
	// nothing may be decided from it.
	Diverged() error
}

// Proposer applies one command through the log, as leader.
type Proposer interface {
	// Apply encodes body as a command of type t, applies it and returns
	// the FSM's result (whose Err is the FSM refusing the command).
	Apply(ctx context.Context, t fsm.CmdType, body any) (fsm.Result, error)
}

// Leadership is what a loop may do about this node leading.
type Leadership interface {
	// HandOff transfers leadership away, retrying until it works or ctx
	// ends (leadership lost).
	HandOff(ctx context.Context)
}

// Clock is the time a loop waits on and stamps its decisions with; the
// plans receive Now as an argument.
type Clock interface {
	Now() time.Time
	// After delivers once, after d.
	After(d time.Duration) <-chan time.Time
	// NewTicker delivers every d until stop is called.
	NewTicker(d time.Duration) (c <-chan time.Time, stop func())
}
