package stepd

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/shoal-sched/shoal/exec/task"
)

// Bounds of the relay of srun's stdin.
const (
	// stdinResumeWait bounds how long the ranks' input stays open after a
	// resumable connection broke, for srun to connect again (an agent on
	// the way restarting); past it the input ends, as if srun had sent
	// its end (srun itself gone).
	stdinResumeWait = 2 * time.Minute
	// stdinWriteWait bounds one write of a count to a connection: a
	// client that stops reading loses the connection, not the input.
	stdinWriteWait = 30 * time.Second
)

// stdinServer relays srun's stdin to the ranks of this node that read it
// (task.Launch.RelayRank): each reads a pipe whose write end it holds.
// It serves task.StdinSock (raw, one connection: its end is the ranks'
// end of input) and task.StdinResumeSock (frames, made again as often as
// srun reconnects, with the count of bytes delivered), one connection at
// a time, as one stream (see exec/task's stdin.go).
type stdinServer struct {
	log        *slog.Logger
	raw, frame net.Listener
	pipes      []*os.File // write ends, one per rank that reads srun's stdin
	// all are the pipes as serve found them: close closes them, which
	// unblocks a write to a rank that never reads (serve's goroutine
	// alone touches pipes once it runs).
	all        []*os.File
	resumeWait time.Duration
	quit       chan struct{} // closed by close
	done       chan struct{} // closed once serve's goroutines are gone

	mu      sync.Mutex
	served  bool
	stopped bool
	conn    net.Conn // the connection served now, if any
	acks    *acker   // its counts, when it is resumable
}

// openStdin listens on task.StdinSock and task.StdinResumeSock in the
// working directory (the task directory). The caller adds a pipe per
// rank (pipe), starts the ranks, calls serve, and close once the ranks
// are gone.
func openStdin(log *slog.Logger) (*stdinServer, error) {
	s := &stdinServer{log: log, resumeWait: stdinResumeWait, quit: make(chan struct{}), done: make(chan struct{})}
	var err error
	if s.raw, err = listenStdin(task.StdinSock); err != nil {
		return nil, err
	}
	if s.frame, err = listenStdin(task.StdinResumeSock); err != nil {
		s.raw.Close()
		_ = os.Remove(task.StdinSock)
		return nil, err
	}
	return s, nil
}

func listenStdin(name string) (net.Listener, error) {
	_ = os.Remove(name)
	ln, err := net.Listen("unix", name)
	if err != nil {
		return nil, fmt.Errorf("stdin socket: %w", err)
	}
	if err := os.Chmod(name, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("stdin socket: %w", err)
	}
	return ln, nil
}

// pipe makes a rank's stdin: the caller gives the read end to the rank
// and closes its own copy once the rank runs.
func (s *stdinServer) pipe() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	s.pipes = append(s.pipes, w)
	return r, nil
}

// stdinConn is an accepted connection and whether it speaks frames.
type stdinConn struct {
	net.Conn
	resume bool
}

// serve starts the relay; close stops it.
func (s *stdinServer) serve() {
	s.mu.Lock()
	s.served = true
	s.all = append([]*os.File(nil), s.pipes...)
	s.mu.Unlock()
	accepted := make(chan stdinConn)
	var wg sync.WaitGroup
	accept := func(ln net.Listener, resume bool) {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by close
			}
			select {
			case accepted <- stdinConn{c, resume}:
			case <-s.quit:
				c.Close()
				return
			}
		}
	}
	wg.Go(func() { accept(s.raw, false) })
	wg.Go(func() { accept(s.frame, true) })
	wg.Go(func() { s.relay(accepted) })
	go func() { // owned by close, which closes the listeners and quit
		wg.Wait()
		close(s.done)
	}()
}

// relay serves the accepted connections in turn until close: the stream
// they carry goes to the pipes until it ends (a raw connection's end, an
// end frame, no rank left to read, or stdinResumeWait without a
// connection after a resumable one broke); after it, a resumable
// connection is told StdinDone.
func (s *stdinServer) relay(accepted <-chan stdinConn) {
	defer s.closePipes()
	var delivered uint64
	ended := false
	var expire <-chan time.Time
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		var c stdinConn
		select {
		case c = <-accepted:
		case <-expire:
			s.log.Warn("stdin: srun did not connect again: the ranks' input ends", "after", s.resumeWait, "bytes", delivered)
			s.closePipes()
			ended, expire = true, nil
			continue
		case <-s.quit:
			return
		}
		if !s.hold(c) {
			return
		}
		if ended {
			if c.resume {
				_ = c.SetWriteDeadline(time.Now().Add(stdinWriteWait))
				_, _ = c.Write(task.AppendStdinCount(nil, task.StdinDone))
			}
			s.release(c)
			continue
		}
		expire = nil
		before := delivered
		var end bool
		var err error
		if c.resume {
			end, err = s.copyFrames(c, &delivered)
		} else {
			end, err = s.copyRaw(c, &delivered)
		}
		s.log.Info("stdin relayed", "bytes", delivered-before, "from", before, "resumable", c.resume, "end", end, "err", err)
		s.release(c)
		if end {
			s.closePipes()
			ended = true
		} else {
			if timer != nil {
				timer.Stop()
			}
			timer = time.NewTimer(s.resumeWait)
			expire = timer.C
		}
	}
}

// hold makes c the connection served now, unless close has begun.
func (s *stdinServer) hold(c stdinConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		c.Close()
		return false
	}
	s.conn = c
	return true
}

func (s *stdinServer) release(c stdinConn) {
	s.mu.Lock()
	s.conn = nil
	s.mu.Unlock()
	c.Close()
}

// live counts the pipes left to write to.
func (s *stdinServer) live() int {
	n := 0
	for _, p := range s.pipes {
		if p != nil {
			n++
		}
	}
	return n
}

// deliver writes b to every pipe left, dropping those whose rank reads no
// more; it reports whether any is left.
func (s *stdinServer) deliver(b []byte) bool {
	for i, p := range s.pipes {
		if p == nil {
			continue
		}
		if _, err := p.Write(b); err != nil {
			// The rank exited or closed its stdin.
			if !errors.Is(err, syscall.EPIPE) && !errors.Is(err, os.ErrClosed) {
				s.log.Warn("stdin: write to a rank", "err", err)
			}
			p.Close()
			s.pipes[i] = nil
		}
	}
	return s.live() > 0
}

// copyRaw writes what c sends to the pipes until c ends (the end of
// input) or no pipe is left to read it.
func (s *stdinServer) copyRaw(c net.Conn, delivered *uint64) (end bool, err error) {
	if s.live() == 0 {
		return true, nil
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			*delivered += uint64(n)
			if !s.deliver(buf[:n]) {
				return true, nil
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
			return true, nil
		}
		if err != nil {
			return true, err
		}
	}
}

// copyFrames serves a resumable connection: the count delivered first,
// then c's frames to the pipes, each acknowledged, until an end frame or
// no pipe left (end: StdinDone is sent) or c breaks (not the end).
func (s *stdinServer) copyFrames(c net.Conn, delivered *uint64) (end bool, err error) {
	s.mu.Lock()
	acks := newAcker(c, *delivered) // known to close before its first count
	s.acks = acks
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.acks = nil
		s.mu.Unlock()
		if end {
			acks.send(task.StdinDone)
		}
		acks.stop()
	}()
	if s.live() == 0 {
		return true, nil
	}
	buf := make([]byte, task.MaxStdinData)
	for {
		f, err := task.ReadStdinFrame(c, buf)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = nil
			}
			return false, err
		}
		if f.Type == task.StdinEnd {
			return true, nil
		}
		*delivered += uint64(len(f.Data))
		if !s.deliver(f.Data) {
			return true, nil
		}
		acks.send(*delivered)
	}
}

// acker writes counts to a connection from a goroutine of its own, the
// latest one only when the connection is slower than the frames, so that
// a client slow to read them does not hold the ranks' input back.
type acker struct {
	c      net.Conn
	mu     sync.Mutex
	latest uint64
	final  bool
	wake   chan struct{}
	wg     sync.WaitGroup
}

// newAcker starts writing counts to c, first first.
func newAcker(c net.Conn, first uint64) *acker {
	a := &acker{c: c, latest: first, wake: make(chan struct{}, 1)}
	a.wake <- struct{}{}
	a.wg.Go(a.run)
	return a
}

func (a *acker) run() {
	var sent uint64
	first := true
	for range a.wake {
		a.mu.Lock()
		n, final := a.latest, a.final
		a.mu.Unlock()
		if first || n != sent {
			_ = a.c.SetWriteDeadline(time.Now().Add(stdinWriteWait))
			if _, err := a.c.Write(task.AppendStdinCount(nil, n)); err != nil {
				return
			}
			sent, first = n, false
		}
		if final {
			return
		}
	}
}

// send makes n the next count written (none once stopping).
func (a *acker) send(n uint64) {
	a.mu.Lock()
	if a.final {
		a.mu.Unlock()
		return
	}
	a.latest = n
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// stop writes the last count given, if not yet written, and waits.
func (a *acker) stop() { a.finish(false) }

// finish is stop, the last count StdinDone when done.
func (a *acker) finish(done bool) {
	a.mu.Lock()
	if done && !a.final {
		a.latest = task.StdinDone
	}
	a.final = true
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
	a.wg.Wait()
}

func (s *stdinServer) closePipes() {
	for i, p := range s.pipes {
		if p != nil {
			p.Close()
			s.pipes[i] = nil
		}
	}
}

// close ends the relay once the ranks are gone: the listeners, the
// connection, and the pipes.
func (s *stdinServer) close() {
	s.mu.Lock()
	s.stopped = true
	served, acks, conn := s.served, s.acks, s.conn
	s.mu.Unlock()
	if acks != nil {
		// The ranks read no more: srun is told, not left to connect
		// again while the step runs on elsewhere.
		acks.finish(true)
	}
	if conn != nil {
		conn.Close()
	}
	s.mu.Lock()
	for _, p := range s.all {
		p.Close()
	}
	s.mu.Unlock()
	close(s.quit)
	s.raw.Close()
	s.frame.Close()
	if served {
		<-s.done
	} else {
		s.closePipes()
	}
	_ = os.Remove(task.StdinSock)
	_ = os.Remove(task.StdinResumeSock)
}
