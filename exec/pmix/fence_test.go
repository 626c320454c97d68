package pmix

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestRounds checks the gathering of one fence at a time: each node's
// data once, concatenated in node order (PMIx unpacks it as one blob per
// node), and the next fence opened only after it.
func TestRounds(t *testing.T) {
	t0 := time.Unix(1000, 0)
	type add struct {
		node int
		seq  uint32
		data string
	}
	for _, tc := range []struct {
		name    string
		n       int
		adds    []add
		want    []string // the fences completed, in order
		wantErr string   // the last add's error
	}{
		{"one node", 1, []add{{0, 1, "a"}, {0, 2, "b"}}, []string{"a", "b"}, ""},
		{"node order, not arrival order", 3, []add{{2, 1, "c"}, {0, 1, "a"}, {1, 1, "b"}}, []string{"abc"}, ""},
		{"empty contributions", 2, []add{{0, 1, ""}, {1, 1, "x"}}, []string{"x"}, ""},
		{"two fences", 2, []add{{1, 1, "b"}, {0, 1, "a"}, {0, 2, "c"}, {1, 2, "d"}}, []string{"ab", "cd"}, ""},
		{"twice from a node", 2, []add{{0, 1, "a"}, {0, 1, "a"}}, nil, "gave fence 1 twice"},
		{"ahead of the open fence", 2, []add{{0, 1, "a"}, {1, 2, "b"}}, nil, "fence 2, the open one is 1"},
		{"a node out of range", 2, []add{{2, 1, "a"}}, nil, "node 2: want 0 to 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRounds(tc.n)
			var got []string
			var err error
			for _, a := range tc.adds {
				var all []byte
				var done bool
				all, done, err = r.add(a.node, a.seq, []byte(a.data), t0)
				if done {
					got = append(got, string(all))
				}
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("add: %v; want %q", err, tc.wantErr)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("fences = %q; want %q", got, tc.want)
			}
		})
	}
}

// TestRoundsLate: a fence some nodes never join is late once it waited
// the bound since its first contribution, naming them.
func TestRoundsLate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	r := newRounds(3)
	if late := r.late(t0.Add(time.Hour), time.Minute); late != nil {
		t.Errorf("late with no fence open = %v; want none", late)
	}
	_, _, _ = r.add(1, 1, []byte("x"), t0)
	if late := r.late(t0.Add(time.Minute-1), time.Minute); late != nil {
		t.Errorf("late before the bound = %v; want none", late)
	}
	if late := r.late(t0.Add(time.Minute), time.Minute); len(late) != 2 || late[0] != 0 || late[1] != 2 {
		t.Errorf("late at the bound = %v; want [0 2]", late)
	}
}

// pipeListener hands the coordinator the server ends of net.Pipes its
// members dial: the exchange without sockets.
type pipeListener struct {
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}

	mu      sync.Mutex
	dialled []net.Conn // the members' ends, one a connection made
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.UnixAddr{Name: "pipe", Net: "unix"} }

// dial connects a member; each connection it made is kept in dialled.
func (l *pipeListener) dial() Dial {
	return func(ctx context.Context) (io.ReadWriteCloser, error) {
		a, b := net.Pipe()
		select {
		case l.conns <- b:
		case <-l.done:
			return nil, net.ErrClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		l.mu.Lock()
		l.dialled = append(l.dialled, a)
		l.mu.Unlock()
		return a, nil
	}
}

// connected is how many connections the members made so far.
func (l *pipeListener) connected() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.dialled)
}

// threeNodes starts a coordinator (node 0) and members for nodes 1 and 2
// of namespace "ns" on one pipeListener, all closed when the test ends.
func threeNodes(t *testing.T) (*pipeListener, *Coordinator, *Member, *Member) {
	t.Helper()
	ln := newPipeListener()
	c := NewCoordinator("ns", 3, ln, quiet)
	t.Cleanup(c.Close)
	m1 := NewMember("ns", 1, ln.dial(), quiet)
	t.Cleanup(m1.Close)
	m2 := NewMember("ns", 2, ln.dial(), quiet)
	t.Cleanup(m2.Close)
	return ln, c, m1, m2
}

type fenceResult struct {
	all []byte
	err error
}

func fence(f Fencer, data string) <-chan fenceResult {
	ch := make(chan fenceResult, 1)
	f.Fence([]byte(data), func(all []byte, err error) { ch <- fenceResult{all, err} })
	return ch
}

var quiet = slog.New(slog.DiscardHandler)

// TestCoordinatorMembers: three nodes' servers fence twice through the
// coordinator; every node gets every node's data, in node order.
func TestCoordinatorMembers(t *testing.T) {
	_, c, m1, m2 := threeNodes(t)
	for _, round := range [][3]string{{"a", "bb", "ccc"}, {"", "x", ""}} {
		r2 := fence(m2, round[2])
		r0 := fence(c, round[0])
		r1 := fence(m1, round[1])
		want := round[0] + round[1] + round[2]
		for i, ch := range []<-chan fenceResult{r0, r1, r2} {
			r := <-ch
			if r.err != nil || !bytes.Equal(r.all, []byte(want)) {
				t.Errorf("node %d: fence = %q, %v; want %q", i, r.all, r.err, want)
			}
		}
	}
}

// TestFenceNodeLost: a node's supervisor gone mid-step fails the fence
// everywhere, cleanly: the waiting servers get ErrFence (their ranks an
// error), and later fences fail at once instead of hanging.
func TestFenceNodeLost(t *testing.T) {
	ln, c, m1, m2 := threeNodes(t)
	r1 := fence(m1, "b")
	// Node 2's supervisor dies before its ranks fence, once both members
	// are connected (they connect as they start).
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		n := ln.connected()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d members connected in a minute; want 2", n)
		}
	}
	m2.Close()
	if r := <-fence(m2, "c"); !errors.Is(r.err, ErrFence) {
		t.Errorf("the lost node's own fence = %q, %v; want ErrFence", r.all, r.err)
	}
	r0 := fence(c, "a")
	for i, ch := range []<-chan fenceResult{r0, r1} {
		if r := <-ch; !errors.Is(r.err, ErrFence) {
			t.Errorf("node %d: fence = %q, %v; want ErrFence", i, r.all, r.err)
		}
	}
	if r := <-fence(c, "again"); !errors.Is(r.err, ErrFence) {
		t.Errorf("a fence after the loss = %v; want ErrFence", r.err)
	}
}

// TestCoordinatorRefusesStrangers: a greeting for another namespace or
// node out of range is refused with a failure frame.
func TestCoordinatorRefusesStrangers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		node   int
		nspace string
		want   string
	}{
		{"another namespace", 1, "other", `namespace "other"`},
		{"node 0 is the coordinator's", 0, "ns", "want 1 to 2"},
		{"node out of range", 3, "ns", "want 1 to 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln := newPipeListener()
			c := NewCoordinator("ns", 3, ln, quiet)
			defer c.Close()
			a, b := net.Pipe()
			defer a.Close()
			ln.conns <- b
			if err := writeFrame(a, frameHello, protocolVersion, helloPayload(tc.node, tc.nspace)); err != nil {
				t.Fatal(err)
			}
			typ, _, p, err := readFrame(a)
			if err != nil || typ != frameFail || !strings.Contains(string(p), tc.want) {
				t.Errorf("answer: type %d %q %v; want a failure naming %q", typ, p, err, tc.want)
			}
		})
	}
}

// TestSingle: a one-node step's fence is its own data.
func TestSingle(t *testing.T) {
	s := &single{}
	defer s.Close()
	if r := <-fence(s, "abc"); r.err != nil || string(r.all) != "abc" {
		t.Errorf("fence = %q, %v; want abc", r.all, r.err)
	}
}

// FuzzReadFrame: frames from a member or the coordinator never panic,
// never allocate past the bound, and read back what writeFrame wrote.
func FuzzReadFrame(f *testing.F) {
	var b bytes.Buffer
	_ = writeFrame(&b, frameContrib, 7, []byte("data"))
	f.Add(b.Bytes())
	b.Reset()
	_ = writeFrame(&b, frameHello, protocolVersion, helloPayload(1, "shoal.1.1.0"))
	f.Add(b.Bytes())
	f.Add([]byte{2, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		typ, seq, p, err := readFrame(bytes.NewReader(in))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := writeFrame(&out, typ, seq, p); err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(in, out.Bytes()) {
			t.Errorf("frame %x read back as %x", in, out.Bytes())
		}
	})
}

// TestMemberClosedFirst: a node whose ranks all ended before its member
// reached the coordinator (a rank that exits before MPI_Init, the
// other's killed) still reaches it as it closes, and leaves: the
// coordinator's fence fails at once rather than after FenceTimeout.
func TestMemberClosedFirst(t *testing.T) {
	ln := newPipeListener()
	c := NewCoordinator("ns", 2, ln, quiet)
	defer c.Close()
	dial := ln.dial()
	var closing atomic.Pointer[Member]
	m := NewMember("ns", 1, func(ctx context.Context) (io.ReadWriteCloser, error) {
		// The first node's supervisor is reachable only once this
		// member is closed.
		if m := closing.Load(); m == nil || m.ctx.Err() == nil {
			return nil, errors.New("not up yet")
		}
		return dial(ctx)
	}, quiet)
	closing.Store(m)
	m.Close()
	select {
	case r := <-fence(c, "a"):
		if !errors.Is(r.err, ErrFence) || !strings.Contains(r.err.Error(), "node 1 left") {
			t.Errorf("fence after node 1 left = %q, %v; want ErrFence naming node 1", r.all, r.err)
		}
	case <-time.After(time.Minute): // a bound on a hang (FenceTimeout), not a measure
		t.Fatal("the coordinator's fence still waits for a node that left")
	}
}

// TestFenceCoordinatorLost: the first node's supervisor gone, a member's
// next fence fails at once rather than waiting FenceTimeout.
func TestFenceCoordinatorLost(t *testing.T) {
	ln := newPipeListener()
	c := NewCoordinator("ns", 2, ln, quiet)
	m := NewMember("ns", 1, ln.dial(), quiet)
	defer m.Close()
	r1, r0 := fence(m, "b"), fence(c, "a")
	for i, ch := range []<-chan fenceResult{r0, r1} {
		if r := <-ch; r.err != nil || string(r.all) != "ab" {
			t.Fatalf("node %d: first fence = %q, %v; want ab", i, r.all, r.err)
		}
	}
	c.Close()
	if r := <-fence(m, "c"); !errors.Is(r.err, ErrFence) {
		t.Errorf("fence after the coordinator left = %q, %v; want ErrFence", r.all, r.err)
	}
}

// TestFenceTimeout: a fence a node never joins fails after FenceTimeout
// on every node that joined it, on fake time; not before.
func TestFenceTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c, m1, _ := threeNodes(t)
		r0, r1 := fence(c, "a"), fence(m1, "b") // node 2's ranks never fence
		time.Sleep(FenceTimeout - time.Second)
		synctest.Wait()
		select {
		case r := <-r0:
			t.Fatalf("fence answered before its bound: %q, %v", r.all, r.err)
		default:
		}
		time.Sleep(2 * time.Second)
		if r := <-r0; !errors.Is(r.err, ErrFence) || !strings.Contains(r.err.Error(), "nodes [2] gave nothing") {
			t.Errorf("node 0: fence = %q, %v; want ErrFence naming node 2", r.all, r.err)
		}
		// The member's own bound, or the coordinator's failure: either.
		if r := <-r1; !errors.Is(r.err, ErrFence) {
			t.Errorf("node 1: fence = %q, %v; want ErrFence", r.all, r.err)
		}
	})
}

// writeCounter counts writes and fails every one after the first.
type writeCounter struct{ n int }

func (w *writeCounter) Write(p []byte) (int, error) {
	w.n++
	if w.n > 1 {
		return 0, errors.New("the peer left")
	}
	return len(p), nil
}

// TestWriteFrameEmpty: a frame with no payload is written in one write,
// so a peer that read it and left cannot fail it after the fact.
func TestWriteFrameEmpty(t *testing.T) {
	var w writeCounter
	if err := writeFrame(&w, frameResult, 4, nil); err != nil || w.n != 1 {
		t.Errorf("writeFrame with no payload: %d writes, %v; want one, nil", w.n, err)
	}
}
