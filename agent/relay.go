package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/httpapi"
	"github.com/shoal-sched/shoal/leader"
	"github.com/shoal-sched/shoal/worker"
)

// The requests that reach one node of a job's allocation (a terminal, the
// tasks' stdin, an sbcast copy) are served there, or relayed to it by the
// agent the client asked: relayJob finds the job, relayPeer reaches the
// node's agent. A job's output (Logs) is gathered from every node that
// holds some: jobFor finds the job, askNode reads each other node's.

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

// Logs are job id's output from every node that holds some, if who may
// read it.
func (r relayAPI) Logs(ctx context.Context, id cluster.JobID, filter api.LogFilter, who cluster.Identity) ([]api.LogChunk, uint64, error) {
	v, j, err := r.jobFor(id, "read the output of", who)
	if err != nil {
		return nil, 0, err
	}
	out := []api.LogChunk{}
	for _, name := range j.Alloc.Hosts() {
		var chunks []api.LogChunk
		if name == r.cfg.Name {
			chunks, err = r.LocalLogs(id, filter)
		} else {
			err = r.askNode(ctx, v, name, fmt.Sprintf("/v1/internal/logs/%d%s", id, filter.Query()), &chunks)
		}
		if err != nil {
			out = append(out, api.LogChunk{Node: name, Error: err.Error()})
			continue
		}
		out = append(out, chunks...)
	}
	return out, v.Index, nil
}

// maxLogBytes bounds what LocalLogs reads of one output file.
const maxLogBytes = 16 << 20

// LocalLogs are job id's output files on this node: its ranks' output.
func (r relayAPI) LocalLogs(id cluster.JobID, filter api.LogFilter) ([]api.LogChunk, error) {
	files, err := r.work.exec.LogFiles(id)
	if err != nil {
		return nil, fmt.Errorf("logs of job %d on %s: %w", id, r.cfg.Name, err)
	}
	out := make([]api.LogChunk, 0, len(files))
	for _, f := range files {
		if filter.Step != nil && f.Step != *filter.Step {
			continue
		}
		c := api.LogChunk{Node: r.cfg.Name, Incarnation: f.Incarnation, Step: f.Step, Rank: f.Rank, Stream: f.Stream}
		// ReadLog reads a file the job chose only as its user and only if
		// it is still the one its task opened: the agent runs as root.
		data, offset, size, err := exec.ReadLog(f, filter.From[api.LogKey(c)], maxLogBytes)
		if err != nil {
			c.Error = err.Error()
		}
		c.Data, c.Offset, c.Size = string(data), offset, size
		out = append(out, c)
	}
	return out, nil
}

// jobFor is job id, live or archived, from this replica, once who may
// verb it (leader.JobToTouch).
func (r relayAPI) jobFor(id cluster.JobID, verb string, who cluster.Identity) (*fsm.View, *cluster.Job, error) {
	v := r.state.View()
	j, err := leader.JobToTouch(v, id, verb, callerOf(v.Policy(), who))
	if err != nil {
		return nil, nil, err
	}
	return v, j, nil
}

// askNode GETs path (an /v1/internal/ read) from another node's agent
// into out.
func (r relayAPI) askNode(ctx context.Context, v *fsm.View, node, path string, out any) error {
	n, ok := v.Node(node)
	if !ok || n.APIAddr == "" {
		return fmt.Errorf("node %s: address unknown", node)
	}
	c, err := r.peers.get(node, n.APIAddr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, forwardTimeout)
	defer cancel()
	if _, err := c.Do(ctx, http.MethodGet, path, nil, out); err != nil {
		return fmt.Errorf("node %s: %w", node, err)
	}
	return nil
}
