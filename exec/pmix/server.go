package pmix

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/shoal-sched/shoal/exec/task"
)

// ErrNotBuilt: this shoal was built without the PMIx server (no pmix
// build tag, or no cgo).
var ErrNotBuilt = errors.New("this shoal was built without PMIx: srun --mpi=pmix needs a shoal built with -tags pmix against libpmix (make build does)")

// Sock is the coordinator's socket in the task directory of the step's
// first node, which the agents relay the other nodes' supervisors to.
const Sock = task.PMIxSock

// Config is what Start needs.
type Config struct {
	Job Job
	// UID and GID are the ranks' user, who must reach the server's
	// socket.
	UID, GID int
	// Fencer exchanges the fences with the step's other nodes.
	Fencer Fencer
	Log    *slog.Logger
	// OnFail is called (from the library's thread, maybe more than once)
	// when a fence of this node's ranks failed or a rank aborted: the
	// ranks cannot go on (Open MPI's MPI_Init ignores a failed fence and
	// then waits for data that never comes), so the supervisor kills
	// them and the step fails, as Slurm kills a step on PMIx_Abort.
	OnFail func(err error)
}

// NewFencer is the Fencer of job's node: one of its own for a one-node
// step; on the first node a Coordinator listening on Sock in taskDir
// (which must be the current directory's name for it, as the
// supervisor's: the socket is bound relative to it); on the others a
// Member that reaches it with dial.
func NewFencer(job Job, dial Dial, log *slog.Logger) (Fencer, error) {
	switch {
	case len(job.Nodes) == 1:
		return &single{}, nil
	case job.Node == 0:
		_ = os.Remove(Sock)
		ln, err := net.Listen("unix", Sock)
		if err != nil {
			return nil, fmt.Errorf("pmix: listen for the step's nodes: %w", err)
		}
		return NewCoordinator(job.Nspace, len(job.Nodes), ln, log), nil
	case dial == nil:
		return nil, errors.New("pmix: a step on several nodes needs the agent's socket to reach its first node")
	default:
		return NewMember(job.Nspace, job.Node, dial, log), nil
	}
}
