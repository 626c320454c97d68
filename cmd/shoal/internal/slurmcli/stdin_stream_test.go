package slurmcli

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/exec/task"
)

// fakeStdinNode is a node's supervisor of srun's stdin as exec/stepd
// serves it: resumable connections (or, raw, one that ends the input),
// each cut after breakAfter bytes read (mid-frame too) the first cuts
// times, and dials refused with unreachable first.
type fakeStdinNode struct {
	raw         bool
	breakAfter  int
	cuts        int
	unreachable int

	mu    sync.Mutex
	got   []byte
	ended bool
	wg    sync.WaitGroup
}

func (f *fakeStdinNode) dial(ctx context.Context, node string, resume bool) (io.ReadWriteCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unreachable > 0 {
		f.unreachable--
		return nil, &api.StatusError{Code: http.StatusBadGateway, Message: "node restarting"}
	}
	if resume && f.raw {
		return nil, &api.StatusError{Code: http.StatusBadRequest, Message: `upgrade "shoal-stdin/2": want "shoal-stdin/1"`}
	}
	client, server := net.Pipe()
	budget := -1
	if f.cuts > 0 {
		f.cuts--
		budget = f.breakAfter
	}
	f.wg.Go(func() { f.serve(server, resume, budget) })
	return client, nil
}

// cutReader closes c once budget bytes were read from it.
type cutReader struct {
	c      net.Conn
	budget int
}

func (r *cutReader) Read(p []byte) (int, error) {
	if r.budget == 0 {
		r.c.Close()
		return 0, io.EOF
	}
	if r.budget > 0 && len(p) > r.budget {
		p = p[:r.budget]
	}
	n, err := r.c.Read(p)
	if r.budget > 0 {
		r.budget -= n
	}
	return n, err
}

func (f *fakeStdinNode) serve(c net.Conn, resume bool, budget int) {
	defer c.Close()
	in := &cutReader{c: c, budget: budget}
	if !resume {
		b, _ := io.ReadAll(in)
		f.mu.Lock()
		f.got, f.ended = append(f.got, b...), true
		f.mu.Unlock()
		return
	}
	counts := make(chan uint64, 1<<16)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(counts)
	wg.Go(func() {
		for n := range counts {
			if _, err := c.Write(task.AppendStdinCount(nil, n)); err != nil {
				return
			}
		}
	})
	f.mu.Lock()
	if f.ended {
		counts <- task.StdinDone
	} else {
		counts <- uint64(len(f.got))
	}
	f.mu.Unlock()
	buf := make([]byte, task.MaxStdinData)
	for {
		fr, err := task.ReadStdinFrame(in, buf)
		if err != nil {
			return
		}
		f.mu.Lock()
		if fr.Type == task.StdinEnd {
			f.ended = true
			f.mu.Unlock()
			counts <- task.StdinDone
			return
		}
		f.got = append(f.got, fr.Data...)
		counts <- uint64(len(f.got))
		f.mu.Unlock()
	}
}

// srun's stdin reaches a resumable node whose connection breaks again
// and again (mid-frame too) and whose agent is unreachable at first, and
// a raw node of an earlier agent, whole and once each, through a window
// smaller than the stream.
func TestStdinStreamResumes(t *testing.T) {
	data := make([]byte, 3<<20+12345)
	rand.Read(data)
	nodes := map[string]*fakeStdinNode{
		"n1": {breakAfter: 200<<10 + 7, cuts: 6, unreachable: 3},
		"n2": {raw: true},
	}
	s := newStdinStream([]string{"n1", "n2"}, 256<<10)
	dial := func(ctx context.Context, node string, resume bool) (io.ReadWriteCloser, error) {
		return nodes[node].dial(ctx, node, resume)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // bounds the test
	defer cancel()
	var stderr bytes.Buffer
	s.run(ctx, bytes.NewReader(data), dial, &stderr)
	if ctx.Err() != nil {
		t.Fatal("the relay did not end")
	}
	for name, f := range nodes {
		f.wg.Wait()
		if !f.ended || !bytes.Equal(f.got, data) {
			t.Errorf("%s: got %d bytes (ended %v); want the %d sent, in order, once", name, len(f.got), f.ended, len(data))
		}
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr: %s", stderr.String())
	}
	if s.buf != nil {
		t.Errorf("%d bytes still held after every node had them", len(s.buf))
	}
}

// The window bounds what srun holds: with a node that never counts
// anything delivered, srun reads no more than the window (and a read).
func TestStdinStreamWindow(t *testing.T) {
	const window = 128 << 10
	s := newStdinStream([]string{"n1"}, window)
	served := make(chan struct{})
	dial := func(ctx context.Context, node string, resume bool) (io.ReadWriteCloser, error) {
		client, server := net.Pipe()
		go func() {
			defer close(served)
			defer server.Close()
			_, _ = server.Write(task.AppendStdinCount(nil, 0))
			_, _ = io.Copy(io.Discard, server) // reads, never counts
		}()
		return client, nil
	}
	var read countingReader
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.run(ctx, &read, dial, io.Discard)
	}()
	// Bounded: the reader is stopped by the window, or the test fails
	// on the count below.
	deadline := time.Now().Add(30 * time.Second)
	for read.total() < window && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // a reader past the window would go on
	if n := read.total(); n < window || n > window+64<<10 {
		t.Errorf("srun read %d bytes of its stdin; want the window, %d, and at most one read more", n, window)
	}
	cancel()
	<-done
	<-served
}

// countingReader reads zeros forever, counting them.
type countingReader struct {
	mu sync.Mutex
	n  int
}

func (r *countingReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n += len(p)
	return len(p), nil
}

func (r *countingReader) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}
