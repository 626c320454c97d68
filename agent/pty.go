package agent

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec"
	"github.com/shoal-sched/shoal/worker"
)

// DialPty connects to the terminal of job id's or step's rank 0 for who
// (the job's owner or root): to its supervisor when the rank runs here,
// else, unless a peer asked (forwarded), through the agent of its node.
// It names the node.
func (r relayAPI) DialPty(ctx context.Context, id cluster.JobID, step int, who cluster.Identity, forwarded bool) (io.ReadWriteCloser, string, error) {
	v, j, err := r.relayJob(id, "attach to the terminal of", who, forwarded)
	if err != nil {
		return nil, "", err
	}
	node, key, err := worker.PtyTarget(j, step)
	if err != nil {
		if forwarded && errors.Is(err, cluster.ErrNotFound) {
			err = unavailable(err)
		}
		return nil, "", err
	}
	// Not started here yet (the step was just recorded), or already
	// gone: the client asks again while the job runs.
	upstream, err := r.relayTo(ctx, v, node, who, forwarded, fmt.Sprintf("job %d's terminal", id),
		func() (io.ReadWriteCloser, error) { return r.work.exec.DialPty(key) },
		func(ctx context.Context, c *api.Client) (io.ReadWriteCloser, error) {
			return c.AttachPty(ctx, uint64(id), step)
		})
	return upstream, node, err
}

// DialStdin connects to the stdin of the ranks on node of job id's own
// task or of a step, for who (the job's owner or root), resumable or raw
// (api.StdinResumeProtocol or api.StdinProtocol): to their supervisor
// when node is this one, else, unless a peer asked (forwarded), through
// node's agent.
func (r relayAPI) DialStdin(ctx context.Context, id cluster.JobID, step int, node string, resume bool, who cluster.Identity, forwarded bool) (io.ReadWriteCloser, error) {
	v, j, err := r.relayJob(id, "send input to", who, forwarded)
	if err != nil {
		return nil, err
	}
	key, err := worker.StdinTarget(j, step, node)
	if err != nil {
		if forwarded && errors.Is(err, cluster.ErrNotFound) {
			err = unavailable(err)
		}
		return nil, err
	}
	return r.relayTo(ctx, v, node, who, forwarded, fmt.Sprintf("job %d's tasks reading stdin", id),
		func() (io.ReadWriteCloser, error) {
			c, err := r.work.exec.DialStdin(key, resume)
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

// DialPMIx connects a PMIx step's supervisor on another node to the
// fences on the step's first node, for who (root or the job's owner: the
// supervisors ask as the agent's user): to the supervisor there when it
// is this node, else, unless a peer asked (forwarded), through its agent.
func (r relayAPI) DialPMIx(ctx context.Context, id cluster.JobID, step int, who cluster.Identity, forwarded bool) (io.ReadWriteCloser, string, error) {
	v, j, err := r.relayJob(id, "join the PMIx fences of", who, forwarded)
	if err != nil {
		return nil, "", err
	}
	if j.State != cluster.JobRunning {
		return nil, "", conflict(fmt.Errorf("job %d is %s: no step runs", id, j.State))
	}
	node, key, err := worker.PMIxTarget(j, step)
	if err != nil {
		if forwarded && errors.Is(err, cluster.ErrNotFound) {
			err = unavailable(err)
		}
		return nil, "", err
	}
	upstream, err := r.relayTo(ctx, v, node, who, forwarded, fmt.Sprintf("the PMIx fences of step %d.%d", id, step),
		func() (io.ReadWriteCloser, error) { return r.work.exec.DialPMIx(key) },
		func(ctx context.Context, c *api.Client) (io.ReadWriteCloser, error) {
			return c.AttachPMIx(ctx, uint64(id), step)
		})
	return upstream, node, err
}
