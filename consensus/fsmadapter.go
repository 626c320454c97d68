package consensus

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/shoal-sched/shoal/fsm"
)

// maxSnapshotBytes bounds what Restore reads into memory, so a corrupt or
// hostile snapshot cannot exhaust it. Shoal's state (jobs, allocations,
// nodes) is far below this on any plausible cluster.
const maxSnapshotBytes = 4 << 30

// fsmAdapter is the raft.FSM over *fsm.State. raft calls Apply, Snapshot
// and Restore from its one FSM goroutine, never concurrently.
type fsmAdapter struct {
	state *fsm.State
	log   *slog.Logger
	// raft is set once raft.NewRaft returned; nil while raft restores its
	// snapshot inside NewRaft.
	raft     atomic.Pointer[raft.Raft]
	diverged atomic.Bool
}

var _ raft.FSM = (*fsmAdapter)(nil)

// Apply hands a committed command entry to the state machine and returns
// its fsm.Result, which raft passes back to the proposer's ApplyFuture.
// Other entry types (no-ops, configuration changes) never change the
// state machine.
func (a *fsmAdapter) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	res := a.state.Apply(l.Index, l.Data)
	if res.Err != nil && errors.Is(res.Err, fsm.ErrDiverged) {
		a.onDiverged(l.Index, res.Err)
	}
	return res
}

// onDiverged says loudly that this replica cannot follow the log and, if
// it leads, hands leadership away: a leader whose state machine stopped
// applying would propose against state it no longer has. The transfer is
// requested without waiting (this runs on raft's FSM goroutine, which the
// transfer itself needs). The agent stops serving reads on
// State.Diverged.
func (a *fsmAdapter) onDiverged(index uint64, err error) {
	first := a.diverged.CompareAndSwap(false, true)
	a.log.Error("replica diverged: state machine cannot apply a committed entry",
		"index", index, "err", err, "first", first)
	if r := a.raft.Load(); r != nil && r.State() == raft.Leader {
		a.log.Error("giving up leadership after divergence", "index", index)
		r.LeadershipTransfer() // its future resolves on raft's leader loop; nothing to wait for here
	}
}

// Snapshot captures the state's canonical bytes now; raft persists them
// later from another goroutine, while Apply goes on.
func (a *fsmAdapter) Snapshot() (raft.FSMSnapshot, error) {
	b, err := a.state.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("snapshot fsm at index %d: %w", a.state.Index(), err)
	}
	return &fsmSnapshot{data: b}, nil
}

// Restore replaces the state with a snapshot's contents.
func (a *fsmAdapter) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxSnapshotBytes+1))
	if err != nil {
		return fmt.Errorf("read snapshot: %w", err)
	}
	if len(b) > maxSnapshotBytes {
		return fmt.Errorf("read snapshot: larger than %d bytes", maxSnapshotBytes)
	}
	if err := a.state.Restore(b); err != nil {
		return fmt.Errorf("restore fsm from %d-byte snapshot: %w", len(b), err)
	}
	a.log.Info("restored fsm from snapshot", "index", a.state.Index(), "bytes", len(b))
	return nil
}

// fsmSnapshot is a point-in-time copy of the state's bytes.
type fsmSnapshot struct{ data []byte }

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s.data); err != nil {
		cerr := sink.Cancel()
		return fmt.Errorf("write snapshot %s: %w (cancel: %v)", sink.ID(), err, cerr)
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("close snapshot %s: %w", sink.ID(), err)
	}
	return nil
}

func (s *fsmSnapshot) Release() {}
