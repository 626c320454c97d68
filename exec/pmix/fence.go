package pmix

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Bounds of the fence exchange.
const (
	// FenceTimeout bounds one fence, from this node's contribution to
	// every node's data (Slurm's PMIx plugin waits 300 s by default):
	// ranks that start minutes apart still meet, a lost node fails it.
	FenceTimeout = 5 * time.Minute
	// maxFenceBytes bounds one node's contribution, and so a frame.
	maxFenceBytes = 256 << 20
	// helloTimeout bounds a member's greeting once connected.
	helloTimeout = 30 * time.Second
	// writeTimeout bounds one frame's write.
	writeTimeout = 30 * time.Second
	// dialRetry is the first pause between a member's tries to reach the
	// coordinator (whose supervisor may not be up yet); it doubles up to
	// dialRetryMax, within FenceTimeout.
	dialRetry    = 100 * time.Millisecond
	dialRetryMax = 2 * time.Second
	// farewell bounds a member's tries to reach the coordinator once it
	// is closed before it did: its node's ranks ended first (a rank that
	// exits before MPI_Init), and the coordinator must learn that the
	// node left rather than wait FenceTimeout for its fences.
	farewell = 10 * time.Second
)

// Frame types.
const (
	frameHello   byte = 1 // member → coordinator: seq is the version, payload node and nspace
	frameContrib byte = 2 // member → coordinator: this node's data for fence seq
	frameResult  byte = 3 // coordinator → member: every node's data of fence seq
	frameFail    byte = 4 // coordinator → member: the fences failed; payload says why
)

const protocolVersion = 1

// ErrFence marks a fence that failed: a node lost, a fence not met in
// FenceTimeout, or a broken exchange. The ranks see it as an error of
// their PMIx_Fence.
var ErrFence = errors.New("pmix fence failed")

// rounds gathers a step's fences, one at a time, as PMIx servers call
// them: fence seq (from 1) completes once every node gave its data, in
// the same order on every node. It is pure: time comes in.
type rounds struct {
	n     int
	done  uint32    // fences completed
	parts [][]byte  // the open fence's contributions by node
	have  int       // how many of parts are in
	first time.Time // when the open fence got its first contribution
}

func newRounds(n int) *rounds { return &rounds{n: n, parts: make([][]byte, n)} }

// add takes node's data for fence seq. Once every node's is in it
// returns their concatenation in node order, which PMIx servers unpack
// as one blob per node, and opens the next fence.
func (r *rounds) add(node int, seq uint32, data []byte, now time.Time) (all []byte, complete bool, err error) {
	switch {
	case node < 0 || node >= r.n:
		return nil, false, fmt.Errorf("node %d: want 0 to %d", node, r.n-1)
	case seq != r.done+1:
		return nil, false, fmt.Errorf("node %d: fence %d, the open one is %d", node, seq, r.done+1)
	case r.parts[node] != nil:
		return nil, false, fmt.Errorf("node %d: gave fence %d twice", node, seq)
	}
	if r.have == 0 {
		r.first = now
	}
	if data == nil {
		data = []byte{}
	}
	r.parts[node] = data
	r.have++
	if r.have < r.n {
		return nil, false, nil
	}
	size := 0
	for _, p := range r.parts {
		size += len(p)
	}
	all = make([]byte, 0, size)
	for i, p := range r.parts {
		all = append(all, p...)
		r.parts[i] = nil
	}
	r.have = 0
	r.done++
	return all, true, nil
}

// late names the nodes that have not given the open fence once it has
// waited bound since its first contribution; nil while none is late.
func (r *rounds) late(now time.Time, bound time.Duration) []int {
	if r.have == 0 || now.Sub(r.first) < bound {
		return nil
	}
	var out []int
	for i, p := range r.parts {
		if p == nil {
			out = append(out, i)
		}
	}
	return out
}

// Fencer exchanges one step's fence data among its nodes' servers.
type Fencer interface {
	// Fence gives this node's data to the next fence and calls done,
	// once and from another goroutine, with every node's data
	// concatenated in node order, or an error wrapping ErrFence.
	Fence(data []byte, done func(all []byte, err error))
	// Close fails what is pending and stops the fencer's goroutines.
	Close()
}

// single is the Fencer of a one-node step: its data is everyone's.
type single struct{ wg sync.WaitGroup }

func (s *single) Fence(data []byte, done func([]byte, error)) {
	s.wg.Go(func() { done(data, nil) })
}

func (s *single) Close() { s.wg.Wait() }

// frame I/O: type, seq and payload length (big endian), then the payload.
// A frame with no payload is one write: a second, empty one could fail
// (EPIPE) after the peer already read the whole frame and left, and fail
// a fence every node met (a PMI-2 fence with no puts has no payload).
func writeFrame(w io.Writer, typ byte, seq uint32, payload []byte) error {
	var h [9]byte
	h[0] = typ
	binary.BigEndian.PutUint32(h[1:5], seq)
	binary.BigEndian.PutUint32(h[5:9], uint32(len(payload)))
	if _, err := w.Write(h[:]); err != nil || len(payload) == 0 {
		return err
	}
	_, err := w.Write(payload)
	return err
}

func readFrame(r io.Reader) (typ byte, seq uint32, payload []byte, err error) {
	var h [9]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[5:9])
	if n > maxFenceBytes {
		return 0, 0, nil, fmt.Errorf("frame of %d bytes: at most %d", n, maxFenceBytes)
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, 0, nil, err
	}
	return h[0], binary.BigEndian.Uint32(h[1:5]), payload, nil
}

func helloPayload(node int, nspace string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(node)), nspace...)
}

// event is what the coordinator's loop acts on.
type event struct {
	node int
	seq  uint32
	data []byte
	conn net.Conn                    // a member joined
	err  error                       // the member's connection failed
	done func(all []byte, err error) // a local contribution's callback
}

// Coordinator is the Fencer of the step's first node: its supervisor
// listens on ln (the task directory's pmix.sock, which the agents relay
// members to) for the other nodes' supervisors, gathers every fence and
// answers each node.
type Coordinator struct {
	nspace string
	n      int
	ln     net.Listener
	log    *slog.Logger
	events chan event
	stop   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
}

// NewCoordinator starts gathering the fences of nspace's n nodes, the
// others reaching it on ln, which it closes on Close.
func NewCoordinator(nspace string, n int, ln net.Listener, log *slog.Logger) *Coordinator {
	c := &Coordinator{nspace: nspace, n: n, ln: ln, log: log, events: make(chan event), stop: make(chan struct{})}
	c.wg.Go(c.accept)
	c.wg.Go(c.loop)
	return c
}

func (c *Coordinator) Fence(data []byte, done func([]byte, error)) {
	select {
	case c.events <- event{node: 0, data: data, done: done}:
	case <-c.stop:
		c.wg.Go(func() { done(nil, fmt.Errorf("%w: the step's PMIx server is stopping", ErrFence)) })
	}
}

func (c *Coordinator) Close() {
	c.once.Do(func() {
		close(c.stop)
		c.ln.Close()
	})
	c.wg.Wait()
}

func (c *Coordinator) send(ev event) {
	select {
	case c.events <- ev:
	case <-c.stop:
		if ev.conn != nil {
			ev.conn.Close()
		}
	}
}

// accept takes members' connections until the listener closes.
func (c *Coordinator) accept() {
	for {
		conn, err := c.ln.Accept()
		if err != nil {
			return
		}
		c.wg.Go(func() { c.member(conn) })
	}
}

// member reads one member's greeting, then its contributions.
func (c *Coordinator) member(conn net.Conn) {
	_ = conn.SetReadDeadline(time.Now().Add(helloTimeout))
	r := bufio.NewReader(conn)
	typ, ver, p, err := readFrame(r)
	if err == nil && (typ != frameHello || ver != protocolVersion || len(p) < 4) {
		err = fmt.Errorf("greeting: type %d version %d, want %d %d", typ, ver, frameHello, protocolVersion)
	}
	if err == nil && string(p[4:]) != c.nspace {
		err = fmt.Errorf("greeting for namespace %q, this is %q", p[4:], c.nspace)
	}
	node := 0
	if err == nil {
		node = int(binary.BigEndian.Uint32(p[:4]))
		if node < 1 || node >= c.n {
			err = fmt.Errorf("greeting from node %d: want 1 to %d", node, c.n-1)
		}
	}
	if err != nil {
		c.log.Warn("pmix: refused a member", "err", err)
		_ = conn.SetWriteDeadline(time.Now().Add(writeTimeout))
		_ = writeFrame(conn, frameFail, 0, []byte(err.Error()))
		conn.Close()
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	c.send(event{node: node, conn: conn})
	for {
		typ, seq, p, err := readFrame(r)
		if err == nil && typ != frameContrib {
			err = fmt.Errorf("frame type %d, want %d", typ, frameContrib)
		}
		if err != nil {
			c.send(event{node: node, err: err})
			return
		}
		c.send(event{node: node, seq: seq, data: p})
	}
}

// loop owns the fences' state: members' connections, the open fence, the
// local callback, and the failure that ends them all.
func (c *Coordinator) loop() {
	conns := make([]net.Conn, c.n)
	r := newRounds(c.n)
	var local func([]byte, error)
	var broken error
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	defer func() {
		for _, conn := range conns {
			if conn != nil {
				conn.Close()
			}
		}
	}()
	fail := func(err error) {
		if broken != nil {
			return
		}
		broken = fmt.Errorf("%w: %w", ErrFence, err)
		if local != nil || r.have > 0 {
			c.log.Error("pmix: fences fail", "err", err)
		} else {
			// No fence waits: a member leaving at the end of its ranks.
			c.log.Info("pmix: no more fences", "why", err)
		}
		if local != nil {
			cb := local
			local = nil
			c.wg.Go(func() { cb(nil, broken) })
		}
		for i, conn := range conns {
			if conn != nil {
				_ = conn.SetWriteDeadline(time.Now().Add(writeTimeout))
				_ = writeFrame(conn, frameFail, 0, []byte(broken.Error()))
				conn.Close()
				conns[i] = nil
			}
		}
	}
	for {
		var ev event
		select {
		case <-c.stop:
			fail(errors.New("the step's PMIx server stopped"))
			return
		case now := <-tick.C:
			if late := r.late(now, FenceTimeout); late != nil {
				fail(fmt.Errorf("fence %d: nodes %v gave nothing in %s", r.done+1, late, FenceTimeout))
			}
			continue
		case ev = <-c.events:
		}
		switch {
		case ev.conn != nil:
			if broken != nil || conns[ev.node] != nil {
				if broken == nil {
					c.log.Warn("pmix: a node joined twice", "node", ev.node)
				}
				_ = writeFrame(ev.conn, frameFail, 0, []byte("refused: node joined already, or the fences failed"))
				ev.conn.Close()
				continue
			}
			conns[ev.node] = ev.conn
			continue
		case ev.err != nil:
			if conns[ev.node] != nil {
				fail(fmt.Errorf("node %d left: %w", ev.node, ev.err))
			}
			continue
		}
		if broken != nil {
			if ev.done != nil {
				err := broken
				c.wg.Go(func() { ev.done(nil, err) })
			}
			continue
		}
		seq := ev.seq
		if ev.done != nil {
			seq = r.done + 1
			local = ev.done
		}
		all, complete, err := r.add(ev.node, seq, ev.data, time.Now())
		if err != nil {
			fail(err)
			continue
		}
		if !complete {
			continue
		}
		for i, conn := range conns {
			if conn == nil {
				continue
			}
			_ = conn.SetWriteDeadline(time.Now().Add(writeTimeout))
			if err := writeFrame(conn, frameResult, seq, all); err != nil {
				fail(fmt.Errorf("node %d: send fence %d: %w", i, seq, err))
				break
			}
		}
		if broken == nil && local != nil {
			cb := local
			local = nil
			c.wg.Go(func() { cb(all, nil) })
		}
	}
}

// Dial reaches the coordinator's pmix.sock (through the agents).
type Dial func(ctx context.Context) (io.ReadWriteCloser, error)

// Member is the Fencer of the step's other nodes: it reaches the
// coordinator with dial as it starts, and for each fence sends this
// node's data and waits for every node's. Its connection is its node's
// presence in the step: once it closes (the node's ranks are gone, or
// the node is), the coordinator fails the fences left, and a member
// whose coordinator is gone fails its own.
type Member struct {
	nspace string
	node   int
	dial   Dial
	log    *slog.Logger
	reqs   chan memberReq
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type memberReq struct {
	data []byte
	done func([]byte, error)
}

// frame is one frame a member read, or why it could read no more.
type frame struct {
	typ  byte
	seq  uint32
	data []byte
	err  error
}

// NewMember starts the fencer of node (1 and up) of nspace.
func NewMember(nspace string, node int, dial Dial, log *slog.Logger) *Member {
	ctx, cancel := context.WithCancel(context.Background())
	m := &Member{nspace: nspace, node: node, dial: dial, log: log, reqs: make(chan memberReq), ctx: ctx, cancel: cancel}
	m.wg.Go(m.run)
	return m
}

// Fence never blocks its caller, the PMIx library's thread, while the
// member connects.
func (m *Member) Fence(data []byte, done func([]byte, error)) {
	m.wg.Go(func() {
		select {
		case m.reqs <- memberReq{data, done}:
		case <-m.ctx.Done():
			done(nil, fmt.Errorf("%w: the step's PMIx server is stopping", ErrFence))
		}
	})
}

func (m *Member) Close() {
	m.cancel()
	m.wg.Wait()
}

// run connects, then serves the fences one by one, as the local server
// calls them.
func (m *Member) run() {
	var broken error
	failed := func(err error) {
		if broken == nil {
			broken = fmt.Errorf("%w: %w", ErrFence, err)
		}
	}
	// Closed before it is connected, the member still connects (for
	// farewell at most) and then leaves at once, which fails the
	// coordinator's fences.
	cctx, cancel := context.WithTimeout(context.Background(), FenceTimeout)
	stopFarewell := context.AfterFunc(m.ctx, func() { time.AfterFunc(farewell, cancel) })
	conn, err := m.connect(cctx)
	stopFarewell()
	cancel()
	frames := make(chan frame)
	if err != nil {
		failed(err)
		if m.ctx.Err() == nil {
			m.log.Error("pmix: fences fail", "err", err)
		}
	} else {
		defer conn.Close()
		stop := context.AfterFunc(m.ctx, func() { conn.Close() })
		defer stop()
		m.wg.Go(func() { m.read(conn, frames) })
	}
	var seq uint32
	for {
		var req memberReq
		select {
		case <-m.ctx.Done():
			return
		case f := <-frames:
			// A frame, or the end, with no fence open: the coordinator
			// failed the fences, or its node is gone.
			failed(frameError(f, 0))
			frames = nil
			continue
		case req = <-m.reqs:
		}
		if broken != nil {
			req.done(nil, broken)
			continue
		}
		seq++
		all, err := m.fence(conn, seq, req.data, frames)
		if err != nil {
			failed(err)
			if m.ctx.Err() == nil {
				m.log.Error("pmix: fences fail", "err", err)
			}
			req.done(nil, broken)
			continue
		}
		req.done(all, nil)
	}
}

// fence sends this node's data for fence seq and waits, FenceTimeout at
// most, for every node's.
func (m *Member) fence(conn io.ReadWriteCloser, seq uint32, data []byte, frames <-chan frame) ([]byte, error) {
	timer := time.AfterFunc(FenceTimeout, func() { conn.Close() })
	defer timer.Stop()
	if err := writeFrame(conn, frameContrib, seq, data); err != nil {
		return nil, fmt.Errorf("send fence %d: %w", seq, err)
	}
	select {
	case <-m.ctx.Done():
		return nil, fmt.Errorf("fence %d: the step's PMIx server is stopping", seq)
	case f := <-frames:
		if !timer.Stop() {
			return nil, fmt.Errorf("fence %d: no answer in %s", seq, FenceTimeout)
		}
		if err := frameError(f, seq); err != nil {
			return nil, err
		}
		return f.data, nil
	}
}

// frameError is why frame f does not answer fence seq (0: none open).
func frameError(f frame, seq uint32) error {
	switch {
	case f.err != nil:
		return fmt.Errorf("fence %d: the step's first node: %w", seq, f.err)
	case f.typ == frameFail:
		return fmt.Errorf("fence %d: the step's first node says: %s", seq, f.data)
	case f.typ != frameResult || f.seq != seq:
		return fmt.Errorf("fence %d: got frame type %d for fence %d", seq, f.typ, f.seq)
	}
	return nil
}

// read passes the coordinator's frames to run, up to the first error.
func (m *Member) read(conn io.Reader, frames chan<- frame) {
	r := bufio.NewReader(conn)
	for {
		typ, seq, p, err := readFrame(r)
		select {
		case frames <- frame{typ, seq, p, err}:
		case <-m.ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// connect dials the coordinator until it answers or ctx ends, and greets
// it.
func (m *Member) connect(ctx context.Context) (io.ReadWriteCloser, error) {
	pause := dialRetry
	for {
		c, err := m.dial(ctx)
		if err == nil {
			if err := writeFrame(c, frameHello, protocolVersion, helloPayload(m.node, m.nspace)); err != nil {
				c.Close()
				return nil, fmt.Errorf("greet the coordinator: %w", err)
			}
			return c, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("reach the step's first node: %w (last: %w)", ctx.Err(), err)
		case <-time.After(pause):
		}
		pause = min(2*pause, dialRetryMax)
	}
}
