// Package scale measures a cluster of many real agents on one machine:
// each agent is a `shoal agent` process with its own loopback ports, its
// own memberlist and raft transport, and simulated GPUs (package
// localcluster) — or, with Options.Spawn, a node.Agent in this process
// with the same command line, ports, memberlist and raft transport of
// its own (more fit one machine: no Go runtime each). Run starts them, measures formation, the cost of
// standing still, submits, a large gang and a leader failover, and stops
// every process it started, on success and on failure.
package scale

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	osexec "os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/localcluster"
	"github.com/shoal-sched/shoal/metrics"
)

// Options shape a scale run.
type Options struct {
	// Binary is the shoal executable the agents run.
	Binary string
	// Dir holds the agents' data dirs and logs; it must exist or be
	// creatable. Run does not remove it.
	Dir         string
	Nodes       int
	GPUsPerNode int // default 8
	LeafSize    int // nodes per leaf switch; default 16
	// Voters and Servers are the raft layout the run waits for: this many
	// voters, and this many raft servers in all (voters and nonvoters).
	// Defaults: DefaultVoters(Nodes) and those plus DefaultReplicas (the
	// agents' --raft-replicas default; every other node a worker), at
	// most Nodes.
	Voters  int
	Servers int
	// GangNodes is the size of the gang job; default min(64, Nodes/2).
	GangNodes int
	// Submits and Clients shape the throughput figure (default 400, 4);
	// LatencyRuns the submit-to-start figure (default 20).
	Submits     int
	Clients     int
	LatencyRuns int
	// Settle is how long the cluster stands still, once its layout
	// settled, before the at-rest figures (default 10 s); Rest is how
	// long they are measured over (default 10 s).
	Settle time.Duration
	Rest   time.Duration
	// Wait bounds every wait for the cluster (default 5 min).
	Wait time.Duration
	// Insecure runs the agents without TLS (default: TLS, as in
	// production).
	Insecure bool
	// ExtraArgs are added to every agent's command line.
	ExtraArgs []string
	// Only, when set, names the steps to run after formation (which
	// always runs): rest, throughput, latency, gang, failover.
	Only []string
	// Logf, when set, is told what the run is doing.
	Logf func(format string, args ...any)
	// Spawn, when set, runs the agents in this process (Binary is then
	// not used): each with its own ports, data dir, memberlist and raft
	// transport, as processes have. Per-agent CPU is then not measured
	// (one process): the at-rest figures give the process's CPU, its RSS
	// divided by the agents, and RestProfile the leader's share.
	Spawn Spawn
	// StartEvery, with Spawn, spaces the agents' starts (default 0: as
	// fast as they open, 16 at a time): each join is gossiped to every
	// agent, and a join storm on a few shared cores delays the voters'
	// raft heartbeats past their timeouts.
	StartEvery time.Duration
	// Hybrid, with Spawn, runs the first Servers agents as processes
	// (Binary) and every other one in this process with
	// --raft-eligible=false, so the raft servers are the processes and
	// the workers share this one; once the servers started, this process
	// lowers its CPU priority to WorkerNice, so the servers' raft
	// heartbeats never wait behind the workers' goroutines on a few
	// shared cores.
	Hybrid bool
	// WorkerNice is the nice value a Hybrid run's process takes (0: it
	// keeps its own).
	WorkerNice int
	// WorkerGCPercent, in a Hybrid run, is this process's GOGC from the
	// workers' start on (0: as it is). Hundreds of agents in one process
	// hold a large heap that changes fast (gossip's messages): at the
	// default 100, 300 workers spent most of their CPU collecting and
	// lost their gossip probes' deadlines (BENCHMARKS.md).
	WorkerGCPercent int
	// RestProfile, when set with Spawn, is where a CPU profile of the
	// process over the at-rest window is written; its samples carry an
	// "agent" label (go tool pprof -tags, -tagfocus agent=NAME).
	RestProfile string
}

// Report is what a run measured. Times are seconds.
type Report struct {
	Nodes       int  `json:"nodes"`
	GPUsPerNode int  `json:"gpus_per_node"`
	InProcess   bool `json:"in_process"`
	// Hybrid: the servers ran as processes, the workers in one process
	// at nice WorkerNice (Options.Hybrid).
	Hybrid          bool `json:"hybrid,omitempty"`
	WorkerNice      int  `json:"worker_nice,omitempty"`
	WorkerGCPercent int  `json:"worker_gc_percent,omitempty"`
	WantVoters      int  `json:"want_voters"`
	WantServers     int  `json:"want_servers"`
	// Steps are the steps that completed, in order; figures of the others
	// are zero.
	Steps []string `json:"steps"`
	// Formation, from the moment the first agent process started.
	FirstLeaderS     float64 `json:"first_leader_s"`
	GossipConvergedS float64 `json:"gossip_converged_s"` // every agent lists every agent alive
	RegisteredS      float64 `json:"registered_s"`       // every node up in the replicated state
	LayoutSettledS   float64 `json:"layout_settled_s"`   // the raft layout asked for
	Layout           Layout  `json:"layout"`
	// At rest, over RestS seconds.
	RestS        float64 `json:"rest_s"`
	RSSMiBMedian float64 `json:"rss_mib_median"`
	RSSMiBMax    float64 `json:"rss_mib_max"`
	RSSMiBLeader float64 `json:"rss_mib_leader"`
	// Leader is the agent that led at rest.
	Leader string `json:"leader"`
	// In-process runs: the process's RSS and Go heap in use, at rest (the
	// RSS per agent above is then ProcessRSSMiB / Nodes, and the leader's
	// and a follower's CPU -1: one process). Hybrid runs: the workers'
	// process's, and the RSS per agent above the servers' processes'.
	ProcessRSSMiB float64 `json:"process_rss_mib,omitempty"`
	HeapInuseMiB  float64 `json:"heap_inuse_mib,omitempty"`
	// SharedAgents are the agents that ran in this process, SharedRSSMiB
	// its RSS divided by them and SharedCPUPercent its CPU at rest (of
	// one core; in a hybrid run, the workers').
	SharedAgents     int     `json:"shared_agents,omitempty"`
	SharedRSSMiB     float64 `json:"shared_rss_mib,omitempty"`
	SharedCPUPercent float64 `json:"shared_cpu_percent,omitempty"`
	LeaderCPUPercent float64 `json:"leader_cpu_percent"` // of one core
	// FollowerCPUPercentMedian is a non-leader agent's, the median.
	FollowerCPUPercentMedian float64 `json:"follower_cpu_percent_median"`
	// ClusterCPUPercent is all agents together (100 = one core busy).
	ClusterCPUPercent float64 `json:"cluster_cpu_percent"`
	// LeaderTCPBytesPerS is what the leader's TCP sockets carried (raft,
	// node-to-node HTTP, gossip's TCP push/pull), sent and received;
	// -1 when `ss` is missing. Gossip's UDP is not in it.
	LeaderTCPBytesPerS float64 `json:"leader_tcp_bytes_per_s"`
	// LoopbackBytesPerS is all loopback traffic of the network namespace:
	// the whole cluster's, UDP included, when the run has a namespace of
	// its own (`unshare -n`), else other programs' too.
	LoopbackBytesPerS float64 `json:"loopback_bytes_per_s"`
	// Scrape is GET /metrics on the leader at rest (over its Unix socket,
	// so TLS is not in it), ScrapeBytes the exposition's size and
	// ScrapeSamples its sample lines.
	Scrape        Dist `json:"scrape"`
	ScrapeBytes   int  `json:"scrape_bytes"`
	ScrapeSamples int  `json:"scrape_samples"`
	// RaftEntriesPerS is how fast the raft log grew at rest.
	RaftEntriesPerS float64 `json:"raft_entries_per_s"`
	// LeaderRenewalsPerS is how many lease renewals a second the leader
	// answered at rest (shoal_lease_renewals_total), and LeaseTTLS the
	// TTL it granted its own last one (shoal_node_lease_ttl_seconds):
	// every node is granted the same.
	LeaderRenewalsPerS float64 `json:"leader_renewals_per_s"`
	LeaseTTLS          float64 `json:"lease_ttl_s"`
	// RaftEntriesPerSubmit is the log's growth per held submit, and
	// RaftEntriesPerJob per 2-node job from submit to completion.
	RaftEntriesPerSubmit float64 `json:"raft_entries_per_submit"`
	RaftEntriesPerJob    float64 `json:"raft_entries_per_job"`
	// Submits through a follower with the Go client; jobs held, so this
	// is the write path.
	SubmitsPerS   float64 `json:"submits_per_s"`
	SubmitClients int     `json:"submit_clients"`
	SubmitsFailed int     `json:"submits_failed"`
	// SubmitsLeaderCPUPercent and SubmitsClusterCPUPercent are the
	// leader's and all agents' CPU while the submits ran (100 = one core).
	SubmitsLeaderCPUPercent  float64 `json:"submits_leader_cpu_percent"`
	SubmitsClusterCPUPercent float64 `json:"submits_cluster_cpu_percent"`
	// SubmitToStart: a 2-node job's first rank's own timestamp minus the
	// time just before its submit, through a follower.
	SubmitToStart Dist `json:"submit_to_start"`
	Gang          Gang `json:"gang"`
	Failover      Fail `json:"failover"`
}

// Gang is the large gang job's figures, from just before its submit.
type Gang struct {
	Nodes int `json:"nodes"`
	// PlacedS is when a blocking query first saw it RUNNING.
	PlacedS float64 `json:"placed_s"`
	// AllStartedS is the last rank's own start timestamp.
	AllStartedS float64 `json:"all_started_s"`
	CompletedS  float64 `json:"completed_s"`
	State       string  `json:"state"`
	Ranks       int     `json:"ranks"` // ranks that printed their timestamp
}

// Fail is the failover's figures, from the kill -9 of the leader.
type Fail struct {
	OldLeader string `json:"old_leader"`
	NewLeader string `json:"new_leader"`
	// ElectedS is when the first survivor named the new leader, AllSeeS
	// when the last did (polled: ResolutionS is one round of polls).
	ElectedS    float64 `json:"elected_s"`
	AllSeeS     float64 `json:"all_see_s"`
	ResolutionS float64 `json:"resolution_s"`
	// SubmitOKS is when a submit through a survivor, retried with one
	// request id, first succeeded.
	SubmitOKS float64 `json:"submit_ok_s"`
}

func (o *Options) defaults() error {
	if o.Nodes < 3 {
		return fmt.Errorf("nodes %d: want at least 3 (a failover needs survivors that elect)", o.Nodes)
	}
	o.GPUsPerNode = cmp.Or(o.GPUsPerNode, 8)
	o.LeafSize = cmp.Or(o.LeafSize, 16)
	o.Voters = cmp.Or(o.Voters, DefaultVoters(o.Nodes))
	o.Servers = cmp.Or(o.Servers, min(o.Nodes, o.Voters+DefaultReplicas))
	o.GangNodes = cmp.Or(o.GangNodes, min(64, o.Nodes/2))
	o.Submits = cmp.Or(o.Submits, 400)
	o.Clients = cmp.Or(o.Clients, 4)
	o.LatencyRuns = cmp.Or(o.LatencyRuns, 20)
	o.Settle = cmp.Or(o.Settle, 10*time.Second)
	o.Rest = cmp.Or(o.Rest, 10*time.Second)
	o.Wait = cmp.Or(o.Wait, 5*time.Minute)
	if o.Hybrid && (o.Spawn == nil || o.Binary == "") {
		return errors.New("hybrid: want Spawn (the workers) and Binary (the servers)")
	}
	if o.Hybrid && (o.Servers < min(3, o.Nodes) || o.Servers >= o.Nodes) {
		// The first three bootstrap (localcluster), so they are servers.
		return fmt.Errorf("hybrid: servers %d: want 3 to %d (nodes-1)", o.Servers, o.Nodes-1)
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	for _, s := range o.Only {
		if !slices.Contains([]string{"formation", "rest", "throughput", "latency", "gang", "failover"}, s) {
			return fmt.Errorf("only %q: want formation, rest, throughput, latency, gang or failover", s)
		}
	}
	switch {
	case o.GangNodes < 1 || o.GangNodes > o.Nodes-1:
		return fmt.Errorf("gang nodes %d: want 1 to %d (nodes-1)", o.GangNodes, o.Nodes-1)
	case o.Voters > o.Servers || o.Servers > o.Nodes:
		return fmt.Errorf("voters %d, servers %d, nodes %d: want voters <= servers <= nodes", o.Voters, o.Servers, o.Nodes)
	case o.Clients < 1 || o.Submits < o.Clients:
		return fmt.Errorf("submits %d, clients %d: want at least one submit per client", o.Submits, o.Clients)
	}
	return nil
}

// Run starts opts.Nodes agents, measures them and stops them. On error
// the report holds what was measured before it.
func Run(ctx context.Context, opts Options) (Report, error) {
	if err := opts.defaults(); err != nil {
		return Report{}, err
	}
	r := &run{o: opts, rep: Report{Nodes: opts.Nodes, GPUsPerNode: opts.GPUsPerNode, WantVoters: opts.Voters, WantServers: opts.Servers,
		InProcess: opts.Spawn != nil, Hybrid: opts.Hybrid}}
	if opts.Hybrid {
		r.rep.WorkerNice, r.rep.WorkerGCPercent = opts.WorkerNice, opts.WorkerGCPercent
	}
	err := r.run(ctx)
	return r.rep, err
}

type run struct {
	o      Options
	f      fleet
	agents []*localcluster.Agent // f's
	t0     time.Time             // the first agent's start
	rep    Report
}

func (r *run) run(ctx context.Context) (err error) {
	o := r.o
	r.t0 = time.Now()
	o.Logf("starting %d agents", o.Nodes)
	// ~20 descriptors an agent, and a server one per worker it serves.
	if err := raiseFileLimit(uint64(max(20000, 32*o.Nodes))); err != nil {
		return err
	}
	var f fleet
	switch {
	case o.Hybrid:
		f, err = startHybrid(ctx, o)
	case o.Spawn != nil:
		f, err = startInProcess(ctx, o)
	default:
		f, err = startProcs(ctx, o)
	}
	if err != nil {
		return err
	}
	r.f, r.agents = f, f.agents()
	defer func() {
		o.Logf("stopping %d agents", len(r.agents))
		f.stop()
	}()

	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"formation", r.formation},
		{"rest", r.rest},
		{"throughput", r.viaFollower(r.throughput)},
		{"latency", r.viaFollower(r.latency)},
		{"gang", r.viaFollower(r.gang)},
		{"failover", r.failover},
	}
	for _, s := range steps {
		if s.name != "formation" && len(o.Only) > 0 && !slices.Contains(o.Only, s.name) {
			continue
		}
		o.Logf("%s", s.name)
		if err := s.fn(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		r.rep.Steps = append(r.rep.Steps, s.name)
	}
	return nil
}

func (r *run) since() float64 { return time.Since(r.t0).Seconds() }

// each calls fn for every agent in as, with a bounded number at once.
func each(as []*localcluster.Agent, fn func(*localcluster.Agent)) {
	const workers = 16
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for _, a := range as {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(a)
		})
	}
	wg.Wait()
}

// poll calls fn every interval until it reports done or limit passes.
func poll(parent context.Context, limit, interval time.Duration, what string, fn func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(parent, limit)
	defer cancel()
	var last error
	for {
		done, err := fn(ctx)
		if done {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if parent.Err() != nil {
				return fmt.Errorf("waiting for %s: %w", what, parent.Err())
			}
			if last != nil {
				return fmt.Errorf("%s not within %s (last: %w)", what, limit, last)
			}
			return fmt.Errorf("%s not within %s", what, limit)
		case <-time.After(interval):
		}
	}
}

func call[T any](ctx context.Context, limit time.Duration, fn func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	return fn(ctx)
}

// formation waits for a leader, gossip convergence, every node's
// registration and the raft layout, each timed from the first start.
func (r *run) formation(ctx context.Context) error {
	o := r.o
	noteLeader := func(ctx context.Context) {
		if r.rep.FirstLeaderS == 0 {
			if _, _, err := r.leader(ctx); err == nil {
				r.rep.FirstLeaderS = r.since()
			}
		}
	}
	converged := make([]bool, len(r.agents))
	var mu sync.Mutex
	// Each round asks every agent not converged yet for its members: at
	// 1,000 agents, a million members listed.
	every := max(250*time.Millisecond, time.Duration(o.Nodes)*time.Millisecond)
	err := poll(ctx, o.Wait, every, "gossip convergence", func(ctx context.Context) (bool, error) {
		var todo []*localcluster.Agent
		for i, a := range r.agents {
			if !converged[i] {
				todo = append(todo, a)
			}
		}
		noteLeader(ctx)
		var lastErr error
		each(todo, func(a *localcluster.Agent) {
			cl := a.Client()
			defer cl.CloseIdleConnections()
			ms, err := call(ctx, 5*time.Second, cl.Members)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				lastErr = fmt.Errorf("%s: members: %w", a.Name, err)
				return
			}
			if n := AliveMembers(ms); n < o.Nodes {
				lastErr = fmt.Errorf("%s lists %d of %d members alive", a.Name, n, o.Nodes)
				return
			}
			converged[slices.Index(r.agents, a)] = true
		})
		return !slices.Contains(converged, false), lastErr
	})
	if err != nil {
		n := 0
		for _, ok := range converged {
			if ok {
				n++
			}
		}
		return fmt.Errorf("%w (%d of %d agents converged)", err, n, o.Nodes)
	}
	r.rep.GossipConvergedS = r.since()
	o.Logf("gossip converged after %.1f s", r.rep.GossipConvergedS)

	err = poll(ctx, o.Wait, every, "layout", func(ctx context.Context) (bool, error) {
		noteLeader(ctx)
		nodes, err := r.nodes(ctx)
		if err != nil {
			return false, err
		}
		l := CountLayout(nodes)
		r.rep.Layout = l
		if l.Up == o.Nodes && r.rep.RegisteredS == 0 {
			r.rep.RegisteredS = r.since()
		}
		if !Settled(l, o.Nodes, o.Voters, o.Servers) {
			return false, fmt.Errorf("%d up, %d voters, %d nonvoters, %d workers; want %d up, %d voters, %d servers",
				l.Up, l.Voters, l.Nonvoters, l.Workers, o.Nodes, o.Voters, o.Servers)
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	r.rep.LayoutSettledS = r.since()
	o.Logf("layout settled after %.1f s: %+v", r.rep.LayoutSettledS, r.rep.Layout)
	return nil
}

// nodes asks the first running agent that answers for the node list.
func (r *run) nodes(ctx context.Context) ([]api.Node, error) {
	var last error
	for i, a := range r.agents {
		if !r.f.running(i) {
			continue
		}
		nodes, err := call(ctx, 5*time.Second, a.Client().Nodes)
		if err == nil {
			return nodes, nil
		}
		last = fmt.Errorf("%s: nodes: %w", a.Name, err)
	}
	return nil, cmp.Or(last, errors.New("no agent is running"))
}

// leader returns the index of the agent that leads, asking a running one.
func (r *run) leader(ctx context.Context) (int, string, error) {
	for i, a := range r.agents {
		if !r.f.running(i) {
			continue
		}
		l, err := call(ctx, 5*time.Second, a.Client().Leader)
		if err != nil || l.Name == "" {
			continue
		}
		i := slices.IndexFunc(r.agents, func(a *localcluster.Agent) bool { return a.Name == l.Name })
		if i < 0 {
			return 0, "", fmt.Errorf("leader %q is none of the agents", l.Name)
		}
		return i, l.Name, nil
	}
	return 0, "", errors.New("no running agent names a leader")
}

// applied is the leader's applied raft index.
func (r *run) applied(ctx context.Context) (uint64, error) {
	li, _, err := r.leader(ctx)
	if err != nil {
		return 0, err
	}
	st, err := call(ctx, 5*time.Second, r.agents[li].Client().Status)
	if err != nil {
		return 0, fmt.Errorf("%s: status: %w", r.agents[li].Name, err)
	}
	return st.AppliedIndex, nil
}

// follower returns a client of an agent that does not lead.
func (r *run) follower(ctx context.Context) (*api.Client, error) {
	li, _, err := r.leader(ctx)
	if err != nil {
		return nil, err
	}
	return r.agents[(li+1)%len(r.agents)].Client(), nil
}

// viaFollower makes a step of fn, which talks to the cluster through cl, a
// client of a follower chosen when the step starts.
func (r *run) viaFollower(fn func(context.Context, *api.Client) error) func(context.Context) error {
	return func(ctx context.Context) error {
		cl, err := r.follower(ctx)
		if err != nil {
			return err
		}
		defer cl.CloseIdleConnections()
		return fn(ctx, cl)
	}
}

type restSample struct {
	// ticks is the CPU time of every process the agents run in (procs),
	// by pid; 0 when unreadable.
	ticks map[int]uint64
	tcp   map[string]tcpBytes
	lo    uint64
	at    time.Time
}

// cpuPercent is process pid's CPU between two samples, in percent of a
// core.
func cpuPercent(a, b restSample, pid int) float64 {
	secs := b.at.Sub(a.at).Seconds()
	if secs <= 0 || b.ticks[pid] < a.ticks[pid] {
		return 0
	}
	return float64(b.ticks[pid]-a.ticks[pid]) / clockTicks / secs * 100
}

// cpuPercents is agent li's CPU and all agents' together; the leader's
// is -1 when it shares its process (not told apart).
func (r *run) cpuPercents(a, b restSample, li int) (leader, all float64) {
	for pid := range b.ticks {
		all += cpuPercent(a, b, pid)
	}
	if r.f.shared(li) {
		return -1, all
	}
	return cpuPercent(a, b, r.f.pid(li)), all
}

// procs are the processes the agents run in, each once: an agent's own,
// and this one when some run in it.
func (r *run) procs() []int {
	var pids []int
	self := false
	for i := range r.agents {
		if r.f.shared(i) {
			self = true
			continue
		}
		pids = append(pids, r.f.pid(i))
	}
	if self {
		pids = append(pids, os.Getpid())
	}
	return pids
}

// sharedAgents counts the agents that run in this process.
func (r *run) sharedAgents() int {
	n := 0
	for i := range r.agents {
		if r.f.shared(i) {
			n++
		}
	}
	return n
}

// sample reads the CPU time of every process the agents run in, the TCP
// sockets of agent li (none when li < 0) and the loopback counter.
func (r *run) sample(li int) restSample {
	s := restSample{at: time.Now(), ticks: map[int]uint64{}}
	for _, pid := range r.procs() {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			s.ticks[pid] = 0
			continue
		}
		s.ticks[pid], _ = parseStatTicks(string(b))
	}
	if li < 0 {
		return s
	}
	if out, err := osexec.Command("ss", "-tinpH").Output(); err == nil {
		if r.f.shared(li) {
			s.tcp = parseSSPorts(string(out), r.leaderPorts(li))
		} else {
			s.tcp = parseSS(string(out), r.f.pid(li))
		}
	}
	if b, err := os.ReadFile("/proc/net/dev"); err == nil {
		s.lo, _ = parseLoopbackBytes(string(b))
	}
	return s
}

// leaderPorts tells agent li's sockets apart in a process of many: those
// on its own ports (what it serves: HTTP, raft, gossip's TCP) and those
// it opened to another agent's raft port (its replication; at rest only
// the leader dials raft ports).
func (r *run) leaderPorts(li int) sockFilter {
	f := sockFilter{local: map[int]bool{}, peer: map[int]bool{}}
	for i, a := range r.agents {
		if i == li {
			f.local[a.HTTPPort], f.local[a.RaftPort], f.local[a.GossipPort] = true, true, true
		} else {
			f.peer[a.RaftPort] = true
		}
	}
	return f
}

// rest lets the cluster stand still, then measures its cost.
func (r *run) rest(ctx context.Context) error {
	o := r.o
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(o.Settle):
	}
	li, name, err := r.leader(ctx)
	if err != nil {
		return err
	}
	r.rep.Leader = name
	i0, err := r.applied(ctx)
	if err != nil {
		return err
	}
	renewals0, _, err := r.leaseFigures(ctx, r.agents[li])
	if err != nil {
		return err
	}
	stopProfile, err := r.restProfile()
	if err != nil {
		return err
	}
	a := r.sample(li)
	select {
	case <-ctx.Done():
		stopProfile()
		return ctx.Err()
	case <-time.After(o.Rest):
	}
	b := r.sample(li)
	stopProfile()
	renewals1, ttl, err := r.leaseFigures(ctx, r.agents[li])
	if err != nil {
		return err
	}
	i1, err := r.applied(ctx)
	if err != nil {
		return err
	}
	if li2, _, err := r.leader(ctx); err != nil || li2 != li {
		return fmt.Errorf("the leader changed while the cluster stood still (%v)", err)
	}
	secs := b.at.Sub(a.at).Seconds()
	r.rep.RestS = secs
	for pid, t := range a.ticks {
		if t == 0 || b.ticks[pid] < t {
			return fmt.Errorf("process %d: no CPU time readable from /proc", pid)
		}
	}
	r.rep.LeaderCPUPercent, r.rep.ClusterCPUPercent = r.cpuPercents(a, b, li)
	r.rep.FollowerCPUPercentMedian = -1
	var follower []float64
	for i := range r.agents {
		if i != li && !r.f.shared(i) {
			follower = append(follower, cpuPercent(a, b, r.f.pid(i)))
		}
	}
	if len(follower) > 0 {
		slices.Sort(follower)
		r.rep.FollowerCPUPercentMedian = follower[len(follower)/2]
	}
	if r.rep.SharedAgents = r.sharedAgents(); r.rep.SharedAgents > 0 {
		r.rep.SharedCPUPercent = cpuPercent(a, b, os.Getpid())
	}
	total := r.rep.ClusterCPUPercent
	r.rep.LeaderTCPBytesPerS = -1
	if a.tcp != nil && b.tcp != nil {
		r.rep.LeaderTCPBytesPerS = float64(tcpDelta(a.tcp, b.tcp)) / secs
	}
	r.rep.LoopbackBytesPerS = float64(b.lo-a.lo) / secs
	r.rep.RaftEntriesPerS = float64(i1-i0) / secs
	r.rep.LeaderRenewalsPerS, r.rep.LeaseTTLS = (renewals1-renewals0)/secs, ttl

	rssOf := func(pid int, name string) (float64, error) {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return 0, fmt.Errorf("agent %s: %w", name, err)
		}
		v, err := parseVmRSS(string(st))
		if err != nil {
			return 0, fmt.Errorf("agent %s: %w", name, err)
		}
		return float64(v) / (1 << 20), nil
	}
	r.rep.RSSMiBLeader = -1
	var rss []float64
	for i, ag := range r.agents {
		if r.f.shared(i) {
			continue
		}
		mib, err := rssOf(r.f.pid(i), ag.Name)
		if err != nil {
			return err
		}
		rss = append(rss, mib)
		if i == li {
			r.rep.RSSMiBLeader = mib
		}
	}
	if n := r.rep.SharedAgents; n > 0 {
		mib, err := rssOf(os.Getpid(), "all")
		if err != nil {
			return err
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		r.rep.ProcessRSSMiB, r.rep.HeapInuseMiB = mib, float64(ms.HeapInuse)/(1<<20)
		r.rep.SharedRSSMiB = mib / float64(n)
	}
	if len(rss) > 0 {
		slices.Sort(rss)
		r.rep.RSSMiBMedian, r.rep.RSSMiBMax = rss[len(rss)/2], rss[len(rss)-1]
	} else { // every agent in this process
		r.rep.RSSMiBMedian, r.rep.RSSMiBMax = r.rep.SharedRSSMiB, r.rep.SharedRSSMiB
	}
	if err := r.scrape(ctx, r.agents[li]); err != nil {
		return err
	}
	o.Logf("at rest: leader %s %.1f%% CPU, cluster %.0f%%, RSS median %.0f MiB", name, r.rep.LeaderCPUPercent, total, r.rep.RSSMiBMedian)
	return nil
}

// restProfile starts the CPU profile of the at-rest window when asked
// (in-process runs) and returns what stops it.
func (r *run) restProfile() (stop func(), err error) {
	if r.o.RestProfile == "" || r.sharedAgents() == 0 {
		return func() {}, nil
	}
	f, err := os.Create(r.o.RestProfile)
	if err != nil {
		return nil, fmt.Errorf("rest profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("rest profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// leaseFigures reads a's lease renewals answered as leader and the TTL of
// its own lease (0 before its first renewal) from its /metrics.
func (r *run) leaseFigures(ctx context.Context, a *localcluster.Agent) (renewals, ttl float64, err error) {
	body, err := r.metricsOf(ctx, a)
	if err != nil {
		return 0, 0, err
	}
	renewals, err = sampleValue(body, metrics.LeaseRenewals)
	if err != nil {
		return 0, 0, fmt.Errorf("agent %s: %w", a.Name, err)
	}
	ttl, _ = sampleValue(body, metrics.NodeLeaseTTL) // absent before the first renewal
	return renewals, ttl, nil
}

// metricsOf is GET /metrics on a, over its Unix socket.
func (r *run) metricsOf(ctx context.Context, a *localcluster.Agent) (string, error) {
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", a.Socket())
		},
	}}
	defer hc.CloseIdleConnections()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, "http://agent/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("metrics of %s: %w", a.Name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("metrics of %s: %w", a.Name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("metrics of %s: %s: %.200s", a.Name, resp.Status, body)
	}
	return string(body), nil
}

// sampleValue is the value of the unlabelled sample name in a Prometheus
// text exposition.
func sampleValue(exposition, name string) (float64, error) {
	for line := range strings.Lines(exposition) {
		rest, ok := strings.CutPrefix(line, name+" ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		if err != nil {
			return 0, fmt.Errorf("metric %s: %q: %w", name, strings.TrimSpace(line), err)
		}
		return v, nil
	}
	return 0, fmt.Errorf("metric %s: not in the exposition", name)
}

// scrapes is how many times rest scrapes the leader's /metrics.
const scrapes = 20

// scrape times GET /metrics on a, as Prometheus would scrape it.
func (r *run) scrape(ctx context.Context, a *localcluster.Agent) error {
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", a.Socket())
		},
	}}
	defer hc.CloseIdleConnections()
	var took []time.Duration
	for range scrapes {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, "http://agent/metrics", nil)
		if err != nil {
			cancel()
			return err
		}
		t0 := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			cancel()
			return fmt.Errorf("scrape %s: %w", a.Name, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if err != nil {
			return fmt.Errorf("scrape %s: %w", a.Name, err)
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("scrape %s: %s: %.200s", a.Name, resp.Status, body)
		}
		took = append(took, time.Since(t0))
		r.rep.ScrapeBytes, r.rep.ScrapeSamples = len(body), sampleLines(string(body))
	}
	r.rep.Scrape = Summarize(took)
	return nil
}

// sampleLines counts an exposition's samples (lines not comments).
func sampleLines(exposition string) int {
	n := 0
	for line := range strings.Lines(exposition) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			n++
		}
	}
	return n
}

func newRequestID() string {
	return fmt.Sprintf("scale-%d-%d", os.Getpid(), reqSeq.Add(1))
}

var reqSeq atomic.Uint64

// throughput submits held jobs through a follower from several clients,
// then cancels them.
func (r *run) throughput(ctx context.Context, cl *api.Client) error {
	o := r.o
	ctx, cancel := context.WithTimeout(ctx, o.Wait)
	defer cancel()
	var failed atomic.Int64
	var firstErr error
	var mu sync.Mutex
	ids := make([][]uint64, o.Clients)
	per := o.Submits / o.Clients
	i0, err := r.applied(ctx)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	li, _, err := r.leader(ctx)
	if err != nil {
		return err
	}
	before := r.sample(-1)
	t0 := time.Now()
	for c := range o.Clients {
		wg.Go(func() {
			for range per {
				res, err := cl.Submit(ctx, api.SubmitRequest{RequestID: newRequestID(), Name: "scale-tp", Nodes: 1, GPUsPerNode: 1,
					Command: []string{"true"}, WorkDir: "/", Hold: true}, 10*time.Second)
				if err != nil {
					failed.Add(1)
					mu.Lock()
					firstErr = cmp.Or(firstErr, err)
					mu.Unlock()
					continue
				}
				ids[c] = append(ids[c], res.ID)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(t0)
	after := r.sample(-1)
	r.rep.SubmitsLeaderCPUPercent, r.rep.SubmitsClusterCPUPercent = r.cpuPercents(before, after, li)
	r.rep.SubmitClients = o.Clients
	r.rep.SubmitsFailed = int(failed.Load())
	r.rep.SubmitsPerS = float64(per*o.Clients-r.rep.SubmitsFailed) / elapsed.Seconds()
	if i1, err := r.applied(ctx); err == nil && per*o.Clients > r.rep.SubmitsFailed {
		r.rep.RaftEntriesPerSubmit = float64(i1-i0) / float64(per*o.Clients-r.rep.SubmitsFailed)
	}
	for c := range o.Clients {
		wg.Go(func() {
			for _, id := range ids[c] {
				_ = cl.Cancel(ctx, id)
			}
		})
	}
	wg.Wait()
	if r.rep.SubmitsFailed > 0 {
		return fmt.Errorf("%d of %d submits failed: %w", r.rep.SubmitsFailed, per*o.Clients, firstErr)
	}
	return nil
}

// timestamps reads the `date +%s.%N` lines a job's ranks printed.
// limit bounds the call: a job's logs are gathered from each of its nodes.
func timestamps(ctx context.Context, cl *api.Client, id uint64, limit time.Duration) ([]time.Time, error) {
	chunks, err := call(ctx, limit, func(ctx context.Context) ([]api.LogChunk, error) { return cl.Logs(ctx, id) })
	if err != nil {
		return nil, err
	}
	var ts []time.Time
	for _, ch := range chunks {
		if ch.Stream != "stdout" {
			continue
		}
		for line := range strings.Lines(ch.Data) {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			secs, err := strconv.ParseFloat(line, 64)
			if err != nil || math.IsNaN(secs) {
				return nil, fmt.Errorf("job %d printed %q, want a timestamp", id, line)
			}
			ts = append(ts, time.Unix(0, int64(secs*1e9)))
		}
	}
	return ts, nil
}

// waitJob follows a job with blocking queries until it is terminal,
// calling running once when it is first seen past PENDING.
func waitJob(ctx context.Context, cl *api.Client, id uint64, limit time.Duration, running func()) (api.Job, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var index uint64
	seen := false
	for {
		j, idx, err := cl.WaitJob(ctx, id, index, 5*time.Second)
		if err != nil {
			return j, fmt.Errorf("wait for job %d: %w", id, err)
		}
		if !seen && j.State != "PENDING" {
			seen = true
			if running != nil {
				running()
			}
		}
		switch j.State {
		case "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL", "DEADLINE":
			return j, nil
		}
		index = idx
	}
}

// latency submits 2-node jobs that print their start time through a
// follower, one at a time.
func (r *run) latency(ctx context.Context, cl *api.Client) error {
	o := r.o
	var samples []time.Duration
	i0, err := r.applied(ctx)
	if err != nil {
		return err
	}
	for range o.LatencyRuns {
		t0 := time.Now()
		res, err := cl.Submit(ctx, api.SubmitRequest{RequestID: newRequestID(), Name: "scale-lat", Nodes: 2, GPUsPerNode: 1,
			Command: []string{"/bin/sh", "-c", "date +%s.%N"}, WorkDir: "/"}, 10*time.Second)
		if err != nil {
			return err
		}
		j, err := waitJob(ctx, cl, res.ID, time.Minute, nil)
		if err != nil {
			return err
		}
		if j.State != "COMPLETED" {
			return fmt.Errorf("job %d ended %s", res.ID, j.State)
		}
		ts, err := timestamps(ctx, cl, res.ID, 10*time.Second)
		if err != nil {
			return err
		}
		if len(ts) != 2 {
			return fmt.Errorf("job %d: %d rank timestamps, want 2", res.ID, len(ts))
		}
		samples = append(samples, slices.MinFunc(ts, time.Time.Compare).Sub(t0))
	}
	r.rep.SubmitToStart = Summarize(samples)
	if i1, err := r.applied(ctx); err == nil {
		r.rep.RaftEntriesPerJob = float64(i1-i0) / float64(o.LatencyRuns)
	}
	return nil
}

// gang runs one job over GangNodes nodes, a rank on each.
func (r *run) gang(ctx context.Context, cl *api.Client) error {
	o := r.o
	g := &r.rep.Gang
	g.Nodes = o.GangNodes
	t0 := time.Now()
	res, err := cl.Submit(ctx, api.SubmitRequest{RequestID: newRequestID(), Name: "scale-gang", Nodes: o.GangNodes, GPUsPerNode: 1,
		Command: []string{"/bin/sh", "-c", "date +%s.%N"}, WorkDir: "/"}, 10*time.Second)
	if err != nil {
		return err
	}
	j, err := waitJob(ctx, cl, res.ID, o.Wait, func() { g.PlacedS = time.Since(t0).Seconds() })
	if err != nil {
		return err
	}
	g.CompletedS = time.Since(t0).Seconds()
	g.State = j.State
	if j.State != "COMPLETED" {
		return fmt.Errorf("gang job %d ended %s", res.ID, j.State)
	}
	if n := len(j.Nodes); n != o.GangNodes {
		return fmt.Errorf("gang job %d ran on %d nodes, want %d", res.ID, n, o.GangNodes)
	}
	// A second a node at least: 64 workers at a low priority took more
	// than 10 s to hand their logs over on a loaded box.
	ts, err := timestamps(ctx, cl, res.ID, min(o.Wait, max(10*time.Second, time.Duration(o.GangNodes)*time.Second)))
	if err != nil {
		return err
	}
	g.Ranks = len(ts)
	if len(ts) != o.GangNodes {
		return fmt.Errorf("gang job %d: %d rank timestamps, want %d", res.ID, len(ts), o.GangNodes)
	}
	g.AllStartedS = slices.MaxFunc(ts, time.Time.Compare).Sub(t0).Seconds()
	o.Logf("gang of %d: placed %.2f s, all started %.2f s", o.GangNodes, g.PlacedS, g.AllStartedS)
	return nil
}

// failover kills the leader with SIGKILL and times the election, every
// survivor's learning of it and the first submit through a survivor.
func (r *run) failover(ctx context.Context) error {
	o := r.o
	li, old, err := r.leader(ctx)
	if err != nil {
		return err
	}
	fo := &r.rep.Failover
	fo.OldLeader = old
	var survivors []*localcluster.Agent
	var names []string
	for i, a := range r.agents {
		if i != li {
			survivors = append(survivors, a)
			names = append(names, a.Name)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, o.Wait)
	defer cancel()
	sub := survivors[0].Client()
	defer sub.CloseIdleConnections()
	req := api.SubmitRequest{RequestID: newRequestID(), Name: "scale-fo", Nodes: 1, Command: []string{"true"}, WorkDir: "/", Hold: true}

	t0 := time.Now()
	if err := r.f.kill(li); err != nil {
		return err
	}
	submitted := make(chan error, 1)
	go func() {
		for {
			_, err := call(ctx, 2*time.Second, func(ctx context.Context) (api.SubmitResponse, error) { return sub.Submit(ctx, req, 0) })
			if err == nil {
				fo.SubmitOKS = time.Since(t0).Seconds()
				submitted <- nil
				return
			}
			select {
			case <-ctx.Done():
				submitted <- fmt.Errorf("no submit through %s succeeded: %w", survivors[0].Name, err)
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()

	var view leaderView
	var mu sync.Mutex
	var rounds int
	err = poll(ctx, o.Wait, 50*time.Millisecond, "every survivor names one new leader", func(ctx context.Context) (bool, error) {
		rounds++
		each(survivors, func(a *localcluster.Agent) {
			cl := a.Client()
			defer cl.CloseIdleConnections()
			st, err := call(ctx, 2*time.Second, cl.Status)
			at := time.Since(t0)
			if err != nil {
				return
			}
			mu.Lock()
			view.observe(a.Name, st.Leader, at)
			mu.Unlock()
		})
		mu.Lock()
		defer mu.Unlock()
		leader, first, all, ok := view.agreed(names, old)
		if ok {
			fo.NewLeader, fo.ElectedS, fo.AllSeeS = leader, first.Seconds(), all.Seconds()
		}
		return ok, nil
	})
	if rounds > 0 {
		fo.ResolutionS = time.Since(t0).Seconds() / float64(rounds)
	}
	if err != nil {
		return err
	}
	if err := <-submitted; err != nil {
		return err
	}
	o.Logf("failover: %s elected after %.2f s, every agent knew at %.2f s, submit at %.2f s",
		fo.NewLeader, fo.ElectedS, fo.AllSeeS, fo.SubmitOKS)
	return nil
}

// DefaultDir is a fresh directory for a run's agents under the system's
// temporary directory.
func DefaultDir() (string, error) {
	return os.MkdirTemp("", "shoal-scale-")
}
