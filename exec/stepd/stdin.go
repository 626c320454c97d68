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

	"github.com/shoal-sched/shoal/exec/task"
)

// stdinServer relays srun's stdin to the ranks of this node that read it
// (task.Launch.RelayRank): each reads a pipe whose write end it holds,
// and the first connection to task.StdinSock (the agent's relay of srun)
// is copied to every pipe; the connection's end is the ranks' end of
// input (see exec/task's stdin.go).
type stdinServer struct {
	log   *slog.Logger
	ln    net.Listener
	pipes []*os.File // write ends, one per rank that reads srun's stdin
	// all are the pipes as serve found them: close closes them, which
	// unblocks a write to a rank that never reads (serve's goroutine
	// alone touches pipes once it runs).
	all  []*os.File
	done chan struct{}

	mu      sync.Mutex
	served  bool
	stopped bool
	conn    net.Conn // the connection served now, if any
}

// openStdin listens on task.StdinSock in the working directory (the task
// directory). The caller adds a pipe per rank (pipe), starts the ranks,
// calls serve, and close once the ranks are gone.
func openStdin(log *slog.Logger) (*stdinServer, error) {
	_ = os.Remove(task.StdinSock)
	ln, err := net.Listen("unix", task.StdinSock)
	if err != nil {
		return nil, fmt.Errorf("stdin socket: %w", err)
	}
	if err := os.Chmod(task.StdinSock, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("stdin socket: %w", err)
	}
	return &stdinServer{log: log, ln: ln, done: make(chan struct{})}, nil
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

// serve starts the relay of one connection to the pipes; close stops it.
func (s *stdinServer) serve() {
	s.mu.Lock()
	s.served = true
	s.all = append([]*os.File(nil), s.pipes...)
	s.mu.Unlock()
	go func() { // owned by close: it ends with the listener or the connection
		defer close(s.done)
		defer s.closePipes()
		c, err := s.ln.Accept()
		s.ln.Close() // one connection: srun's
		_ = os.Remove(task.StdinSock)
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conn = c
		s.mu.Unlock()
		defer c.Close()
		n, err := s.copy(c)
		s.log.Info("stdin relayed", "bytes", n, "err", err)
	}()
}

// copy writes what c sends to every pipe until c ends or no pipe is
// left to read it.
func (s *stdinServer) copy(c net.Conn) (int64, error) {
	live := len(s.pipes)
	buf := make([]byte, 64<<10)
	var total int64
	for {
		n, err := c.Read(buf)
		if n > 0 {
			total += int64(n)
			for i, p := range s.pipes {
				if p == nil {
					continue
				}
				if _, werr := p.Write(buf[:n]); werr != nil {
					// The rank exited or closed its stdin.
					if !errors.Is(werr, syscall.EPIPE) && !errors.Is(werr, os.ErrClosed) {
						s.log.Warn("stdin: write to a rank", "err", werr)
					}
					p.Close()
					s.pipes[i] = nil
					live--
				}
			}
			if live == 0 {
				return total, nil
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

func (s *stdinServer) closePipes() {
	for i, p := range s.pipes {
		if p != nil {
			p.Close()
			s.pipes[i] = nil
		}
	}
}

// close ends the relay once the ranks are gone: the listener, the
// connection, and the pipes.
func (s *stdinServer) close() {
	s.mu.Lock()
	s.stopped = true
	served := s.served
	if s.conn != nil {
		s.conn.Close()
	}
	for _, p := range s.all {
		p.Close()
	}
	s.mu.Unlock()
	s.ln.Close()
	if served {
		<-s.done
	} else {
		s.closePipes()
	}
	_ = os.Remove(task.StdinSock)
}
