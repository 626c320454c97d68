package consensus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
)

// Bounds for every wait in these tests.
const (
	waitLimit = 15 * time.Second      // any one condition
	pollEvery = 10 * time.Millisecond // between checks
)

// testLog is an io.Writer into t.Log that goes quiet once the test is
// over, so a late line from a raft goroutine cannot fail the run.
type testLog struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func testLogger(tb testing.TB) *slog.Logger {
	w := &testLog{t: tb}
	tb.Cleanup(func() { w.mu.Lock(); w.done = true; w.mu.Unlock() })
	level := slog.LevelWarn
	if os.Getenv("SHOAL_TEST_RAFT_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

type testNode struct {
	id, dir, addr string
	stream        func(tb testing.TB, addr string) raft.StreamLayer // nil: plain TCP
	st            *fsm.State
	r             *Raft
}

// open starts (or restarts) n from its data directory with a fresh FSM.
func (n *testNode) open(tb testing.TB, timing Timing) {
	tb.Helper()
	bind := n.addr
	if bind == "" {
		bind = "127.0.0.1:0"
	}
	n.st = fsm.New()
	cfg := Config{ID: n.id, DataDir: n.dir, BindAddr: bind, FSM: n.st, Logger: testLogger(tb), Timing: timing}
	if n.stream != nil {
		cfg.StreamLayer, cfg.BindAddr = n.stream(tb, bind), ""
	}
	r, err := Open(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("Open(%s) = %v", n.id, err)
	}
	n.r, n.addr = r, r.Addr()
	tb.Cleanup(func() { n.shutdown(tb) })
}

func (n *testNode) shutdown(tb testing.TB) {
	if n.r == nil {
		return
	}
	if err := n.r.Shutdown(); err != nil {
		tb.Errorf("Shutdown(%s) = %v", n.id, err)
	}
	n.r = nil
}

// newNodes opens n servers without bootstrapping them.
func newNodes(tb testing.TB, n int, timing Timing) []*testNode {
	tb.Helper()
	nodes := make([]*testNode, n)
	for i := range nodes {
		nodes[i] = &testNode{id: fmt.Sprintf("n%d", i+1), dir: tb.TempDir()}
		nodes[i].open(tb, timing)
	}
	return nodes
}

// newCluster opens n servers and bootstraps them all with the same set,
// as --bootstrap-expect does.
func newCluster(tb testing.TB, n int, timing Timing) []*testNode {
	tb.Helper()
	nodes := newNodes(tb, n, timing)
	var servers []Server
	for _, nd := range nodes {
		servers = append(servers, Server{ID: nd.id, Addr: nd.addr, Suffrage: Voter})
	}
	for _, nd := range nodes {
		if err := nd.r.Bootstrap(servers); err != nil {
			tb.Fatalf("Bootstrap(%s) = %v", nd.id, err)
		}
	}
	return nodes
}

func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", waitLimit, what)
		}
		time.Sleep(pollEvery)
	}
}

// waitLeader waits until exactly one running node leads and every other
// running node names it, and returns it.
func waitLeader(tb testing.TB, nodes []*testNode) *testNode {
	tb.Helper()
	var leader *testNode
	waitFor(tb, "one agreed leader", func() bool {
		leader = nil
		for _, n := range nodes {
			if n.r != nil && n.r.IsLeader() {
				if leader != nil {
					return false
				}
				leader = n
			}
		}
		if leader == nil {
			return false
		}
		for _, n := range nodes {
			if n.r == nil {
				continue
			}
			if id, addr := n.r.Leader(); id != leader.id || addr != leader.addr {
				return false
			}
		}
		return true
	})
	return leader
}

func submitCmd(tb testing.TB, rid string) []byte {
	tb.Helper()
	b, err := fsm.Encode(fsm.CmdSubmitJob, fsm.SubmitJob{
		RequestID: rid,
		Spec: cluster.Spec{
			Name: rid, Command: []string{"true"},
			Request: cluster.Request{Nodes: 1, TasksPerNode: 1, CPUsPerTask: 1},
		},
		Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	})
	if err != nil {
		tb.Fatalf("encode SubmitJob: %v", err)
	}
	return b
}

// submit applies a SubmitJob through whichever node leads, retrying (with
// the same request id, so a retry cannot make a second job) while
// leadership moves or a commit is slow (a busy machine), within waitFor's
// bound.
func submit(tb testing.TB, nodes []*testNode, rid string) (fsm.Result, uint64) {
	tb.Helper()
	var res fsm.Result
	var index uint64
	waitFor(tb, "submit "+rid, func() bool {
		l := waitLeader(tb, nodes)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		res, index, err = l.r.Apply(ctx, submitCmd(tb, rid))
		if errors.Is(err, ErrNotLeader) || errors.Is(err, context.DeadlineExceeded) {
			return false // the entry may still commit: the request id makes the retry safe
		}
		if err != nil {
			tb.Fatalf("Apply(%s) on leader %s = %v", rid, l.id, err)
		}
		return true
	})
	if res.Err != nil {
		tb.Fatalf("Apply(%s): fsm result error %v", rid, res.Err)
	}
	return res, index
}

// waitConverged waits until every running node applied the same entries:
// the same FSM hash at the same index, at least minIndex.
func waitConverged(tb testing.TB, nodes []*testNode, minIndex uint64) {
	tb.Helper()
	waitFor(tb, fmt.Sprintf("replicas converged at index >= %d", minIndex), func() bool {
		var first *testNode
		for _, n := range nodes {
			if n.r == nil {
				continue
			}
			if first == nil {
				first = n
			}
			i, h := n.st.Hash()
			fi, fh := first.st.Hash()
			if i < minIndex || i != fi || h != fh {
				return false
			}
		}
		return true
	})
}

func jobNames(st *fsm.State) []string {
	var out []string
	for _, j := range st.View().Jobs() {
		out = append(out, fmt.Sprintf("%d:%s", j.ID, j.RequestID))
	}
	return out
}

// TestClusterApply covers election and the write path: one leader, Apply
// on it returns the FSM's result, a follower refuses naming the leader,
// and a retried request id is deduplicated (DESIGN invariant 2: no submit
// yields two jobs; invariant 5: replicas agree).
func TestClusterApply(t *testing.T) {
	nodes := newCluster(t, 3, FastTiming())
	res, index := submit(t, nodes, "req-1")
	if res.JobID != 1 || res.Duplicate {
		t.Fatalf("first submit: result %+v; want job 1, not duplicate", res)
	}
	if index == 0 {
		t.Errorf("first submit: index 0; want the entry's raft index")
	}
	again, _ := submit(t, nodes, "req-1")
	if again.JobID != 1 || !again.Duplicate {
		t.Errorf("retried submit: result %+v; want job 1, duplicate", again)
	}

	// A follower refuses writes and names the leader. Leadership may move
	// under a loaded machine; the checks count only when the leader's term
	// did not change while they ran.
	waitFor(t, "follower checks under a stable leader", func() bool {
		leader := waitLeader(t, nodes)
		term := leader.r.raft.CurrentTerm()
		var failures []string
		for _, n := range nodes {
			if n == leader {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, _, err := n.r.Apply(ctx, submitCmd(t, "req-1")) // a duplicate, should it land
			cancel()
			var nle *NotLeaderError
			switch {
			case !errors.Is(err, ErrNotLeader) || !errors.As(err, &nle):
				failures = append(failures, fmt.Sprintf("Apply on follower %s = %v; want a *NotLeaderError", n.id, err))
			case nle.LeaderID != leader.id || nle.LeaderAddr != leader.addr:
				failures = append(failures, fmt.Sprintf("follower %s names leader %s at %s; want %s at %s",
					n.id, nle.LeaderID, nle.LeaderAddr, leader.id, leader.addr))
			}
			if err := n.r.Barrier(context.Background()); !errors.Is(err, ErrNotLeader) {
				failures = append(failures, fmt.Sprintf("Barrier on follower %s = %v; want ErrNotLeader", n.id, err))
			}
			if err := n.r.VerifyLeader(context.Background()); !errors.Is(err, ErrNotLeader) {
				failures = append(failures, fmt.Sprintf("VerifyLeader on follower %s = %v; want ErrNotLeader", n.id, err))
			}
			if n.r.State() != "Follower" {
				failures = append(failures, fmt.Sprintf("State() on %s = %q; want Follower", n.id, n.r.State()))
			}
		}
		if err := leader.r.VerifyLeader(context.Background()); err != nil {
			failures = append(failures, fmt.Sprintf("VerifyLeader on leader = %v", err))
		}
		if err := leader.r.Barrier(context.Background()); err != nil {
			failures = append(failures, fmt.Sprintf("Barrier on leader = %v", err))
		}
		if !leader.r.IsLeader() || leader.r.raft.CurrentTerm() != term {
			t.Logf("leadership moved during the checks; again (%d failures ignored)", len(failures))
			return false
		}
		for _, f := range failures {
			t.Error(f)
		}
		return true
	})

	waitConverged(t, nodes, index)
	for _, n := range nodes {
		if got := jobNames(n.st); len(got) != 1 || got[0] != "1:req-1" {
			t.Errorf("%s jobs = %v; want [1:req-1]", n.id, got)
		}
		if n.r.AppliedIndex() < index {
			t.Errorf("%s AppliedIndex = %d; want >= %d", n.id, n.r.AppliedIndex(), index)
		}
	}
}

// TestFailoverAndRestart: the leader dies, a new one is elected and still
// has the job; the old leader restarts from its data directory and
// catches up to the same state hash (DESIGN "nothing that was
// acknowledged is ever lost"; invariant 5).
func TestFailoverAndRestart(t *testing.T) {
	nodes := newCluster(t, 3, FastTiming())
	_, index := submit(t, nodes, "before-failover")
	waitConverged(t, nodes, index)

	old := waitLeader(t, nodes)
	stopped := old.r
	old.shutdown(t)
	if err := stopped.Shutdown(); err != nil {
		t.Errorf("second Shutdown = %v; want nil (idempotent)", err)
	}
	if _, _, err := stopped.Apply(context.Background(), submitCmd(t, "late")); !errors.Is(err, ErrShutdown) {
		t.Errorf("Apply after Shutdown = %v; want ErrShutdown", err)
	}
	newLeader := waitLeader(t, nodes)
	if newLeader == old {
		t.Fatalf("leader %s still leads after shutdown", old.id)
	}
	if got := jobNames(newLeader.st); len(got) != 1 || got[0] != "1:before-failover" {
		t.Fatalf("new leader %s jobs = %v; want [1:before-failover]", newLeader.id, got)
	}
	res, index := submit(t, nodes, "after-failover")
	if res.JobID != 2 {
		t.Errorf("submit after failover: job %d; want 2", res.JobID)
	}

	old.open(t, FastTiming())
	if !old.r.HasState() {
		t.Errorf("restarted %s: HasState() = false; want true", old.id)
	}
	if err := old.r.Bootstrap([]Server{{ID: old.id, Addr: old.addr, Suffrage: Voter}}); !errors.Is(err, ErrAlreadyBootstrapped) {
		t.Errorf("Bootstrap after restart = %v; want ErrAlreadyBootstrapped", err)
	}
	waitConverged(t, nodes, index)
	if got := jobNames(old.st); len(got) != 2 {
		t.Errorf("restarted %s jobs = %v; want both", old.id, got)
	}
}

// TestRestartFromSnapshot: with a low snapshot threshold the log is
// compacted, so a restarted server can only have its state back through
// the snapshot; it must restore it at Open, before hearing from anyone.
func TestRestartFromSnapshot(t *testing.T) {
	timing := FastTiming()
	timing.SnapshotThreshold = 8
	timing.SnapshotInterval = 50 * time.Millisecond
	timing.TrailingLogs = 2
	nodes := newCluster(t, 3, timing)
	var index uint64
	for i := range 20 {
		_, index = submit(t, nodes, fmt.Sprintf("job-%02d", i))
	}
	waitConverged(t, nodes, index)

	// A follower, so the restart also exercises catching up afterwards.
	leader := waitLeader(t, nodes)
	var n *testNode
	for _, c := range nodes {
		if c != leader {
			n = c
			break
		}
	}
	waitFor(t, n.id+" snapshot and compacted log", func() bool {
		snaps, err := n.r.snaps.List()
		first, ferr := n.r.store.FirstIndex()
		return err == nil && ferr == nil && len(snaps) > 0 && first > 1
	})
	snaps, _ := n.r.snaps.List()
	snapIndex := snaps[0].Index
	n.shutdown(t)

	// Stop the others too, so nothing can be replicated to n.
	for _, c := range nodes {
		if c != n {
			c.shutdown(t)
		}
	}
	n.open(t, timing)
	// Restored from the newest snapshot: the one seen above, or one taken
	// between that look and the shutdown; never past the last entry.
	if got := n.st.Index(); got < snapIndex || got > index {
		t.Fatalf("after Open, FSM index %d; want restored from a snapshot at raft index %d to %d", got, snapIndex, index)
	}
	if got := len(n.st.View().Jobs()); got == 0 {
		t.Fatalf("after Open, FSM has no jobs; want the snapshot's")
	}

	for _, c := range nodes {
		if c != n {
			c.open(t, timing)
		}
	}
	waitConverged(t, nodes, index)
	for _, c := range nodes {
		if got := len(c.st.View().Jobs()); got != 20 {
			t.Errorf("%s has %d jobs; want 20", c.id, got)
		}
	}
	submit(t, nodes, "after-restart")
}

// TestMembership: a single bootstrapped server grows to three voters
// through the reconcile flow (gather → PlanVoters → ApplyChanges), the
// new servers receive the existing state, and a fourth server is added as
// a non-voter and promoted by explicit changes.
func TestMembership(t *testing.T) {
	nodes := newNodes(t, 4, FastTiming())
	first := nodes[0]
	if err := first.r.Bootstrap([]Server{{ID: first.id, Addr: first.addr, Suffrage: Voter}}); err != nil {
		t.Fatalf("Bootstrap = %v", err)
	}
	waitLeader(t, nodes[:1])
	_, index := submit(t, nodes[:1], "early")
	ctx := context.Background()
	joined := nodes[:1] // the servers in the configuration, for waitLeader

	// Gossip, as the planner sees it: n1..n3 alive, each on its own switch.
	for round := 0; ; round++ {
		if round > 5 {
			t.Fatalf("membership did not settle after %d rounds", round)
		}
		leader := waitLeader(t, joined)
		servers, err := leader.r.Servers(ctx)
		if err != nil {
			t.Fatalf("Servers = %v", err)
		}
		in := map[string]Server{}
		for _, s := range servers {
			in[s.ID] = s
		}
		var cands []Candidate
		for i, n := range nodes[:3] {
			s, ok := in[n.id]
			cands = append(cands, Candidate{ID: n.id, Addr: n.addr, Switch: fmt.Sprintf("sw%d", i),
				Alive: true, InConfig: ok, Suffrage: s.Suffrage})
		}
		plan := PlanVoters(VoterConfig{}, leader.id, cands, time.Now())
		if len(plan) == 0 {
			break
		}
		// Changes are idempotent (re-adding or re-promoting a server is a
		// no-op), so a plan cut short by a leadership change is retried.
		changeOnLeader(t, joined, plan)
		joined = nodes[:3]
	}
	assertServers(t, nodes[:3], map[string]Suffrage{"n1": Voter, "n2": Voter, "n3": Voter})
	waitConverged(t, nodes[:3], index)

	fourth := nodes[3]
	changeOnLeader(t, nodes[:3], []Change{{Kind: ChangeAddNonvoter, ID: fourth.id, Addr: fourth.addr}})
	assertServers(t, nodes[:3], map[string]Suffrage{"n1": Voter, "n2": Voter, "n3": Voter, "n4": Nonvoter})
	waitConverged(t, nodes, index)
	changeOnLeader(t, nodes[:3], []Change{{Kind: ChangePromote, ID: fourth.id, Addr: fourth.addr}})
	assertServers(t, nodes, map[string]Suffrage{"n1": Voter, "n2": Voter, "n3": Voter, "n4": Voter})
	changeOnLeader(t, nodes, []Change{{Kind: ChangeDemote, ID: "n4"}})
	assertServers(t, nodes, map[string]Suffrage{"n1": Voter, "n2": Voter, "n3": Voter, "n4": Nonvoter})

	// A non-leader refuses changes and names the change that failed.
	err := fourth.r.ApplyChanges(ctx, []Change{{Kind: ChangeRemove, ID: "n3", Why: "test"}})
	if !errors.Is(err, ErrNotLeader) || !strings.Contains(err.Error(), "remove n3") {
		t.Errorf("ApplyChanges on a non-voter = %v; want ErrNotLeader naming the change", err)
	}
	changeOnLeader(t, nodes[:3], []Change{{Kind: ChangeRemove, ID: "n4"}})
	assertServers(t, nodes[:3], map[string]Suffrage{"n1": Voter, "n2": Voter, "n3": Voter})
}

// changeOnLeader applies changes through whichever of nodes leads,
// retrying while leadership moves.
func changeOnLeader(t *testing.T, nodes []*testNode, changes []Change) {
	t.Helper()
	waitFor(t, fmt.Sprintf("changes %v", changes), func() bool {
		err := waitLeader(t, nodes).r.ApplyChanges(context.Background(), changes)
		if errors.Is(err, ErrNotLeader) {
			return false
		}
		if err != nil {
			t.Fatalf("ApplyChanges(%v) = %v", changes, err)
		}
		return true
	})
}

func assertServers(t *testing.T, nodes []*testNode, want map[string]Suffrage) {
	t.Helper()
	servers, err := waitLeader(t, nodes).r.Servers(context.Background())
	if err != nil {
		t.Fatalf("Servers = %v", err)
	}
	got := map[string]Suffrage{}
	for _, s := range servers {
		got[s.ID] = s.Suffrage
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Servers() = %v; want %v", got, want)
	}
}

// awaitLeaderValue reads n's LeaderCh until it delivers want, failing
// after waitLimit or if the channel closes. Earlier values may precede it
// when leadership flapped on a loaded machine.
func awaitLeaderValue(tb testing.TB, n *testNode, want bool) {
	tb.Helper()
	deadline := time.After(waitLimit)
	for {
		select {
		case v, ok := <-n.r.LeaderCh():
			if !ok {
				tb.Fatalf("LeaderCh of %s closed; want %v", n.id, want)
			}
			if v == want {
				return
			}
		case <-deadline:
			tb.Fatalf("LeaderCh of %s gave no %v within %s", n.id, want, waitLimit)
		}
	}
}

// TestLeaderCh: the channel reports gaining leadership, losing it on a
// transfer, and is closed by Shutdown (DESIGN "leader-only work has one
// owner": the scheduling loop starts and stops on these values).
func TestLeaderCh(t *testing.T) {
	nodes := newCluster(t, 3, FastTiming())
	leader := waitLeader(t, nodes)
	awaitLeaderValue(t, leader, true)

	// Leadership may already have moved; either way the old leader must
	// report the loss.
	// raft gives a transfer one election timeout, which a loaded machine
	// can miss: retry then, the leader keeps leading after a failed one.
	waitFor(t, "a leadership transfer", func() bool {
		err := leader.r.TransferLeadership(context.Background())
		if err != nil && !errors.Is(err, ErrNotLeader) {
			t.Logf("TransferLeadership = %v; again", err)
			return false
		}
		return true
	})
	awaitLeaderValue(t, leader, false)
	next := waitLeader(t, nodes)
	awaitLeaderValue(t, next, true)

	ch := next.r.LeaderCh()
	next.shutdown(t)
	deadline := time.After(waitLimit)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("LeaderCh of %s not closed by Shutdown", next.id)
		}
	}
}

// TestOpenErrors: Open names what it could not use.
func TestOpenErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	busy := &testNode{id: "busy", dir: t.TempDir()}
	busy.open(t, FastTiming())

	tests := []struct {
		name string
		cfg  Config
		want string // in the error
	}{
		{"no ID", Config{DataDir: t.TempDir(), BindAddr: "127.0.0.1:0", FSM: fsm.New()}, "ID is empty"},
		{"no FSM", Config{ID: "a", DataDir: t.TempDir(), BindAddr: "127.0.0.1:0"}, "FSM is nil"},
		{"no bind", Config{ID: "a", DataDir: t.TempDir(), FSM: fsm.New()}, "BindAddr is empty"},
		{"lease above heartbeat", Config{ID: "a", DataDir: t.TempDir(), BindAddr: "127.0.0.1:0", FSM: fsm.New(),
			Timing: Timing{HeartbeatTimeout: time.Second, LeaderLeaseTimeout: 2 * time.Second}}, "LeaderLeaseTimeout"},
		{"data dir is a file", Config{ID: "a", DataDir: file, BindAddr: "127.0.0.1:0", FSM: fsm.New()}, file},
		{"address in use", Config{ID: "a", DataDir: t.TempDir(), BindAddr: busy.addr, FSM: fsm.New()}, busy.addr},
		{"unadvertisable bind", Config{ID: "a", DataDir: t.TempDir(), BindAddr: "0.0.0.0:0", FSM: fsm.New()}, "0.0.0.0:0"},
		{"data dir in use", Config{ID: "a", DataDir: busy.dir, BindAddr: "127.0.0.1:0", FSM: fsm.New()}, filepath.Join(busy.dir, "raft", "raft.db")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			r, err := Open(context.Background(), tt.cfg)
			if err == nil {
				r.Shutdown()
				t.Fatalf("Open = nil error; want one containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open = %v; want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestBootstrapRefused: a bootstrap list must include this server as a
// voter, and a second bootstrap is refused.
func TestBootstrapRefused(t *testing.T) {
	n := newNodes(t, 1, FastTiming())[0]
	if err := n.r.Bootstrap([]Server{{ID: "other", Addr: "127.0.0.1:1", Suffrage: Voter}}); err == nil {
		t.Errorf("Bootstrap without self = nil; want an error")
	}
	if err := n.r.Bootstrap([]Server{{ID: n.id, Addr: n.addr, Suffrage: "observer"}}); err == nil {
		t.Errorf("Bootstrap with bad suffrage = nil; want an error")
	}
	self := []Server{{ID: n.id, Addr: n.addr, Suffrage: Voter}}
	if err := n.r.Bootstrap(self); err != nil {
		t.Fatalf("Bootstrap = %v", err)
	}
	if err := n.r.Bootstrap(self); !errors.Is(err, ErrAlreadyBootstrapped) {
		t.Errorf("second Bootstrap = %v; want ErrAlreadyBootstrapped", err)
	}
	n.shutdown(t)
	n.open(t, FastTiming())
	if !n.r.HasState() {
		t.Errorf("HasState after restart = false; want true")
	}
	waitLeader(t, []*testNode{n})
	_, _, err := n.r.Apply(context.Background(), submitCmd(t, "x"))
	if err != nil {
		t.Errorf("Apply on a restarted single server = %v", err)
	}
}

// countingStream is a raft.StreamLayer over TCP that counts its dials:
// the seam TLS will use.
type countingStream struct {
	net.Listener
	dials *atomic.Int64
}

func (s countingStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	s.dials.Add(1)
	return net.DialTimeout("tcp", string(addr), timeout)
}

// TestStreamLayer: a cluster whose transport is a caller's StreamLayer
// elects, replicates, and really uses that layer.
func TestStreamLayer(t *testing.T) {
	var dials atomic.Int64
	stream := func(tb testing.TB, addr string) raft.StreamLayer {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			tb.Fatalf("listen %s: %v", addr, err)
		}
		return countingStream{Listener: l, dials: &dials}
	}
	nodes := make([]*testNode, 3)
	var servers []Server
	for i := range nodes {
		nodes[i] = &testNode{id: fmt.Sprintf("s%d", i+1), dir: t.TempDir(), stream: stream}
		nodes[i].open(t, FastTiming())
		servers = append(servers, Server{ID: nodes[i].id, Addr: nodes[i].addr, Suffrage: Voter})
	}
	for _, n := range nodes {
		if err := n.r.Bootstrap(servers); err != nil {
			t.Fatalf("Bootstrap(%s) = %v", n.id, err)
		}
	}
	_, index := submit(t, nodes, "via-stream")
	waitConverged(t, nodes, index)
	if dials.Load() == 0 {
		t.Errorf("no dials through the StreamLayer")
	}
}

// TestAnnounceCommit: hashicorp/raft tells followers the commit index
// only with AppendEntries, so with nothing more to send they learn it a
// CommitTimeout later (here an hour: never, in this test); AnnounceCommit
// makes them learn it at once, so a node an allocation names starts its
// tasks without that wait (leader.Scheduler.Announce).
func TestAnnounceCommit(t *testing.T) {
	timing := FastTiming()
	timing.CommitTimeout = time.Hour
	nodes := newCluster(t, 3, timing)
	waitFor(t, "a submit every follower has applied, under a stable leader", func() bool {
		leader := waitLeader(t, nodes)
		_, index := submit(t, nodes, fmt.Sprintf("req-%d", leader.r.raft.CurrentTerm()))
		lagging := false
		for _, n := range nodes {
			lagging = lagging || n.r.AppliedIndex() < index
		}
		if !lagging {
			// Something else (an election's entry) carried the commit: the
			// test proves nothing this time round.
			t.Logf("every follower applied index %d without an announce; again", index)
			return false
		}
		leader.r.AnnounceCommit()
		deadline := time.Now().Add(waitLimit)
		for _, n := range nodes {
			for n.r.AppliedIndex() < index && leader.r.IsLeader() && time.Now().Before(deadline) {
				time.Sleep(pollEvery)
			}
			if n.r.AppliedIndex() < index {
				if !leader.r.IsLeader() {
					t.Logf("leadership moved; again")
					return false
				}
				t.Fatalf("%s applied index %d after the announce; want %d", n.id, n.r.AppliedIndex(), index)
			}
		}
		return true
	})
}
