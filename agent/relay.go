package agent

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/httpapi"
	"github.com/shoal-sched/shoal/worker"
)

// The requests that reach one node of a job's allocation (a terminal, the
// tasks' stdin, an sbcast copy) are served there, or relayed to it by the
// agent the client asked: relayJob finds the job, relayPeer reaches the
// node's agent.

// relayJob is live job id, from the view this agent acts on (a worker's
// holds its own jobs only: follow.go), once who may verb it
// (worker.RelayJob).
func (r relayAPI) relayJob(id cluster.JobID, verb string, who cluster.Identity, forwarded bool) (*fsm.View, *cluster.Job, error) {
	v := r.view()
	j, err := worker.RelayJob(v, id, verb, who, forwarded)
	if err != nil {
		return nil, nil, err
	}
	return v, j, nil
}

// relayPeer calls node's agent for who with call, its client marked as
// forwarded by this agent; a failure to reach it (not an answer) is
// ErrUpstream.
func (r relayAPI) relayPeer(v *fsm.View, node string, who cluster.Identity, call func(*api.Client) error) error {
	n, ok := v.Node(node)
	if !ok || n.APIAddr == "" {
		return unavailable(fmt.Errorf("node %s: address unknown", node))
	}
	c, err := r.peers.get(node, n.APIAddr)
	if err != nil {
		return err
	}
	err = call(c.WithHeader(api.HeaderForwardedBy, r.cfg.Name).WithIdentity(api.Identity{User: who.User, UID: who.UID, GID: who.GID}))
	var se *api.StatusError
	if err != nil && !errors.As(err, &se) {
		err = cluster.Mark(httpapi.ErrUpstream, fmt.Errorf("node %s: %w", node, err))
	}
	return err
}

// relayTo connects who to a socket of a task on node (what names it in
// messages): through local when node is this one, where exec.ErrNoTerminal
// (the task not started here yet, or gone) is unavailable so the client
// asks again; else, unless a peer asked (forwarded: never relayed twice),
// through node's agent with remote, bounded by forwardTimeout.
func (r relayAPI) relayTo(ctx context.Context, v *fsm.View, node string, who cluster.Identity, forwarded bool, what string,
	local func() (io.ReadWriteCloser, error),
	remote func(context.Context, *api.Client) (io.ReadWriteCloser, error)) (io.ReadWriteCloser, error) {
	switch {
	case node == r.cfg.Name:
		c, err := local()
		if errors.Is(err, exec.ErrNoTerminal) {
			err = unavailable(err)
		}
		return c, err
	case forwarded:
		return nil, unavailable(fmt.Errorf("%s: on %s, not on this node %s, which was asked by a peer; retry", what, node, r.cfg.Name))
	}
	var upstream io.ReadWriteCloser
	err := r.relayPeer(v, node, who, func(c *api.Client) error {
		ctx, cancel := context.WithTimeout(ctx, forwardTimeout)
		defer cancel()
		var err error
		upstream, err = remote(ctx, c)
		return err
	})
	return upstream, err
}
