package httpapi

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

// HandlePty is GET /v1/jobs/{id}/pty[?step=S]: it takes the connection
// over (api.PtyProtocol) and relays it to the terminal of the job's or
// step's rank 0 until either side ends.
func (s *Server) HandlePty(w http.ResponseWriter, r *http.Request) {
	s.handleRelay(w, r, api.PtyProtocol, "terminal", func(id cluster.JobID, step int, who cluster.Identity, forwarded bool) (io.ReadWriteCloser, string, error) {
		return s.Relays.DialPty(r.Context(), id, step, who, forwarded)
	})
}

// HandleStdin is GET /v1/jobs/{id}/stdin?step=S&node=NODE: it takes the
// connection over (api.StdinResumeProtocol, or api.StdinProtocol of
// earlier clients) and relays it to the stdin of the ranks on NODE of the
// job's own task (step -1) or of a step that read srun's, until either
// side ends.
func (s *Server) HandleStdin(w http.ResponseWriter, r *http.Request) {
	node := r.URL.Query().Get("node")
	if node == "" {
		WriteError(w, cluster.Mark(cluster.ErrInvalid, fmt.Errorf("node: empty, want the node whose ranks read srun's stdin")))
		return
	}
	protocol := r.Header.Get("Upgrade")
	if protocol != api.StdinResumeProtocol && protocol != api.StdinProtocol {
		WriteError(w, cluster.Mark(cluster.ErrInvalid, fmt.Errorf("upgrade %q: want %q (or %q, raw)", protocol, api.StdinResumeProtocol, api.StdinProtocol)))
		return
	}
	resume := protocol == api.StdinResumeProtocol
	s.handleRelay(w, r, protocol, "stdin", func(id cluster.JobID, step int, who cluster.Identity, forwarded bool) (io.ReadWriteCloser, string, error) {
		c, err := s.Relays.DialStdin(r.Context(), id, step, node, resume, who, forwarded)
		return c, node, err
	})
}

// HandlePMIx is GET /v1/jobs/{id}/pmix?step=S: it takes the connection
// over (api.PMIxProtocol) and relays it to the fences of the PMIx step on
// its first node, for the step's supervisors on the other nodes.
func (s *Server) HandlePMIx(w http.ResponseWriter, r *http.Request) {
	s.handleRelay(w, r, api.PMIxProtocol, "pmix", func(id cluster.JobID, step int, who cluster.Identity, forwarded bool) (io.ReadWriteCloser, string, error) {
		return s.Relays.DialPMIx(r.Context(), id, step, who, forwarded)
	})
}

// handleRelay takes a connection over for protocol once dial reached its
// other end, and relays both ways until either side ends.
func (s *Server) handleRelay(w http.ResponseWriter, r *http.Request, protocol, what string,
	dial func(id cluster.JobID, step int, who cluster.Identity, forwarded bool) (io.ReadWriteCloser, string, error)) {
	id, err := PathJobID(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	step := -1
	if v := r.URL.Query().Get("step"); v != "" {
		if step, err = strconv.Atoi(v); err != nil || step < -1 {
			WriteError(w, cluster.Mark(cluster.ErrInvalid, fmt.Errorf("step %q: want a step id, or -1 for the job's own task", v)))
			return
		}
	}
	if r.Header.Get("Upgrade") != protocol {
		WriteError(w, cluster.Mark(cluster.ErrInvalid, fmt.Errorf("upgrade %q: want %q", r.Header.Get("Upgrade"), protocol)))
		return
	}
	who, ok := s.AcceptRelay(w, r)
	if !ok {
		return
	}
	upstream, node, err := dial(id, step, who.Who(), r.Header.Get(api.HeaderForwardedBy) != "")
	if err != nil {
		WriteError(w, err)
		return
	}
	defer upstream.Close()
	hj, ok := w.(http.Hijacker)
	if !ok {
		WriteError(w, fmt.Errorf("attach to job %d's %s: this connection cannot be taken over", id, what))
		return
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		s.log.Warn(what+": take over the connection", "job", uint64(id), "err", err)
		return
	}
	defer conn.Close()
	// The server's read and write deadlines bound requests, not a
	// session.
	_ = conn.SetDeadline(time.Time{})
	if _, err := fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", protocol); err != nil {
		return
	}
	if err := brw.Flush(); err != nil {
		return
	}
	remove, ok := s.sessions.add(closers{conn, upstream})
	if !ok {
		return // the agent is stopping
	}
	defer remove()
	s.log.Info(what+" attached", "job", uint64(id), "step", step, "node", node, "by", who.User)
	relay(hijacked{r: brw.Reader, Conn: conn}, upstream)
	s.log.Info(what+" detached", "job", uint64(id), "step", step)
}

// CloseRelays ends the terminal relays in progress and refuses new ones:
// http.Server.Shutdown does not track connections taken over from it, so
// the agent registers this with RegisterOnShutdown.
func (s *Server) CloseRelays() { s.sessions.closeAll() }

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

// relays are the terminal relays in progress (see CloseRelays); their
// handlers return once closeAll ends them.
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
