package node

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec"
	"github.com/shoal-sched/shoal/exec/task"
	"github.com/shoal-sched/shoal/httpapi"
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

// handlePty relays srun --pty's connection to the terminal of the job's
// or step's rank 0 (api.PtyProtocol): to its supervisor when the rank
// runs here, else to the agent of its node, which does. Only the job's
// owner or root may attach.
func (a *Agent) handlePty(w http.ResponseWriter, r *http.Request) {
	id, err := httpapi.PathJobID(r)
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	step := task.NoStep
	if s := r.URL.Query().Get("step"); s != "" {
		if step, err = strconv.Atoi(s); err != nil || step < task.NoStep {
			httpapi.WriteError(w, invalid(fmt.Errorf("step %q: want a step id, or -1 for the job's own task", s)))
			return
		}
	}
	if r.Header.Get("Upgrade") != api.PtyProtocol {
		httpapi.WriteError(w, invalid(fmt.Errorf("upgrade %q: want %q", r.Header.Get("Upgrade"), api.PtyProtocol)))
		return
	}
	who := httpapi.CallerOf(r)
	if err := httpapi.RequireProven(who); err != nil {
		httpapi.WriteError(w, err)
		return
	}
	v, err := a.readView(r.Context())
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	// A peer relays a client whose agent has seen the job or step: this
	// replica may not have applied it yet, and the client asks again.
	forwarded := r.Header.Get(api.HeaderForwardedBy) != ""
	j, ok := v.Job(id)
	if !ok {
		err := notFound(fmt.Errorf("job %d: no such job", id))
		if forwarded {
			err = unavailable(err)
		}
		httpapi.WriteError(w, err)
		return
	}
	if who.UID != 0 && who.UID != j.Spec.UID {
		httpapi.WriteError(w, forbidden(fmt.Errorf("attach to the terminal of job %d: %w: it belongs to %s", id, ErrForbidden, j.Spec.User)))
		return
	}
	node, key, err := ptyTarget(j, step)
	if err != nil {
		if forwarded && errors.Is(err, cluster.ErrNotFound) {
			err = unavailable(err)
		}
		httpapi.WriteError(w, err)
		return
	}
	var upstream io.ReadWriteCloser
	if node == a.cfg.Name {
		upstream, err = a.exec.DialPty(key)
		if errors.Is(err, exec.ErrNoTerminal) {
			// Not started here yet (the step was just recorded), or
			// already gone: the client asks again while the job runs.
			err = unavailable(err)
		}
	} else if forwarded {
		err = unavailable(fmt.Errorf("job %d's terminal is on %s, not on this node %s, which was asked by a peer; retry", id, node, a.cfg.Name))
	} else {
		upstream, err = a.peerPty(r.Context(), v.Node, node, who.Identity, id, step)
	}
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	defer upstream.Close()
	hj, ok := w.(http.Hijacker)
	if !ok {
		httpapi.WriteError(w, fmt.Errorf("attach to job %d's terminal: this connection cannot be taken over", id))
		return
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		a.log.Warn("terminal: take over the connection", "job", uint64(id), "err", err)
		return
	}
	defer conn.Close()
	// The server's read and write deadlines bound requests, not a
	// terminal session.
	_ = conn.SetDeadline(time.Time{})
	if _, err := fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", api.PtyProtocol); err != nil {
		return
	}
	if err := brw.Flush(); err != nil {
		return
	}
	remove, ok := a.ptys.add(closers{conn, upstream})
	if !ok {
		return // the agent is stopping
	}
	defer remove()
	a.log.Info("terminal attached", "job", uint64(id), "step", step, "node", node, "by", who.User)
	relay(hijacked{r: brw.Reader, Conn: conn}, upstream)
	a.log.Info("terminal detached", "job", uint64(id), "step", step)
}

// peerPty opens the terminal of job id's rank 0 through the agent of
// node, for who.
func (a *Agent) peerPty(ctx context.Context, nodeOf func(string) (*cluster.Node, bool), node string, who api.Identity, id cluster.JobID, step int) (io.ReadWriteCloser, error) {
	n, ok := nodeOf(node)
	if !ok || n.APIAddr == "" {
		return nil, unavailable(fmt.Errorf("node %s: address unknown", node))
	}
	c, err := a.peers.get(node, n.APIAddr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, forwardTimeout)
	defer cancel()
	rwc, err := c.WithHeader(api.HeaderForwardedBy, a.cfg.Name).WithIdentity(who).AttachPty(ctx, uint64(id), step)
	if err != nil {
		var se *api.StatusError
		if !errors.As(err, &se) {
			err = cluster.Mark(httpapi.ErrUpstream, fmt.Errorf("node %s: %w", node, err))
		}
		return nil, err
	}
	return rwc, nil
}

// hijacked is a taken-over connection whose first bytes may wait in the
// server's reader.
type hijacked struct {
	r *bufio.Reader
	net.Conn
}

func (h hijacked) Read(p []byte) (int, error) { return h.r.Read(p) }

// relay copies both ways between x and y until either ends, then closes
// both.
func relay(x, y io.ReadWriteCloser) {
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			x.Close()
			y.Close()
		})
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = io.Copy(x, y)
		closeBoth()
	})
	_, _ = io.Copy(y, x)
	closeBoth()
	wg.Wait()
}

// relays are the terminal relays in progress. http.Server.Shutdown does
// not track connections taken over from it: the agent's shutdown ends
// them through closeAll (registered with RegisterOnShutdown), and their
// handlers then return.
type relays struct {
	mu      sync.Mutex
	stopped bool
	open    map[*closers]struct{}
}

// closers closes a relay's two ends.
type closers [2]io.Closer

// add records a relay's ends; remove forgets them. ok is false once the
// agent is stopping (the caller then ends the relay itself).
func (r *relays) add(c closers) (remove func(), ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return nil, false
	}
	if r.open == nil {
		r.open = map[*closers]struct{}{}
	}
	p := &c
	r.open[p] = struct{}{}
	return func() {
		r.mu.Lock()
		delete(r.open, p)
		r.mu.Unlock()
	}, true
}

// closeAll ends every relay, and any added later.
func (r *relays) closeAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	for c := range r.open {
		c[0].Close()
		c[1].Close()
	}
}
