package slurmcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/exec/task"
)

// Bounds of srun's stdin relay.
const (
	// srunStdinWindow bounds what srun holds of its stdin: the bytes read
	// that some node's supervisor has not counted as delivered yet (what
	// a connection made again may have to send again). srun reads no
	// more until they are.
	srunStdinWindow = 4 << 20
	// srunStdinRetry and srunStdinRetryMax are the first and the longest
	// wait between two tries to connect to a node's stdin.
	srunStdinRetry    = 100 * time.Millisecond
	srunStdinRetryMax = 2 * time.Second
	// srunStdinGiveUp bounds how long a node's stdin may stay
	// unreachable (its agent restarting, or gone) before srun stops
	// sending it anything.
	srunStdinGiveUp = 2 * time.Minute
)

// stdinDial connects to the stdin of the tasks on node: resumable
// (api.StdinResumeProtocol) or raw.
type stdinDial func(ctx context.Context, node string, resume bool) (io.ReadWriteCloser, error)

// stdinStream is srun's stdin on its way to the nodes whose tasks read
// it: one connection per node, made again when it breaks (an agent
// restarting) and resumed where that node's supervisor says its delivery
// stopped, so that no byte is lost or sent twice. What some node has not
// had delivered is held, at most window bytes (then srun stops reading
// its stdin until the slowest node's tasks read on). A node whose agent
// predates resuming (it refuses api.StdinResumeProtocol) gets one raw
// connection, as before: its end is the tasks' end of input.
type stdinStream struct {
	window int

	mu      sync.Mutex
	cond    *sync.Cond
	buf     []byte // the stream from base on
	base    uint64
	eof     bool // all of the stream is in buf
	stopped bool // ctx ended
	nodes   []*stdinNode
}

// stdinNode is a node's delivery: acked is what its supervisor has
// counted as delivered (the stream before it is no longer needed for
// it); done once its tasks read no more or srun gave up on it.
type stdinNode struct {
	name  string
	acked uint64
	done  bool
}

func newStdinStream(nodes []string, window int) *stdinStream {
	s := &stdinStream{window: max(window, task.MaxStdinData)}
	s.cond = sync.NewCond(&s.mu)
	for _, n := range nodes {
		s.nodes = append(s.nodes, &stdinNode{name: n})
	}
	return s
}

// run reads in and sends it to every node until in ends and each node
// has had it all, no node is left to send to, or ctx ends.
func (s *stdinStream) run(ctx context.Context, in io.Reader, dial stdinDial, stderr io.Writer) {
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.stopped = true
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	var wg sync.WaitGroup
	for _, n := range s.nodes {
		wg.Go(func() { s.sendNode(ctx, n, dial, stderr) })
	}
	defer wg.Wait()
	buf := make([]byte, 64<<10)
	for {
		s.mu.Lock()
		for !s.stopped && s.live() > 0 && len(s.buf) >= s.window {
			s.cond.Wait()
		}
		if s.stopped || s.live() == 0 {
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		n, err := in.Read(buf)
		s.mu.Lock()
		s.buf = append(s.buf, buf[:n]...)
		if err != nil {
			s.eof = true
		}
		s.cond.Broadcast()
		s.mu.Unlock()
		if err != nil {
			return // EOF (each node is sent its end), or stopped
		}
	}
}

// live counts the nodes still sent to; s.mu is held.
func (s *stdinStream) live() int {
	n := 0
	for _, nd := range s.nodes {
		if !nd.done {
			n++
		}
	}
	return n
}

// end is the offset of the stream's last byte read, plus one; s.mu is
// held.
func (s *stdinStream) end() uint64 { return s.base + uint64(len(s.buf)) }

// trim drops what every node still sent to has had delivered; s.mu is
// held.
func (s *stdinStream) trim() {
	low := s.end()
	for _, nd := range s.nodes {
		if !nd.done {
			low = min(low, nd.acked)
		}
	}
	if low > s.base {
		s.buf = s.buf[low-s.base:]
		s.base = low
		if len(s.buf) == 0 {
			s.buf = nil // lets the old array go
		}
	}
	s.cond.Broadcast()
}

// finish marks n as sent to no more.
func (s *stdinStream) finish(n *stdinNode) {
	s.mu.Lock()
	n.done = true
	s.trim()
	s.mu.Unlock()
}

// sendNode connects to n's stdin, again each time the connection breaks
// (waiting longer each time, up to srunStdinRetryMax), and sends the
// stream until n is done.
func (s *stdinStream) sendNode(ctx context.Context, n *stdinNode, dial stdinDial, stderr io.Writer) {
	defer s.finish(n)
	resume := true
	wait := srunStdinRetry
	var failing time.Time // since when connecting fails
	connected := false    // once: 503 is then an agent reattaching, bounded too
	for ctx.Err() == nil {
		conn, err := dial(ctx, n.name, resume)
		var se *api.StatusError
		isStatus := errors.As(err, &se)
		switch {
		case err == nil:
			failing, wait, connected = time.Time{}, srunStdinRetry, true
			if !resume {
				s.sendRaw(ctx, n, conn)
				return
			}
			if s.sendFrames(ctx, n, conn) {
				return
			}
			continue // broke: connect again at once
		case ctx.Err() != nil:
			return
		case isStatus && se.Code == http.StatusBadRequest && resume:
			resume = false // an agent or supervisor that predates resuming
			continue
		case isStatus && se.Code == http.StatusConflict:
			return // the step ended
		case isStatus && (se.Code == http.StatusBadRequest || se.Code == http.StatusForbidden || se.Code == http.StatusUnauthorized):
			fmt.Fprintf(stderr, "srun: stdin to %s: %v\n", n.name, err)
			return
		case isStatus && se.Code == http.StatusServiceUnavailable && !connected:
			// The tasks have not started yet: they are there while the
			// step runs.
		default:
			// No answer (the agent restarting), one from an agent that
			// does not know the job yet, or that is reattaching its
			// tasks (503): past srunStdinGiveUp their supervisor has
			// ended their input itself.
			if failing.IsZero() {
				failing = time.Now()
			} else if time.Since(failing) > srunStdinGiveUp {
				fmt.Fprintf(stderr, "srun: stdin to %s: %v; giving up\n", n.name, err)
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, srunStdinRetryMax)
	}
}

// sendRaw sends the stream to n on conn as it is read, from its start,
// and closes conn at its end (the tasks' end of input). A write that
// fails is the tasks reading no more: the connection is not made again.
func (s *stdinStream) sendRaw(ctx context.Context, n *stdinNode, conn io.WriteCloser) {
	defer context.AfterFunc(ctx, func() { conn.Close() })()
	defer conn.Close()
	var chunk []byte
	for {
		s.mu.Lock()
		for !s.stopped && n.acked == s.end() && !s.eof {
			s.cond.Wait()
		}
		if s.stopped || n.acked == s.end() {
			s.mu.Unlock()
			return
		}
		off := n.acked - s.base
		chunk = append(chunk[:0], s.buf[off:min(uint64(len(s.buf)), off+task.MaxStdinData)]...)
		s.mu.Unlock()
		if _, err := conn.Write(chunk); err != nil {
			return
		}
		s.mu.Lock()
		n.acked += uint64(len(chunk))
		s.trim()
		s.mu.Unlock()
	}
}

// sendFrames runs one resumable connection to n: from the count its
// supervisor sends first, the stream as frames, then its end; the
// supervisor's counts are what n has had delivered. It reports whether n
// is done (false: the connection broke, make it again).
func (s *stdinStream) sendFrames(ctx context.Context, n *stdinNode, conn io.ReadWriteCloser) (done bool) {
	defer context.AfterFunc(ctx, func() { conn.Close() })()
	defer conn.Close()
	from, err := task.ReadStdinCount(conn)
	if err != nil {
		return false
	}
	s.mu.Lock()
	switch {
	case from == task.StdinDone:
		s.mu.Unlock()
		return true
	case from < n.acked || from > s.end():
		s.mu.Unlock()
		// Not the stream srun sent (a supervisor of another step?).
		return true
	}
	n.acked = from
	s.trim()
	s.mu.Unlock()
	sent := from
	broken := false
	var wg sync.WaitGroup
	defer wg.Wait()
	defer conn.Close() // ends the reader of counts
	wg.Go(func() {
		for {
			v, err := task.ReadStdinCount(conn)
			s.mu.Lock()
			switch {
			case err != nil:
				broken = true
			case v == task.StdinDone:
				n.done = true
			case v > n.acked:
				n.acked = v
			}
			s.trim()
			s.mu.Unlock()
			if err != nil || v == task.StdinDone {
				return
			}
		}
	})
	endSent := false
	var frame []byte
	for {
		s.mu.Lock()
		for !s.stopped && !broken && !n.done && sent == s.end() && (!s.eof || endSent) {
			s.cond.Wait()
		}
		switch {
		case n.done || s.stopped:
			s.mu.Unlock()
			return true
		case broken:
			s.mu.Unlock()
			return false
		case sent < s.end():
			off := sent - s.base
			frame = task.AppendStdinData(frame[:0], s.buf[off:min(uint64(len(s.buf)), off+task.MaxStdinData)])
			s.mu.Unlock()
			if _, err := conn.Write(frame); err != nil {
				return false
			}
			sent += uint64(len(frame) - 5)
		default: // the stream ended: its end, then StdinDone comes back
			s.mu.Unlock()
			if _, err := conn.Write(task.AppendStdinEnd(nil)); err != nil {
				return false
			}
			endSent = true
		}
	}
}
