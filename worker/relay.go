package worker

import (
	"fmt"
	"slices"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
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

// PtyTarget names the node that runs rank 0 of a --pty job's own task
// (step task.NoStep) or of a --pty step of j, and that task's key. An
// error says why there is no terminal to attach to (yet).
func PtyTarget(j *cluster.Job, step int) (string, task.Key, error) {
	key := task.Key{Job: j.ID, Incarnation: j.Incarnation, Step: step}
	if j.State != cluster.JobRunning {
		return "", key, cluster.Mark(cluster.ErrUnavailable, fmt.Errorf("job %d is %s: its terminal is not there", j.ID, j.State))
	}
	if step == task.NoStep {
		if !j.Spec.Pty {
			return "", key, cluster.Mark(cluster.ErrInvalid, fmt.Errorf("job %d runs without a terminal (not srun --pty)", j.ID))
		}
		if j.Alloc == nil || len(j.Alloc.Nodes) == 0 {
			return "", key, cluster.Mark(cluster.ErrUnavailable, fmt.Errorf("job %d has no nodes yet", j.ID))
		}
		return j.Alloc.Nodes[0].Node, key, nil
	}
	for _, st := range j.Steps {
		if st.ID != step {
			continue
		}
		if !st.Spec.Pty {
			return "", key, cluster.Mark(cluster.ErrInvalid, fmt.Errorf("step %d.%d runs without a terminal (not srun --pty)", j.ID, step))
		}
		if st.State != cluster.StepRunning {
			return "", key, cluster.Mark(cluster.ErrConflict, fmt.Errorf("step %d.%d is %s: its terminal is gone", j.ID, step, st.State))
		}
		key.Incarnation = st.Incarnation
		if key.Incarnation == 0 {
			key.Incarnation = j.Incarnation
		}
		for _, sn := range st.Nodes {
			if sn.FirstRank == 0 && sn.Tasks > 0 {
				return sn.Node, key, nil
			}
		}
		return "", key, cluster.Mark(cluster.ErrConflict, fmt.Errorf("step %d.%d has no rank 0", j.ID, step))
	}
	return "", key, cluster.Mark(cluster.ErrNotFound, fmt.Errorf("step %d.%d: no such step", j.ID, step))
}

// StdinTarget is the key of job j's own task (step task.NoStep) or of
// its step whose ranks on node read srun's stdin. An error says why
// there is nothing to relay to there (yet). It is pure.
func StdinTarget(j *cluster.Job, step int, node string) (task.Key, error) {
	key := task.Key{Job: j.ID, Incarnation: j.Incarnation, Step: step}
	if step != task.NoStep {
		var st *cluster.Step
		for i := range j.Steps {
			if j.Steps[i].ID == step {
				st = &j.Steps[i]
			}
		}
		if st == nil {
			return key, cluster.Mark(cluster.ErrNotFound, fmt.Errorf("step %d.%d: no such step", j.ID, step))
		}
		if st.State != cluster.StepRunning {
			return key, cluster.Mark(cluster.ErrConflict, fmt.Errorf("step %d.%d is %s: its tasks read no more input", j.ID, step, st.State))
		}
		if st.Incarnation != 0 {
			key.Incarnation = st.Incarnation
		}
	} else if cluster.JobState(j.State).Terminal() {
		return key, cluster.Mark(cluster.ErrConflict, fmt.Errorf("job %d is %s: its tasks read no more input", j.ID, j.State))
	}
	if j.State != cluster.JobRunning {
		return key, cluster.Mark(cluster.ErrUnavailable, fmt.Errorf("job %d is %s: its tasks have not started", j.ID, j.State))
	}
	if !slices.Contains(j.StdinNodes(step), node) {
		return key, cluster.Mark(cluster.ErrInvalid, fmt.Errorf("node %s: no task of job %d there reads srun's stdin", node, j.ID))
	}
	return key, nil
}

// PMIxTarget is the first node of job j's PMIx step and that step's
// task key there. An error says why there is nothing to relay to (yet).
// It is pure.
func PMIxTarget(j *cluster.Job, step int) (string, task.Key, error) {
	key := task.Key{Job: j.ID, Incarnation: j.Incarnation, Step: step}
	for _, st := range j.Steps {
		if st.ID != step {
			continue
		}
		if st.State != cluster.StepRunning {
			return "", key, cluster.Mark(cluster.ErrConflict, fmt.Errorf("step %d.%d is %s: its fences are over", j.ID, step, st.State))
		}
		if st.Incarnation != 0 {
			key.Incarnation = st.Incarnation
		}
		if len(st.Nodes) == 0 {
			return "", key, cluster.Mark(cluster.ErrConflict, fmt.Errorf("step %d.%d has no nodes", j.ID, step))
		}
		return st.Nodes[0].Node, key, nil
	}
	return "", key, cluster.Mark(cluster.ErrNotFound, fmt.Errorf("step %d.%d: no such step", j.ID, step))
}
