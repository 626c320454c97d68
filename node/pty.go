package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec"
	"github.com/shoal-sched/shoal/exec/task"
)

// ptyTarget names the node that runs rank 0 of a --pty job's own task
// (step task.NoStep) or of a --pty step of j, and that task's key. An
// error says why there is no terminal to attach to (yet).
func ptyTarget(j *cluster.Job, step int) (string, task.Key, error) {
	key := task.Key{Job: j.ID, Incarnation: j.Incarnation, Step: step}
	if j.State != cluster.JobRunning {
		return "", key, unavailable(fmt.Errorf("job %d is %s: its terminal is not there", j.ID, j.State))
	}
	if step == task.NoStep {
		if !j.Spec.Pty {
			return "", key, invalid(fmt.Errorf("job %d runs without a terminal (not srun --pty)", j.ID))
		}
		if j.Alloc == nil || len(j.Alloc.Nodes) == 0 {
			return "", key, unavailable(fmt.Errorf("job %d has no nodes yet", j.ID))
		}
		return j.Alloc.Nodes[0].Node, key, nil
	}
	for _, st := range j.Steps {
		if st.ID != step {
			continue
		}
		if !st.Spec.Pty {
			return "", key, invalid(fmt.Errorf("step %d.%d runs without a terminal (not srun --pty)", j.ID, step))
		}
		if st.State != cluster.StepRunning {
			return "", key, conflict(fmt.Errorf("step %d.%d is %s: its terminal is gone", j.ID, step, st.State))
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
		return "", key, conflict(fmt.Errorf("step %d.%d has no rank 0", j.ID, step))
	}
	return "", key, notFound(fmt.Errorf("step %d.%d: no such step", j.ID, step))
}

// DialPty connects to the terminal of job id's or step's rank 0 for who
// (the job's owner or root): to its supervisor when the rank runs here,
// else, unless a peer asked (forwarded), through the agent of its node.
// It names the node.
func (b apiBackend) DialPty(ctx context.Context, id cluster.JobID, step int, who cluster.Identity, forwarded bool) (io.ReadWriteCloser, string, error) {
	a := b.a
	v, j, err := a.relayJob(id, "attach to the terminal of", who, forwarded)
	if err != nil {
		return nil, "", err
	}
	node, key, err := ptyTarget(j, step)
	if err != nil {
		if forwarded && errors.Is(err, cluster.ErrNotFound) {
			err = unavailable(err)
		}
		return nil, "", err
	}
	// Not started here yet (the step was just recorded), or already
	// gone: the client asks again while the job runs.
	upstream, err := a.relayTo(ctx, v, node, who, forwarded, fmt.Sprintf("job %d's terminal", id),
		func() (io.ReadWriteCloser, error) { return a.exec.DialPty(key) },
		func(ctx context.Context, c *api.Client) (io.ReadWriteCloser, error) {
			return c.AttachPty(ctx, uint64(id), step)
		})
	return upstream, node, err
}

// stdinTarget is the key of job j's own task (step task.NoStep) or of
// its step whose ranks on node read srun's stdin. An error says why
// there is nothing to relay to there (yet).
func stdinTarget(j *cluster.Job, step int, node string) (task.Key, error) {
	key := task.Key{Job: j.ID, Incarnation: j.Incarnation, Step: step}
	if step != task.NoStep {
		var st *cluster.Step
		for i := range j.Steps {
			if j.Steps[i].ID == step {
				st = &j.Steps[i]
			}
		}
		if st == nil {
			return key, notFound(fmt.Errorf("step %d.%d: no such step", j.ID, step))
		}
		if st.State != cluster.StepRunning {
			return key, conflict(fmt.Errorf("step %d.%d is %s: its tasks read no more input", j.ID, step, st.State))
		}
		if st.Incarnation != 0 {
			key.Incarnation = st.Incarnation
		}
	} else if cluster.JobState(j.State).Terminal() {
		return key, conflict(fmt.Errorf("job %d is %s: its tasks read no more input", j.ID, j.State))
	}
	if j.State != cluster.JobRunning {
		return key, unavailable(fmt.Errorf("job %d is %s: its tasks have not started", j.ID, j.State))
	}
	if !slices.Contains(j.StdinNodes(step), node) {
		return key, invalid(fmt.Errorf("node %s: no task of job %d there reads srun's stdin", node, j.ID))
	}
	return key, nil
}

// DialStdin connects to the stdin of the ranks on node of job id's own
// task or of a step, for who (the job's owner or root), resumable or raw
// (api.StdinResumeProtocol or api.StdinProtocol): to their supervisor
// when node is this one, else, unless a peer asked (forwarded), through
// node's agent.
func (b apiBackend) DialStdin(ctx context.Context, id cluster.JobID, step int, node string, resume bool, who cluster.Identity, forwarded bool) (io.ReadWriteCloser, error) {
	a := b.a
	v, j, err := a.relayJob(id, "send input to", who, forwarded)
	if err != nil {
		return nil, err
	}
	key, err := stdinTarget(j, step, node)
	if err != nil {
		if forwarded && errors.Is(err, cluster.ErrNotFound) {
			err = unavailable(err)
		}
		return nil, err
	}
	return a.relayTo(ctx, v, node, who, forwarded, fmt.Sprintf("job %d's tasks reading stdin", id),
		func() (io.ReadWriteCloser, error) {
			c, err := a.exec.DialStdin(key, resume)
			if errors.Is(err, exec.ErrNoResume) {
				// A supervisor of an earlier agent: the client asks
				// again without resuming.
				err = invalid(err)
			}
			return c, err
		},
		func(ctx context.Context, c *api.Client) (io.ReadWriteCloser, error) {
			if resume {
				return c.AttachStdinResume(ctx, uint64(id), step, node)
			}
			return c.AttachStdin(ctx, uint64(id), step, node)
		})
}

// pmixTarget is the first node of job j's PMIx step and that step's
// task key there. An error says why there is nothing to relay to (yet).
func pmixTarget(j *cluster.Job, step int) (string, task.Key, error) {
	key := task.Key{Job: j.ID, Incarnation: j.Incarnation, Step: step}
	for _, st := range j.Steps {
		if st.ID != step {
			continue
		}
		if st.State != cluster.StepRunning {
			return "", key, conflict(fmt.Errorf("step %d.%d is %s: its fences are over", j.ID, step, st.State))
		}
		if st.Incarnation != 0 {
			key.Incarnation = st.Incarnation
		}
		if len(st.Nodes) == 0 {
			return "", key, conflict(fmt.Errorf("step %d.%d has no nodes", j.ID, step))
		}
		return st.Nodes[0].Node, key, nil
	}
	return "", key, notFound(fmt.Errorf("step %d.%d: no such step", j.ID, step))
}

// DialPMIx connects a PMIx step's supervisor on another node to the
// fences on the step's first node, for who (root or the job's owner: the
// supervisors ask as the agent's user): to the supervisor there when it
// is this node, else, unless a peer asked (forwarded), through its agent.
func (b apiBackend) DialPMIx(ctx context.Context, id cluster.JobID, step int, who cluster.Identity, forwarded bool) (io.ReadWriteCloser, string, error) {
	a := b.a
	v, j, err := a.relayJob(id, "join the PMIx fences of", who, forwarded)
	if err != nil {
		return nil, "", err
	}
	if j.State != cluster.JobRunning {
		return nil, "", conflict(fmt.Errorf("job %d is %s: no step runs", id, j.State))
	}
	node, key, err := pmixTarget(j, step)
	if err != nil {
		if forwarded && errors.Is(err, cluster.ErrNotFound) {
			err = unavailable(err)
		}
		return nil, "", err
	}
	upstream, err := a.relayTo(ctx, v, node, who, forwarded, fmt.Sprintf("the PMIx fences of step %d.%d", id, step),
		func() (io.ReadWriteCloser, error) { return a.exec.DialPMIx(key) },
		func(ctx context.Context, c *api.Client) (io.ReadWriteCloser, error) {
			return c.AttachPMIx(ctx, uint64(id), step)
		})
	return upstream, node, err
}
