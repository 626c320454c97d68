package stepd

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shoal-sched/shoal/exec/task"
)

// Bounds of a --pty task's terminal.
const (
	// ptyDrainWait bounds how long the end of the task waits for the
	// terminal's last output to be read and sent on: srun attaches a
	// moment after the rank starts, and a quick command's output waits
	// for it.
	ptyDrainWait = 5 * time.Second
	// ptyQuiet is how long the terminal must stay silent, once the rank
	// is gone, for its output to be taken as ended.
	ptyQuiet = 200 * time.Millisecond
	// ptyWriteWait bounds one write of output to a connection: a client
	// that stops reading loses the connection, not the task.
	ptyWriteWait = 30 * time.Second
)

// ptyServer holds the terminal of a --pty task's rank 0: the master, a
// reader of its output, and the socket (task.PtySock) it is served on to
// one connection at a time (the agent's relay of srun). Output waits in
// the terminal while no connection reads it, as on a terminal nobody
// reads; input and window sizes come as task's frames.
type ptyServer struct {
	log    *slog.Logger
	master *os.File
	// slave is the supervisor's own copy of the terminal: while it is
	// open the master never reads EIO, which Linux may return before the
	// last output a rank wrote just before its exit; the end of the
	// output is the rank's end and then ptyQuiet of silence.
	slave    *os.File
	draining chan struct{} // closed by close: reads are bounded by ptyQuiet
	ln       net.Listener
	out      chan []byte   // the master's output; closed at its end
	read     chan struct{} // closed once the reader stops
	served   chan struct{} // closed once the acceptor stops
	stop     chan struct{} // closed by close: the reader drops what it holds

	mu   sync.Mutex
	conn net.Conn // the connection served now, if any

	// held is output a connection that broke did not take: the next
	// one gets it first (the acceptor's goroutine alone touches it).
	held []byte
}

// openPty makes the terminal of a --pty rank and listens for its
// connection on task.PtySock in the working directory (the task
// directory). The caller starts the rank on the returned slave, closes its
// own copy once the rank runs, and calls serve, then close at the end.
func openPty(log *slog.Logger, uid, gid int) (*ptyServer, *os.File, error) {
	master, slave, err := newPty()
	if err != nil {
		return nil, nil, fmt.Errorf("terminal: %w", err)
	}
	fail := func(err error) (*ptyServer, *os.File, error) {
		master.Close()
		slave.Close()
		return nil, nil, err
	}
	// The rank's user owns its terminal, as login does: its programs
	// open it by name (tty, ssh, editors).
	if os.Geteuid() == 0 {
		if err := slave.Chown(uid, gid); err != nil {
			return fail(fmt.Errorf("terminal %s: %w", slave.Name(), err))
		}
		if err := slave.Chmod(0o620); err != nil {
			return fail(fmt.Errorf("terminal %s: %w", slave.Name(), err))
		}
	}
	// A size until the client sends its own.
	if err := setSize(master, 24, 80); err != nil {
		return fail(fmt.Errorf("terminal size: %w", err))
	}
	_ = os.Remove(task.PtySock)
	ln, err := net.Listen("unix", task.PtySock)
	if err != nil {
		return fail(fmt.Errorf("terminal socket: %w", err))
	}
	if err := os.Chmod(task.PtySock, 0o600); err != nil {
		ln.Close()
		return fail(fmt.Errorf("terminal socket: %w", err))
	}
	held, err := os.OpenFile(slave.Name(), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		ln.Close()
		return fail(fmt.Errorf("terminal %s: %w", slave.Name(), err))
	}
	return &ptyServer{log: log, master: master, slave: held, draining: make(chan struct{}), ln: ln, out: make(chan []byte),
		read: make(chan struct{}), served: make(chan struct{}), stop: make(chan struct{})}, slave, nil
}

// newPty opens a new pseudo-terminal: its master non-blocking, so that
// its reads take deadlines and end when it is closed (an *os.File whose
// Fd was asked for blocks instead), and its slave. Neither becomes the
// supervisor's controlling terminal.
func newPty() (master, slave *os.File, err error) {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open /dev/ptmx: %w", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err == nil {
		err = unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0) // unlock the slave
	}
	if err != nil {
		unix.Close(fd)
		return nil, nil, fmt.Errorf("/dev/ptmx: %w", err)
	}
	master = os.NewFile(uintptr(fd), "/dev/ptmx") // non-blocking: pollable
	name := "/dev/pts/" + strconv.FormatUint(uint64(n), 10)
	slave, err = os.OpenFile(name, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	return master, slave, nil
}

// setSize sets the window size of the terminal of master (TIOCSWINSZ),
// without turning its descriptor blocking.
func setSize(master *os.File, rows, cols uint16) error {
	rc, err := master.SyscallConn()
	if err != nil {
		return err
	}
	var ioErr error
	if err := rc.Control(func(fd uintptr) {
		ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	}); err != nil {
		return err
	}
	return ioErr
}

// ptyAttr is the rank's process attributes on its terminal: a session
// of its own (so also a process group, whose id is its pid, as Setpgid
// gives the other ranks) with the terminal, its stdin, as controlling
// terminal, so that ^C and ^D reach it through the line discipline.
func ptyAttr(a *syscall.SysProcAttr) {
	a.Setpgid = false
	a.Setsid = true
	a.Setctty = true
	a.Ctty = 0
}

// serve starts the reader of the terminal and the acceptor of its
// connections; close stops both.
func (p *ptyServer) serve() {
	go func() { // owned by close: it ends with the master
		defer close(p.read)
		defer close(p.out)
		for {
			select {
			case <-p.draining:
				_ = p.master.SetReadDeadline(time.Now().Add(ptyQuiet))
			default:
			}
			buf := make([]byte, 32<<10)
			n, err := p.master.Read(buf)
			if n > 0 {
				select {
				case p.out <- buf[:n]:
				case <-p.stop:
					return
				}
			}
			if err != nil {
				// Silent for ptyQuiet after the rank's end, or closed.
				return
			}
		}
	}()
	go func() { // owned by close: it ends with the listener and out
		defer close(p.served)
		for {
			c, err := p.ln.Accept()
			if err != nil {
				// Closed: the task ended. Whatever is left of the output
				// is dropped so the reader is never stuck.
				for range p.out {
				}
				return
			}
			if done := p.serveConn(c); done {
				// The terminal's output ended: nothing more to serve.
				for {
					c, err := p.ln.Accept()
					if err != nil {
						return
					}
					c.Close()
				}
			}
		}
	}()
}

// serveConn relays one connection: its frames to the master, the
// master's output to it. It returns true once the output has ended (the
// connection then ends too, so the client sees the end of the terminal).
func (p *ptyServer) serveConn(c net.Conn) (ended bool) {
	p.mu.Lock()
	p.conn = c
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.conn = nil
		p.mu.Unlock()
	}()
	gone := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(gone)
		p.input(c)
	})
	defer wg.Wait()
	defer c.Close()
	write := func(b []byte) bool {
		_ = c.SetWriteDeadline(time.Now().Add(ptyWriteWait))
		n, err := c.Write(b)
		if err != nil {
			// The rest waits for the next connection (srun's, made
			// again once a restarting agent is back).
			p.held = append(p.held[:0:0], b[n:]...)
			p.log.Info("terminal connection lost", "err", err, "held", len(p.held))
			return false
		}
		return true
	}
	if len(p.held) > 0 {
		b := p.held
		p.held = nil
		if !write(b) {
			return false
		}
	}
	for {
		select {
		case b, ok := <-p.out:
			if !ok {
				return true
			}
			if !write(b) {
				return false
			}
		case <-gone:
			return false
		}
	}
}

// input applies c's frames to the master until c ends or sends a
// malformed frame.
func (p *ptyServer) input(c net.Conn) {
	buf := make([]byte, task.MaxPtyData)
	for {
		f, err := task.ReadPtyFrame(c, buf)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				p.log.Warn("terminal connection", "err", err)
			}
			return
		}
		switch f.Type {
		case task.PtyData:
			if _, err := p.master.Write(f.Data); err != nil {
				return
			}
		case task.PtyResize:
			if err := setSize(p.master, f.Rows, f.Cols); err != nil {
				p.log.Warn("terminal size", "rows", f.Rows, "cols", f.Cols, "err", err)
			}
		}
	}
}

// close ends the terminal once the rank is gone: it lets the last output
// reach a connected client (bounded by ptyDrainWait), then closes the
// master, the socket and the connection, and waits for its goroutines.
func (p *ptyServer) close() {
	timer := time.NewTimer(ptyDrainWait)
	defer timer.Stop()
	close(p.draining)
	_ = p.master.SetReadDeadline(time.Now().Add(ptyQuiet)) // wakes a read under way
	select {
	case <-p.read:
	case <-timer.C:
	}
	close(p.stop)
	p.master.Close() // ends the reader if something still writes
	<-p.read
	p.slave.Close()
	p.ln.Close()
	select {
	case <-p.served:
	case <-time.After(ptyDrainWait):
		p.mu.Lock()
		if p.conn != nil {
			p.conn.Close()
		}
		p.mu.Unlock()
		<-p.served
	}
	_ = os.Remove(task.PtySock)
}
