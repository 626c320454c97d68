package fsm

import (
	"errors"

	"github.com/shoal-sched/shoal/cluster"
)

// Sentinels for what callers branch on. Apply wraps them with the command
// and the identity that failed; test with errors.Is.
var (
	// ErrUnknownJob: the command names a job the state does not hold.
	ErrUnknownJob = errors.New("unknown job")
	// ErrUnknownNode: the command names a node the state does not hold.
	ErrUnknownNode = errors.New("unknown node")
	// ErrJobFinished: the job is already in a terminal state.
	ErrJobFinished = errors.New("job already finished")
	// ErrUnknownStep: the command names a step the job's current
	// incarnation does not hold.
	ErrUnknownStep = errors.New("unknown step")
	// ErrStepFinished: the step was already cancelled or has ended.
	ErrStepFinished = errors.New("step already finished")
	// ErrStepBusy refuses an Exclusive step whose GPUs or CPUs other
	// steps of the job hold now: it may start once one ends (Slurm's
	// ESLURM_NODES_BUSY for a step).
	ErrStepBusy = errors.New("requested nodes are busy")
	// ErrWrongState: the job is not in a state the command applies to
	// (holding a running job, requeueing a pending one).
	ErrWrongState = errors.New("job not in a state for this")
	// ErrInvalid: the command's content is invalid (a bad spec, a bad node
	// record, a task report that cannot be true). The state is unchanged.
	ErrInvalid = errors.New("invalid command")
	// ErrLimit: a submit would pass a job-count limit of the policy
	// (MaxSubmitJobs, MaxJobCount). The state is unchanged. It is
	// cluster.ErrLimit.
	ErrLimit = cluster.ErrLimit
	// ErrDiverged: the entry could not be decoded or applied at all. The
	// replica can no longer be trusted to match the others. It is
	// cluster.ErrDiverged.
	ErrDiverged = cluster.ErrDiverged
	// ErrUnknownCommand: an entry's type byte is not in this build's
	// command table; Apply wraps it in ErrDiverged.
	ErrUnknownCommand = errors.New("unknown command type")
	// ErrUnsupportedByCluster: the leader will not propose a command type
	// that some raft server does not announce it understands (a rolling
	// upgrade is not finished). Nothing was proposed; retry once every
	// server is upgraded. It is cluster.ErrUnsupported.
	ErrUnsupportedByCluster = cluster.ErrUnsupported
)
