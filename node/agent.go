package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/netutil"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/consensus"
	"github.com/shoal-sched/shoal/datadir"
	"github.com/shoal-sched/shoal/exec"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/gossip"
	"github.com/shoal-sched/shoal/httpapi"
	"github.com/shoal-sched/shoal/leader"
	"github.com/shoal-sched/shoal/metrics"
	"github.com/shoal-sched/shoal/pki"
	"github.com/shoal-sched/shoal/worker"
)

// Agent is one running Shoal node.
type Agent struct {
	cfg  Config
	log  *slog.Logger
	dir  *datadir.Dir
	self cluster.Node
	// cgroup is the tasks' confinement (--cgroups); its root nil: none.
	cgroup cgroupSetup

	// leaveReq carries `shoal leave`: stop as SIGTERM would, draining
	// for the given time first (<0: the agent's own --drain-on-stop).
	leaveReq chan time.Duration

	// sec is the node's TLS material; its bundle is nil with --insecure.
	sec *security

	state  *fsm.State
	raft   *consensus.Raft
	gossip *gossip.Gossip
	exec   *exec.Executor

	httpLn net.Listener
	unixLn net.Listener
	server *http.Server

	peers peerClients

	leases leaseTable
	// lease is this node's lease (lessee.Lease): when the last heartbeat
	// the leader acknowledged was sent, the TTL the leader granted with it
	// (the fence deadline is their sum), and the leader's applied index
	// in that acknowledgement, from which ranks start only on a replica at
	// least that far (startAllowed). Nil until the first: a starting
	// agent holds no lease. One pointer, so a reader sees the three of one
	// renewal.
	lease atomic.Pointer[worker.Lease]

	// ready is set once the replica has caught up after start (caughtUp).
	ready atomic.Bool
	// remote is what this node knows from the servers while it is a
	// worker, outside the raft configuration (follow.go).
	remote remote
	// http is the HTTP API's front (authentication, leader forwarding,
	// the read floor); this agent is its backend (apiBackend).
	http *httpapi.Server
	// metrics is the /metrics exposition (metrics.go); the counters
	// below are read into it at scrape time.
	metrics                          *metrics.Metrics
	placements, preemptions, fencing atomic.Uint64
	// renewals counts the heartbeats this agent answered as leader.
	renewals atomic.Uint64
	// gpuSample is the last GPU sample (agentGPUs); nil before it.
	gpuSample atomic.Pointer[metrics.GPUReading]
	// gpuUsage is what each job's GPUs here did so far (gpuSampler).
	gpuUsage worker.GPUUsage
	// scripts are the runs whose --prolog or --epilog ran here (prolog.go).
	scripts scriptRuns
	// shimDir holds srun, scontrol and sbatch links to this binary, put
	// first on the PATH of batch scripts and steps.
	shimDir string
	// topo is the node's place now: the operator's, merged with what
	// discovery found (topology.go).
	topo currentTopology
	// crash is Crash's (crash.go).
	crash crash
}

// New opens the data dir, the raft stores, gossip, the executor and the
// listeners. Nothing runs until Run. On error everything opened is closed.
func New(ctx context.Context, cfg Config) (a *Agent, err error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger.With("node", cfg.Name)
	a = &Agent{cfg: cfg, log: log, leaveReq: make(chan time.Duration, 1), crash: crash{done: make(chan struct{})}}
	a.topo.set(cfg.Topology)
	var closers []func()
	defer func() {
		if err != nil {
			for i := len(closers) - 1; i >= 0; i-- {
				closers[i]()
			}
		}
	}()

	if a.dir, err = datadir.Open(cfg.DataDir, cfg.Name); err != nil {
		return nil, err
	}
	closers = append(closers, a.dir.Close)

	a.self = cluster.Node{
		Name:       cfg.Name,
		APIAddr:    cfg.apiAdvert(),
		RaftAddr:   cfg.raftAdvert(),
		GossipAddr: cfg.gossipAdvert(),
		GPUs:       cfg.GPUs,
		CPUs:       cfg.CPUs,
		MemoryMiB:  cfg.MemoryMiB,
		Topology:   cfg.Topology,
		Features:   cfg.Features,
		Version:    cfg.Version,
	}
	// The CPU layout, so the leader places CPUs by socket.
	a.self.Sockets, a.self.CoresPerSocket, a.self.ThreadsPerCore = cfg.Sockets, cfg.CoresPerSocket, cfg.ThreadsPerCore

	_, statErr := os.Stat(filepath.Join(cfg.DataDir, "raft"))
	if a.sec, err = setupSecurity(ctx, &a.cfg, statErr == nil, log); err != nil {
		return nil, err
	}

	if a.httpLn, err = net.Listen("tcp", cfg.httpAddr()); err != nil {
		return nil, fmt.Errorf("--http-port %d: listen on %s: %w", cfg.HTTPPort, cfg.httpAddr(), err)
	}
	closers = append(closers, func() { a.httpLn.Close() })
	a.httpLn = netutil.LimitListener(a.httpLn, maxHTTPConns)
	if b := a.sec.bundle; b != nil {
		// The API on TCP is TLS only: nodes present their certificate,
		// users a token over a server they verify against the CA.
		a.httpLn = tls.NewListener(a.httpLn, b.ServerConfig(false))
	}
	sock := a.SocketPath()
	if err := os.MkdirAll(filepath.Dir(sock), 0o755); err != nil {
		return nil, fmt.Errorf("--socket %s: %w", sock, err)
	}
	_ = os.Remove(sock) // stale from a crash; the data dir lock proves no agent owns it
	if a.unixLn, err = net.Listen("unix", sock); err != nil {
		return nil, fmt.Errorf("listen on %s: %w", sock, err)
	}
	// Under root anyone may connect: SO_PEERCRED tells us who they are,
	// and their tasks run as them. An agent that is not root runs every
	// task as its own user, so only that user may reach it.
	sockMode := os.FileMode(0o666)
	if os.Geteuid() != 0 {
		sockMode = 0o600
	}
	if err := os.Chmod(sock, sockMode); err != nil {
		return nil, fmt.Errorf("socket %s: %w", sock, err)
	}
	closers = append(closers, func() { a.unixLn.Close() })

	a.state = fsm.New()
	if b := a.sec.bundle; b != nil {
		b.SetRevoked(a.revokedCheck)
	}
	rc := consensus.Config{
		ID:            cfg.Name,
		DataDir:       cfg.DataDir,
		BindAddr:      cfg.raftBind(),
		AdvertiseAddr: cfg.raftAdvert(),
		FSM:           a.state,
		Logger:        log.With("component", "raft"),
		Timing:        cfg.RaftTiming,
	}
	if b := a.sec.bundle; b != nil {
		// Raft is mutual TLS: only nodes certified by the cluster CA can
		// send or receive entries, votes or snapshots.
		if rc.StreamLayer, err = consensus.NewTLSStream(cfg.raftBind(), cfg.raftAdvert(), b.ServerConfig(true), b.ClientConfig("")); err != nil {
			return nil, fmt.Errorf("--raft-port %d: %w", cfg.RaftPort, err)
		}
	}
	a.raft, err = consensus.Open(ctx, rc)
	if err != nil {
		if rc.StreamLayer != nil {
			rc.StreamLayer.Close()
		}
		return nil, fmt.Errorf("open raft: %w", err)
	}
	closers = append(closers, func() { _ = a.raft.Shutdown() })

	a.gossip, err = gossip.New(gossip.Config{
		Name:          cfg.Name,
		BindAddr:      cfg.BindAddr,
		BindPort:      cfg.GossipPort,
		AdvertiseAddr: cfg.AdvertiseAddr,
		AdvertisePort: cfg.GossipPort,
		Meta:          a.meta(a.raft.HasState()),
		Keys:          a.sec.gossipKeys,
		Logger:        log.With("component", "gossip"),
	})
	if err != nil {
		return nil, fmt.Errorf("start gossip on port %d: %w", cfg.GossipPort, err)
	}
	closers = append(closers, func() { _ = a.gossip.Shutdown() })

	// From here on a.cfg.TaskHelper is set only if tasks get namespaces.
	if a.cfg.TaskHelper, err = cfg.taskNamespace(log); err != nil {
		return nil, err
	}
	protectFromOOM(log)
	if a.cgroup, err = cfg.cgroups(log); err != nil {
		return nil, err
	}
	ociRuntime, err := cfg.ociRuntime(log)
	if err != nil {
		return nil, err
	}
	a.exec, err = exec.New(ctx, exec.Config{
		OCIRuntime:    ociRuntime,
		Cgroup:        a.cgroup.root,
		HostCPUs:      a.cgroup.hostCPUs,
		TaskPidsMax:   cfg.TaskPidsMax,
		TaskNamespace: a.cfg.TaskHelper,
		TaskExec:      cfg.TaskExec,
		AgentSocket:   absPath(sock),
		DataDir:       filepath.Join(cfg.DataDir, "exec"),
		NodeName:      cfg.Name,
		KillGrace:     cfg.KillGrace,
		KillWait:      cfg.KillWait,
		LeaseTTL:      cfg.watchdogTTL(),
		Logger:        log.With("component", "exec"),
	})
	if err != nil {
		return nil, fmt.Errorf("start executor: %w", err)
	}

	if a.shimDir, err = makeShimDir(cfg.DataDir); err != nil {
		return nil, err
	}
	a.peers = peerClients{clients: map[string]*api.Client{}, bundle: a.sec.bundle}
	a.http = httpapi.NewServer(apiBackend{a}, a.log)
	a.metrics = a.newMetrics()
	a.server = &http.Server{
		Handler:     a.http.Handler(a.routes()),
		ConnContext: httpapi.PeerCredConnContext,
		// Bounds against clients that open connections and dawdle: the
		// header and body must arrive promptly, an answer (a blocking
		// query included) is written within its longest wait, and idle
		// keep-alive connections close.
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      httpapi.MaxWait + 30*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.With("component", "http").Handler(), slog.LevelWarn),
	}
	a.server.RegisterOnShutdown(a.http.CloseRelays)
	return a, nil
}

func (a *Agent) meta(hasRaftState bool) gossip.Meta {
	topo := a.topology()
	m := gossip.Meta{
		APIAddr:         a.cfg.apiAdvert(),
		RaftAddr:        a.cfg.raftSeat(),
		GPUs:            len(a.cfg.GPUs),
		CPUs:            a.cfg.CPUs,
		MemoryMiB:       a.cfg.MemoryMiB,
		Switch:          topo.Switch,
		SwitchParent:    topo.SwitchParent,
		Block:           topo.Block,
		Features:        strings.Join(a.cfg.Features, ","),
		Version:         a.cfg.Version[:min(len(a.cfg.Version), gossip.MaxVersionLen)],
		Protocol:        a.cfg.protocol(),
		BootstrapExpect: a.bootstrapExpect(),
		HasRaftState:    hasRaftState,
		LeaseStretch:    leader.MaxLeaseStretch,
	}
	if len(a.cfg.GPUs) > 0 {
		// Gossip only summarises the model; the FSM's record has it whole.
		m.GPUModel = a.cfg.GPUs[0].Model[:min(len(a.cfg.GPUs[0].Model), gossip.MaxModelLen)]
		m.GPUMemoryMiB = a.cfg.GPUs[0].MemoryMiB
	}
	return m
}

// bootstrapExpect is the --bootstrap-expect in force: a lone agent (no
// --join, no --bootstrap-expect) is a one-node cluster.
func (a *Agent) bootstrapExpect() int {
	if a.cfg.BootstrapExpect == 0 && len(a.cfg.Join) == 0 {
		return 1
	}
	return a.cfg.BootstrapExpect
}

// Name is the node's name.
func (a *Agent) Name() string { return a.cfg.Name }

// SocketPath is the agent's Unix socket.
func (a *Agent) SocketPath() string {
	if a.cfg.SocketPath != "" {
		return a.cfg.SocketPath
	}
	return a.dir.SocketPath()
}

// Run runs the agent until ctx ends or a fatal error (such as a name
// conflict found while joining), then shuts everything down.
func (a *Agent) Run(parent context.Context) error {
	// The agent's loops run until the stop is carried out, which with
	// DrainOnStop is a while after parent ends.
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	defer cancel(nil)
	var wg sync.WaitGroup
	wg.Go(func() {
		d, cause := a.cfg.DrainOnStop, error(nil)
		select {
		case <-ctx.Done():
			return
		case <-parent.Done():
			cause = context.Cause(parent)
		case <-a.crash.done:
			cancel(errCrashed)
			return
		case wait := <-a.leaveReq:
			a.log.Info("leaving on request (shoal leave)")
			if wait >= 0 {
				d = wait
			}
		}
		if d > 0 && !a.cfg.KeepTasksOnStop {
			a.drainBeforeStop(ctx, d)
		}
		cancel(cause)
	})

	// HTTP servers; stopped by Shutdown below.
	for _, ln := range []net.Listener{a.httpLn, a.unixLn} {
		wg.Go(func() {
			if err := a.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				cancel(fmt.Errorf("serve %s: %w", ln.Addr(), err))
			}
		})
	}
	if len(a.cfg.Join) > 0 {
		wg.Go(func() {
			if err := a.gossip.Join(ctx, a.cfg.Join); err != nil && ctx.Err() == nil {
				cancel(fmt.Errorf("join %v: %w", a.cfg.Join, err))
			}
		})
	}
	wg.Go(func() { a.bootstrapper().Run(ctx) })
	wg.Go(func() { a.lead().Run(ctx) })
	wg.Go(func() { a.heartbeater().Run(ctx) })
	wg.Go(func() { a.driver().Run(ctx) })
	wg.Go(func() { a.follower().Run(ctx) })
	wg.Go(func() { a.reporter().Run(ctx) })
	wg.Go(func() { gossip.LogEvents(ctx, a.gossip.Events(), a.log) })
	if a.sec.bundle != nil { // TLS on
		wg.Go(func() { a.renewer().Run(ctx) })
		wg.Go(func() { a.keyringFollower().Run(ctx) })
	}
	if offer, ok := a.caOffer(); ok {
		wg.Go(func() { a.caOfferer(offer).Run(ctx) })
	}
	wg.Go(func() { a.cleaner().Run(ctx) })
	wg.Go(func() { a.discoverer().Run(ctx, a.topology()) })
	if a.cfg.GPUSampler != nil {
		wg.Go(func() { a.gpuSampler().Run(ctx) })
	}
	if failpointDiverge { // a fault injected in test builds only: see failpoint_diverge_off.go
		wg.Go(func() { a.failpointDivergeLoop(ctx) })
	}

	a.log.Info("agent started", "api", a.cfg.apiAdvert(), "raft", a.cfg.raftAdvert(),
		"gossip", a.cfg.gossipAdvert(), "socket", a.SocketPath(), "gpus", len(a.cfg.GPUs))
	<-ctx.Done()
	cause := context.Cause(ctx)
	if errors.Is(cause, context.Canceled) {
		cause = nil
	}
	a.shutdown(&wg)
	return cause
}

// shutdown hands leadership over if it leads, stops the ranks on this node
// (a job with --requeue runs again elsewhere), reports their exits, says
// goodbye to gossip — the leader then removes this node from the raft
// configuration — and closes raft and the listeners, in that order: no
// rank outlives the agent that answers for it.
//
// With KeepTasksOnStop it stops for a restart instead, as slurmd does:
// the ranks run on under their supervisors, the node neither leaves nor
// announces it, and the next agent on this data dir reattaches to them;
// if none renews the lease within the TTL the leader granted its last
// renewal, the supervisors fence them.
func (a *Agent) shutdown(wg *sync.WaitGroup) {
	if a.crashed() {
		a.shutdownCrashed(wg)
		return
	}
	a.log.Info("agent stopping")
	// Hand leadership over first, so the cluster keeps a leader while we
	// stop (no election timeout to wait out) and our exit reports below
	// reach it.
	if a.raft.IsLeader() {
		tctx, cancelTransfer := context.WithTimeout(context.Background(), 5*time.Second)
		if err := a.raft.TransferLeadership(tctx); err != nil {
			a.log.Warn("hand leadership over", "err", err)
		} else {
			a.log.Info("handed leadership over")
		}
		cancelTransfer()
	}
	keep := a.cfg.KeepTasksOnStop
	if keep {
		a.log.Info("stopping for a restart: tasks run on under their supervisors", "tasks", len(a.exec.Running()))
	} else {
		a.exec.StopAll(fsm.CauseFenced)
		waitCtx, cancelWait := context.WithTimeout(context.Background(), a.cfg.KillGrace+2*time.Second)
		for len(a.exec.Running()) > 0 && waitCtx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
		cancelWait()
	}
	// Best effort, retried while a new leader is found: report the exits
	// now (what is not acknowledged is reported again after a restart),
	// then take no new work, rather than once our lease expires.
	reportCtx, cancelReport := context.WithTimeout(context.Background(), 5*time.Second)
	reports := a.reporter()
	for reports.Round(reportCtx); len(a.exec.PendingExits()) > 0 && sleepCtx(reportCtx, 100*time.Millisecond); {
		reports.Round(reportCtx)
	}
	if !keep {
		err := a.announceLeave(reportCtx)
		for err != nil && sleepCtx(reportCtx, 100*time.Millisecond) {
			err = a.announceLeave(reportCtx)
		}
		if err != nil {
			a.log.Warn("announce leave; the leader will find out when the lease expires", "err", err)
		}
		leaveCtx, cancelLeave := context.WithTimeout(context.Background(), 2*time.Second)
		if err := a.gossip.Leave(leaveCtx); err != nil {
			a.log.Warn("gossip leave", "err", err)
		}
		cancelLeave()
	}
	cancelReport()
	shutCtx, cancelShut := context.WithTimeout(context.Background(), 3*time.Second)
	_ = a.server.Shutdown(shutCtx)
	cancelShut()
	wg.Wait()
	if err := a.raft.Shutdown(); err != nil {
		a.log.Warn("raft shutdown", "err", err)
	}
	_ = a.gossip.Shutdown()
	if keep {
		a.exec.Detach()
	} else {
		closeCtx, cancelClose := context.WithTimeout(context.Background(), 2*time.Second)
		if err := a.exec.Close(closeCtx); err == nil {
			removeCgroupTree(a.cgroup.root, a.log)
		}
		cancelClose()
	}
	_ = os.Remove(a.SocketPath())
	a.dir.Close()
	a.log.Info("agent stopped")
}

// bootstrapper is the agent's bootstrap loop (consensus.Bootstrapper)
// over its raft and gossip.
func (a *Agent) bootstrapper() consensus.Bootstrapper {
	return consensus.Bootstrapper{
		Raft: a.raft, Peers: agentBootstrapPeers{a}, Self: a.cfg.Name, Expect: a.bootstrapExpect(),
		Clock: wallClock{}, Log: a.log, Interval: bootstrapPoll,
	}
}

// bootstrapPoll is how often the bootstrap loop looks at gossip.
const bootstrapPoll = 250 * time.Millisecond

// agentBootstrapPeers is gossip as the bootstrap loop sees it
// (consensus.BootstrapPeers).
type agentBootstrapPeers struct{ a *Agent }

func (p agentBootstrapPeers) BootstrapMembers() []consensus.BootstrapMember {
	var ms []consensus.BootstrapMember
	for _, m := range p.a.gossip.Members() {
		ms = append(ms, consensus.BootstrapMember{
			ID: m.Name, RaftAddr: m.Meta.RaftAddr, Expect: m.Meta.BootstrapExpect,
			HasRaftState: m.Meta.HasRaftState, Alive: m.Status == gossip.StatusAlive,
		})
	}
	return ms
}

func (p agentBootstrapPeers) AnnounceRaftState(ctx context.Context) error {
	return p.a.gossip.UpdateMeta(ctx, p.a.meta(true))
}

// sleepCtx sleeps for d and reports whether ctx is still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// peerClients caches one API client per peer: its name and address.
type peerClients struct {
	mu      sync.Mutex
	clients map[string]*api.Client
	// bundle, when set, is the node certificate peers are dialled with;
	// each peer must present a certificate naming it.
	bundle *pki.Bundle
}

func (p *peerClients) get(name, addr string) (*api.Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := name + "@" + addr
	if c, ok := p.clients[key]; ok {
		return c, nil
	}
	var c *api.Client
	var err error
	if p.bundle != nil {
		c, err = api.NewTLSClient("https://"+addr, p.bundle.ClientConfig(name))
	} else {
		c, err = api.NewClient("http://" + addr)
	}
	if err != nil {
		return nil, err
	}
	if len(p.clients) >= maxPeerClients {
		clear(p.clients) // nodes come and go; idle connections close on their own
	}
	p.clients[key] = c
	return c, nil
}

// reset drops every cached client and closes its idle connections: a TLS
// connection keeps the certificate it was opened with, so after a renewal
// new ones must be made.
func (p *peerClients) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.clients {
		c.CloseIdleConnections()
	}
	clear(p.clients)
}

// maxHTTPConns bounds the TCP connections the API serves at once; more
// wait in the kernel's backlog. The Unix socket has no such cap: only
// local users reach it.
const maxHTTPConns = 4096

// maxPeerClients bounds the peer client cache.
const maxPeerClients = 1024

// errNoLeader is returned when no leader is known to forward to.
var errNoLeader = cluster.Mark(cluster.ErrUnavailable, errors.New("no raft leader yet: the cluster is forming or has lost its quorum; retry"))

// leaderAPI returns the leader's name and API address, and whether we are
// it.
func (a *Agent) leaderAPI() (name, addr string, self bool, err error) {
	if a.raft.IsLeader() {
		return a.cfg.Name, a.cfg.apiAdvert(), true, nil
	}
	id, _ := a.raft.Leader()
	if id == "" {
		// A worker's raft knows no leader: the servers it follows name it.
		if name, addr := a.remote.leaderHint(); name != "" && name != a.cfg.Name && addr != "" {
			return name, addr, false, nil
		}
		a.remote.kick()
		return "", "", false, errNoLeader
	}
	if id == a.cfg.Name {
		return id, a.cfg.apiAdvert(), true, nil
	}
	for _, m := range a.gossip.Members() {
		if m.Name == id && m.Meta.APIAddr != "" {
			return id, m.Meta.APIAddr, false, nil
		}
	}
	if n, ok := a.state.View().Node(id); ok && n.APIAddr != "" {
		return id, n.APIAddr, false, nil
	}
	return "", "", false, fmt.Errorf("leader %s: API address unknown: %w", id, errNoLeader)
}

// noReply is the reply of the leader's internal calls that answer
// nothing.
type noReply struct{}

// callLeader is the one place a node's own loops talk to the leader: when
// this node leads, local runs here; otherwise req is posted to path on
// the leader's internal API and its JSON answer is the reply.
func callLeader[Req, Reply any](ctx context.Context, a *Agent, path string, req Req, local func(context.Context, Req) (Reply, error)) (Reply, error) {
	var reply Reply
	_, _, self, err := a.leaderAPI()
	if err != nil {
		return reply, err
	}
	if self {
		return local(ctx, req)
	}
	c, err := a.leaderClient()
	if err != nil {
		return reply, err
	}
	var out any = &reply
	if _, none := out.(*noReply); none {
		out = nil
	}
	if _, err := c.Do(ctx, http.MethodPost, path, req, out); err != nil {
		a.remote.kick() // a worker's leader hint may be stale: ask the servers again
		return reply, err
	}
	return reply, nil
}

// noReplyFrom adapts a leader-side function that answers nothing to
// callLeader.
func noReplyFrom[Req any](f func(context.Context, Req) error) func(context.Context, Req) (noReply, error) {
	return func(ctx context.Context, r Req) (noReply, error) { return noReply{}, f(ctx, r) }
}

// leaderClient returns a client for the leader that marks requests as
// forwarded by this node.
func (a *Agent) leaderClient() (*api.Client, error) {
	name, addr, _, err := a.leaderAPI()
	if err != nil {
		return nil, err
	}
	c, err := a.peers.get(name, addr)
	if err != nil {
		return nil, err
	}
	return c.WithHeader(api.HeaderForwardedBy, a.cfg.Name), nil
}

// absPath is p made absolute (a supervisor runs in its task directory),
// or p where that fails.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
