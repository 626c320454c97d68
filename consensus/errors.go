package consensus

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/shoal-sched/shoal/cluster"
)

var (
	// ErrNotLeader is wrapped by every operation that only the leader can
	// perform when this server is not the leader (or stopped being it while
	// the operation ran). The error is a *NotLeaderError naming the leader
	// this server knows of, so callers can forward. It is
	// cluster.ErrNotLeader.
	ErrNotLeader = cluster.ErrNotLeader
	// ErrShutdown is wrapped by operations on a Raft that was shut down.
	ErrShutdown = errors.New("raft is shut down")
	// ErrAlreadyBootstrapped is returned by Bootstrap when this server
	// already has raft state (it was bootstrapped or joined before).
	ErrAlreadyBootstrapped = errors.New("raft already has state")
)

// NotLeaderError reports that this server is not the leader, and which
// server is, when known (both fields empty when no leader is known, for
// example during an election).
type NotLeaderError struct {
	LeaderID   string
	LeaderAddr string
}

func (e *NotLeaderError) Error() string {
	if e.LeaderID == "" && e.LeaderAddr == "" {
		return "not the raft leader (no leader known)"
	}
	return fmt.Sprintf("not the raft leader (leader is %s at %s)", e.LeaderID, e.LeaderAddr)
}

// Is makes errors.Is(err, ErrNotLeader) true.
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }

// notLeader returns a *NotLeaderError naming the current leader.
func (r *Raft) notLeader() *NotLeaderError {
	addr, id := r.raft.LeaderWithID()
	return &NotLeaderError{LeaderID: string(id), LeaderAddr: string(addr)}
}

// translate maps raft's errors onto this package's sentinels, keeping
// raft's error in the chain (so raft.ErrLeadershipLost, which means the
// outcome is unknown, stays visible to errors.Is).
func (r *Raft) translate(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader):
		return r.notLeader()
	case errors.Is(err, raft.ErrLeadershipLost),
		errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%w: %w", r.notLeader(), err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w: %w", ErrShutdown, err)
	}
	return err
}
