package worker

import (
	"fmt"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
)

// The requests that reach one node of a job's allocation (a terminal, the
// tasks' stdin, an sbcast copy) are served there, or relayed to it by the
// agent the client asked. These say which job, and where.

// RelayJob is live job id from the view the agent acts on (a worker's
// holds its own jobs only), once c may verb it: its owner or root. A
// peer relays a client whose agent has seen the job (forwarded): this
// view may not have it yet, so then not found is unavailable and the
// client asks again.
func RelayJob(v *fsm.View, id cluster.JobID, verb string, c cluster.Identity, forwarded bool) (*cluster.Job, error) {
	j, ok := v.Job(id)
	if !ok {
		err := cluster.Mark(cluster.ErrNotFound, fmt.Errorf("job %d: no such job", id))
		if forwarded {
			err = cluster.Mark(cluster.ErrUnavailable, err)
		}
		return nil, err
	}
	if c.UID != 0 && c.UID != j.Spec.UID {
		return nil, cluster.Mark(cluster.ErrForbidden, fmt.Errorf("%s job %d: %w: it belongs to %s", verb, id, cluster.ErrForbidden, j.Spec.User))
	}
	return j, nil
}

// BcastHere says where an sbcast copy to node of job j is written: here
// (node is self), or relayed to node's agent; refused unless the job runs
// and node holds part of it, and when a peer relayed it (forwarded) to
// this node which is not node (its view is behind: the client retries).
func BcastHere(j *cluster.Job, node, self string, forwarded bool) (here bool, err error) {
	if j.State != cluster.JobRunning || j.Alloc == nil {
		return false, cluster.Mark(cluster.ErrConflict, fmt.Errorf("job %d is %s: sbcast copies to a running job's nodes", j.ID, j.State))
	}
	if j.Alloc.Find(node) < 0 {
		return false, cluster.Mark(cluster.ErrInvalid, fmt.Errorf("node %s: not a node of job %d", node, j.ID))
	}
	switch {
	case node == self:
		return true, nil
	case forwarded:
		return false, cluster.Mark(cluster.ErrUnavailable, fmt.Errorf("node %s, not this node %s, which was asked by a peer; retry", node, self))
	}
	return false, nil
}
