package pmi2

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/exec/pmix"
)

// fakeFencer is the step's other nodes: each fence gets this node's
// data, answers it concatenated with others (as the coordinator puts
// nodes in order), or fails with err.
type fakeFencer struct {
	mu     sync.Mutex
	got    [][]byte
	before []byte // the nodes before this one
	after  []byte // the nodes after
	err    error
	wg     sync.WaitGroup
}

func (f *fakeFencer) Fence(data []byte, done func([]byte, error)) {
	f.mu.Lock()
	f.got = append(f.got, data)
	all := append(append(append([]byte{}, f.before...), data...), f.after...)
	err := f.err
	f.mu.Unlock()
	f.wg.Go(func() {
		if err != nil {
			done(nil, fmt.Errorf("%w: %w", pmix.ErrFence, err))
			return
		}
		done(all, nil)
	})
}

func (f *fakeFencer) Close() { f.wg.Wait() }

// client is one rank's end of its socket pair, as MPICH's simple PMI
// uses it.
type client struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dialRank(t *testing.T, s *Server, local int) *client {
	t.Helper()
	c, err := net.FileConn(s.File(local))
	if err != nil {
		t.Fatal(err)
	}
	s.Started(local)
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, r: bufio.NewReader(c)}
}

func (c *client) deadline() { _ = c.c.SetDeadline(time.Now().Add(time.Minute)) } // a bound on a hang

// exchange is one question a rank's client asks and the answer it wants.
type exchange struct {
	c         *client
	ask, want string
}

// exchanges asks each question in order, with ask (ask1 or ask2).
func exchanges(t *testing.T, ask func(c *client, q string) string, xs []exchange) {
	t.Helper()
	for _, x := range xs {
		if got := ask(x.c, x.ask); got != x.want {
			t.Errorf("%s: %q; want %q", x.ask, got, x.want)
		}
	}
}

// ask1 sends a PMI-1 line and reads the answer line.
func (c *client) ask1(line string) string {
	c.t.Helper()
	c.deadline()
	if _, err := io.WriteString(c.c, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
	resp, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("%s: %v", line, err)
	}
	return strings.TrimSuffix(resp, "\n")
}

// ask2 sends a PMI-2 command and reads the answer's body.
func (c *client) ask2(body string) string {
	c.t.Helper()
	c.send2(body)
	return c.read2()
}

func (c *client) send2(body string) {
	c.t.Helper()
	c.deadline()
	if _, err := fmt.Fprintf(c.c, "%-6d%s", len(body), body); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) read2() string {
	c.t.Helper()
	c.deadline()
	b, err := readFrame(c.r)
	if err != nil {
		c.t.Fatal(err)
	}
	return string(b)
}

// closed says whether the server ended the connection.
func (c *client) closed() bool {
	c.deadline()
	_, err := c.r.ReadByte()
	return errors.Is(err, io.EOF)
}

type failures struct {
	mu   sync.Mutex
	errs []error
}

func (f *failures) add(err error) { f.mu.Lock(); f.errs = append(f.errs, err); f.mu.Unlock() }
func (f *failures) n() int        { f.mu.Lock(); defer f.mu.Unlock(); return len(f.errs) }

func startTest(t *testing.T, job Job, f pmix.Fencer) (*Server, *failures) {
	t.Helper()
	fails := &failures{}
	s, err := Start(Config{Job: job, Fencer: f, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), OnFail: fails.add})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, fails
}

// TestPMI1: every PMI-1 command MPICH's simple client sends, answered
// as Slurm's mpi/pmi2 plugin answers it; node 1 (ranks 2, 3) of a step
// whose node 0 runs ranks 0, 1; the fence brings node 0's puts.
func TestPMI1(t *testing.T) {
	f := &fakeFencer{before: encodeKVS(map[string]string{"bc-0": "addr0", "shared": "node0"})}
	s, fails := startTest(t, testJob(t, 1, []int{0, 1}, []int{2, 3}), f)
	if got, want := s.Env(1, 5), []string{"PMI_FD=5", "PMI_RANK=3", "PMI_SIZE=4", "PMI_JOBID=7.0", "PMI_SPAWNED=0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Env = %q; want %q", got, want)
	}
	a, b := dialRank(t, s, 0), dialRank(t, s, 1)
	exchanges(t, (*client).ask1, []exchange{
		{a, "cmd=init pmi_version=1 pmi_subversion=1", "cmd=response_to_init rc=0 pmi_version=1 pmi_subversion=1"},
		{b, "cmd=init pmi_version=1 pmi_subversion=1", "cmd=response_to_init rc=0 pmi_version=1 pmi_subversion=1"},
		{a, "cmd=get_maxes", "cmd=maxes rc=0 kvsname_max=256 keylen_max=64 vallen_max=1024"},
		{a, "cmd=get_universe_size", "cmd=universe_size rc=0 size=4"},
		{a, "cmd=get_appnum", "cmd=appnum rc=0 appnum=-1"},
		{a, "cmd=get_my_kvsname", "cmd=my_kvsname rc=0 kvsname=7.0"},
		{a, "cmd=get kvsname=7.0 key=PMI_process_mapping", "cmd=get_result rc=0 value=(vector,(0,2,2))"},
		{a, "cmd=put kvsname=7.0 key=bc-2 value=addr2", "cmd=put_result rc=0"},
		{b, "cmd=put kvsname=7.0 key=bc-3 value=addr3", "cmd=put_result rc=0"},
		{b, "cmd=put kvsname=7.0 key=shared value=node1", "cmd=put_result rc=0"},
		// Not before the fence.
		{a, "cmd=get kvsname=7.0 key=bc-3", "cmd=get_result rc=-1 msg=key_bc-3_not_found"},
		{a, "cmd=put kvsname=7.0 key=" + strings.Repeat("k", maxKey+1) + " value=v", "cmd=put_result rc=-1 msg=put_failed"},
		{a, "cmd=publish_name service=s port=p", "cmd=publish_result rc=-1 info=fail"},
		{a, "cmd=lookup_name service=s", "cmd=lookup_result rc=-1 info=fail"},
		{a, "cmd=unpublish_name service=s", "cmd=unpublish_result rc=-1 info=fail"},
	})
	// The fence: a's barrier_in waits for b's.
	out := make(chan string, 1)
	go func() { out <- a.ask1("cmd=barrier_in") }()
	if got := b.ask1("cmd=barrier_in"); got != "cmd=barrier_out rc=0" {
		t.Errorf("barrier_in: %q", got)
	}
	if got := <-out; got != "cmd=barrier_out rc=0" {
		t.Errorf("barrier_in: %q", got)
	}
	if want := encodeKVS(map[string]string{"bc-2": "addr2", "bc-3": "addr3", "shared": "node1"}); len(f.got) != 1 || string(f.got[0]) != string(want) {
		t.Errorf("fenced %q; want %q", f.got, want)
	}
	exchanges(t, (*client).ask1, []exchange{
		{a, "cmd=get kvsname=7.0 key=bc-0", "cmd=get_result rc=0 value=addr0"},
		{a, "cmd=get kvsname=7.0 key=bc-3", "cmd=get_result rc=0 value=addr3"},
		// The later node's put wins.
		{a, "cmd=get kvsname=7.0 key=shared", "cmd=get_result rc=0 value=node1"},
		{a, "cmd=finalize", "cmd=finalize_ack rc=0"},
	})
	// A command no one serves ends the connection (the client would
	// wait for an answer forever); with no fence open, nothing fails
	// yet.
	if b.c.Write([]byte("cmd=getbyidx kvsname=7.0 idx=0\n")); !b.closed() {
		t.Error("getbyidx: connection still open")
	}
	if fails.n() != 0 {
		t.Errorf("failures %v; want none", fails.errs)
	}
}

// TestPMI2: every PMI-2 command, framed, answered as Slurm's mpi/pmi2
// plugin answers it; one node of ranks 0 and 1, the other node's puts
// after it.
func TestPMI2(t *testing.T) {
	f := &fakeFencer{after: encodeKVS(map[string]string{"bc-2": "x;y"})}
	s, fails := startTest(t, testJob(t, 0, []int{0, 1}, []int{2}), f)
	a, b := dialRank(t, s, 0), dialRank(t, s, 1)
	exchanges(t, (*client).ask1, []exchange{
		{a, "cmd=init pmi_version=2 pmi_subversion=0", "cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0"},
		{b, "cmd=init pmi_version=2 pmi_subversion=0", "cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0"},
	})
	exchanges(t, (*client).ask2, []exchange{
		{a, "cmd=fullinit;pmijobid=7.0;pmirank=0;threaded=FALSE;", "cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank=0;size=3;appnum=-1;debugged=FALSE;pmiverbose=FALSE;"},
		{b, "cmd=fullinit;pmijobid=7.0;pmirank=1;threaded=TRUE;", "cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank=1;size=3;appnum=-1;debugged=FALSE;pmiverbose=FALSE;"},
		{a, "cmd=job-getid;", "cmd=job-getid-response;rc=0;jobid=7.0;"},
		{a, "cmd=info-getjobattr;key=PMI_process_mapping;", "cmd=info-getjobattr-response;rc=0;found=TRUE;value=(vector,(0,1,2),(1,1,1));"},
		{a, "cmd=info-getjobattr;key=universeSize;", "cmd=info-getjobattr-response;rc=0;found=TRUE;value=3;"},
		{a, "cmd=info-getjobattr;key=nope;", "cmd=info-getjobattr-response;rc=0;found=FALSE;"},
		{a, "cmd=info-putnodeattr;key=shm;value=seg;;1;", "cmd=info-putnodeattr-response;rc=0;"},
		{b, "cmd=info-getnodeattr;key=shm;wait=FALSE;", "cmd=info-getnodeattr-response;rc=0;found=TRUE;value=seg;;1;"},
		{b, "cmd=info-getnodeattr;key=other;wait=FALSE;", "cmd=info-getnodeattr-response;rc=0;found=FALSE;"},
		{a, "cmd=kvs-put;key=bc-0;value=addr0;", "cmd=kvs-put-response;rc=0;"},
		{b, "cmd=kvs-put;key=bc-1;value=addr1;", "cmd=kvs-put-response;rc=0;"},
		{a, "cmd=kvs-get;jobid=7.0;srcid=-1;key=bc-1;", "cmd=kvs-get-response;rc=0;found=FALSE;"},
		{a, "cmd=name-publish;name=n;port=p;", "cmd=name-publish-response;rc=-1;errmsg=name-publish is not served;"},
		{a, "cmd=spawn;ncmds=1;", "cmd=spawn-response;rc=-1;errmsg=spawn is not served;"},
		{a, "cmd=fullinit;pmijobid=7.0;pmirank=5;threaded=FALSE;", "cmd=fullinit-response;rc=-1;errmsg=fullinit: pmirank 5, this is rank 0;"},
	})
	// info-getnodeattr with wait: answered once another rank puts it.
	b.send2("cmd=info-getnodeattr;key=later;wait=TRUE;")
	if got := a.ask2("cmd=info-putnodeattr;key=later;value=v;"); got != "cmd=info-putnodeattr-response;rc=0;" {
		t.Errorf("putnodeattr: %q", got)
	}
	if got := b.read2(); got != "cmd=info-getnodeattr-response;rc=0;found=TRUE;value=v;" {
		t.Errorf("getnodeattr wait: %q", got)
	}
	a.send2("cmd=kvs-fence;")
	if got := b.ask2("cmd=kvs-fence;"); got != "cmd=kvs-fence-response;rc=0;" {
		t.Errorf("kvs-fence: %q", got)
	}
	if got := a.read2(); got != "cmd=kvs-fence-response;rc=0;" {
		t.Errorf("kvs-fence: %q", got)
	}
	exchanges(t, (*client).ask2, []exchange{
		{a, "cmd=kvs-get;jobid=7.0;srcid=-1;key=bc-1;", "cmd=kvs-get-response;rc=0;found=TRUE;value=addr1;"},
		{a, "cmd=kvs-get;jobid=7.0;srcid=-1;key=bc-2;", "cmd=kvs-get-response;rc=0;found=TRUE;value=x;;y;"},
		{a, "cmd=finalize;", "cmd=finalize-response;rc=0;"},
	})
	if fails.n() != 0 {
		t.Errorf("failures %v", fails.errs)
	}
	b.send2("cmd=abort;isworld=TRUE;msg=bye;")
	if !b.closed() || fails.n() != 1 {
		t.Errorf("abort: failures %v; want the step failed and the connection closed", fails.errs)
	}
}

// TestAbortNotWorld: a PMI-2 abort of less than the world ends the
// rank's connection but not the step, as Slurm.
func TestAbortNotWorld(t *testing.T) {
	s, fails := startTest(t, testJob(t, 0, []int{0}), &fakeFencer{})
	a := dialRank(t, s, 0)
	a.ask1("cmd=init pmi_version=2 pmi_subversion=0")
	a.send2("cmd=abort;isworld=FALSE;msg=mine;")
	if !a.closed() || fails.n() != 0 {
		t.Errorf("abort not of the world: failures %v; want none and the connection closed", fails.errs)
	}
}

// TestFenceFails: a fence the other nodes fail is answered as failed
// (PMI-2) and fails the step; a rank that leaves PMI without finalize
// fails its node's open fence at once, and every later one.
func TestFenceFails(t *testing.T) {
	t.Run("the other nodes fail it", func(t *testing.T) {
		f := &fakeFencer{err: errors.New("node 1 left")}
		s, fails := startTest(t, testJob(t, 0, []int{0}, []int{1}), f)
		a := dialRank(t, s, 0)
		a.ask1("cmd=init pmi_version=2 pmi_subversion=0")
		got := a.ask2("cmd=kvs-fence;")
		if !strings.HasPrefix(got, "cmd=kvs-fence-response;rc=-1;errmsg=pmix fence failed: node 1 left") || fails.n() == 0 {
			t.Errorf("kvs-fence: %q, failures %v; want failed", got, fails.errs)
		}
	})
	t.Run("a rank left", func(t *testing.T) {
		f := &fakeFencer{}
		s, fails := startTest(t, testJob(t, 0, []int{0, 1, 2}), f)
		a, b, c := dialRank(t, s, 0), dialRank(t, s, 1), dialRank(t, s, 2)
		a.ask1("cmd=init pmi_version=1 pmi_subversion=1")
		b.ask1("cmd=init pmi_version=1 pmi_subversion=1")
		a.c.Write([]byte("cmd=barrier_in\n"))
		c.c.Close() // before its init, as a rank that exits first
		// a's barrier is not answered: its rank is killed (OnFail).
		if !a.closed() {
			t.Error("a: connection open after its fence failed")
		}
		if got := b.ask1("cmd=put kvsname=7.0 key=k value=v"); got != "cmd=put_result rc=0" {
			t.Errorf("put: %q", got)
		}
		b.c.Write([]byte("cmd=barrier_in\n"))
		if !b.closed() {
			t.Error("b: connection open after its fence failed")
		}
		if fails.n() < 2 || len(f.got) != 0 {
			t.Errorf("failures %v, fenced %q; want both fences failed here", fails.errs, f.got)
		}
	})
}

// TestFenceTimeout: a fence a local rank never enters fails after
// FenceTimeout (short here: the other rank is alive but never fences).
func TestFenceTimeout(t *testing.T) {
	fails := &failures{}
	s, err := Start(Config{Job: testJob(t, 0, []int{0, 1}), Fencer: &fakeFencer{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnFail: fails.add, FenceTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	a, b := dialRank(t, s, 0), dialRank(t, s, 1)
	a.ask1("cmd=init pmi_version=2 pmi_subversion=0")
	b.ask1("cmd=init pmi_version=2 pmi_subversion=0")
	if got := a.ask2("cmd=kvs-fence;"); !strings.Contains(got, "rc=-1;errmsg=pmix fence failed: not met in 50ms") || fails.n() != 1 {
		t.Errorf("kvs-fence with a rank missing: %q, failures %v; want failed", got, fails.errs)
	}
	if got := b.ask2("cmd=info-getnodeattr;key=never;wait=TRUE;"); !strings.Contains(got, "rc=-1;errmsg=node attribute \"never\" not put in 50ms") {
		t.Errorf("info-getnodeattr of an attribute never put: %q; want failed", got)
	}
}

// TestBadInit: a client that starts with anything but PMI-1's init, or
// names a version not served, is answered (Slurm's way) and dropped.
func TestBadInit(t *testing.T) {
	s, _ := startTest(t, testJob(t, 0, []int{0, 1}), &fakeFencer{})
	a, b := dialRank(t, s, 0), dialRank(t, s, 1)
	if got := a.ask1("cmd=init pmi_version=3 pmi_subversion=0"); got != "cmd=response_to_init rc=1 pmi_version=2 pmi_subversion=0" || !a.closed() {
		t.Errorf("init version 3: %q; want refused and closed", got)
	}
	b.c.Write([]byte("cmd=get_maxes\n"))
	if !b.closed() {
		t.Error("no init: connection open")
	}
	var big strings.Builder
	big.WriteString("cmd=put key=k value=")
	big.WriteString(strings.Repeat("v", MaxLine))
	s2, _ := startTest(t, testJob(t, 0, []int{0}), &fakeFencer{})
	c := dialRank(t, s2, 0)
	c.ask1("cmd=init pmi_version=1 pmi_subversion=1")
	c.c.Write([]byte(big.String() + "\n"))
	if !c.closed() {
		t.Error("a line over MaxLine: connection open")
	}
}
