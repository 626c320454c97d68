package agent

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
	"sync"
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
)

// Agent is one running Shoal node: its configuration and data dir, the
// components New builds from them, each from explicit dependencies, and
// the order Run starts them in and shutdown stops them:
//
//	core        the node's hold on the cluster: its record, security,
//	            replica, raft, gossip, the view it follows as a worker,
//	            peer clients; every node's bootstrap, security and
//	            topology loops (core.go)
//	leaderSide  what the node does while it leads (leader.go)
//	workerSide  what it does with its own tasks (worker.go)
//	apiBackend  the HTTP API's job queue and nodes' administration,
//	            beside securityAPI and relayAPI (apibackend.go)
//	http        the HTTP API's front over the roles apiRoles hands it:
//	            core, leaderSide, securityAPI, relayAPI and apiBackend
//	            (package httpapi)
type Agent struct {
	// core is shared by every component; the agent's own start and
	// shutdown use its raft, gossip and log.
	core *core
	lead *leaderSide
	work *workerSide
	http *httpapi.Server

	dir *datadir.Dir
	// cgroup is the tasks' confinement (--cgroups); its root nil: none.
	cgroup cgroupSetup
	// httpLn (TCP, TLS unless --insecure) and unixLn (the socket) are
	// what server serves http on.
	httpLn, unixLn net.Listener
	server         *http.Server

	// leaveReq carries `shoal leave` (apiBackend.Leave): stop as SIGTERM
	// would, draining for the given time first (<0: the agent's own
	// --drain-on-stop).
	leaveReq chan time.Duration
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
	c := &core{cfg: cfg, log: log}
	a = &Agent{core: c, leaveReq: make(chan time.Duration, 1), crash: crash{done: make(chan struct{})}}
	c.topo.set(cfg.Topology)
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

	c.self = cluster.Node{
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
	c.self.Sockets, c.self.CoresPerSocket, c.self.ThreadsPerCore = cfg.Sockets, cfg.CoresPerSocket, cfg.ThreadsPerCore

	_, statErr := os.Stat(filepath.Join(cfg.DataDir, "raft"))
	if c.sec, err = setupSecurity(ctx, &c.cfg, statErr == nil, log); err != nil {
		return nil, err
	}

	if a.httpLn, err = net.Listen("tcp", cfg.httpAddr()); err != nil {
		return nil, fmt.Errorf("--http-port %d: listen on %s: %w", cfg.HTTPPort, cfg.httpAddr(), err)
	}
	closers = append(closers, func() { a.httpLn.Close() })
	a.httpLn = netutil.LimitListener(a.httpLn, maxHTTPConns)
	if b := c.sec.bundle; b != nil {
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

	c.state = fsm.New()
	if b := c.sec.bundle; b != nil {
		b.SetRevoked(c.revokedCheck)
	}
	rc := consensus.Config{
		ID:            cfg.Name,
		DataDir:       cfg.DataDir,
		BindAddr:      cfg.raftBind(),
		AdvertiseAddr: cfg.raftAdvert(),
		FSM:           c.state,
		Logger:        log.With("component", "raft"),
		Timing:        cfg.RaftTiming,
	}
	if b := c.sec.bundle; b != nil {
		// Raft is mutual TLS: only nodes certified by the cluster CA can
		// send or receive entries, votes or snapshots.
		if rc.StreamLayer, err = consensus.NewTLSStream(cfg.raftBind(), cfg.raftAdvert(), b.ServerConfig(true), b.ClientConfig("")); err != nil {
			return nil, fmt.Errorf("--raft-port %d: %w", cfg.RaftPort, err)
		}
	}
	c.raft, err = consensus.Open(ctx, rc)
	if err != nil {
		if rc.StreamLayer != nil {
			rc.StreamLayer.Close()
		}
		return nil, fmt.Errorf("open raft: %w", err)
	}
	closers = append(closers, func() { _ = c.raft.Shutdown() })

	c.gossip, err = gossip.New(gossip.Config{
		Name:          cfg.Name,
		BindAddr:      cfg.BindAddr,
		BindPort:      cfg.GossipPort,
		AdvertiseAddr: cfg.AdvertiseAddr,
		AdvertisePort: cfg.GossipPort,
		Meta:          c.meta(c.raft.HasState()),
		Keys:          c.sec.gossipKeys,
		Logger:        log.With("component", "gossip"),
	})
	if err != nil {
		return nil, fmt.Errorf("start gossip on port %d: %w", cfg.GossipPort, err)
	}
	closers = append(closers, func() { _ = c.gossip.Shutdown() })

	// From here on c.cfg.TaskHelper is set only if tasks get namespaces.
	if c.cfg.TaskHelper, err = cfg.taskNamespace(log); err != nil {
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
	ex, err := exec.New(ctx, exec.Config{
		OCIRuntime:        ociRuntime,
		Cgroup:            a.cgroup.root,
		HostCPUs:          a.cgroup.hostCPUs,
		TaskPidsMax:       cfg.TaskPidsMax,
		TaskNamespace:     c.cfg.TaskHelper,
		TaskExec:          cfg.TaskExec,
		StepdLightCommand: cfg.TaskStepd,
		AgentSocket:       absPath(sock),
		DataDir:           filepath.Join(cfg.DataDir, "exec"),
		NodeName:          cfg.Name,
		KillGrace:         cfg.KillGrace,
		KillWait:          cfg.KillWait,
		LeaseTTL:          cfg.watchdogTTL(),
		Logger:            log.With("component", "exec"),
	})
	if err != nil {
		return nil, fmt.Errorf("start executor: %w", err)
	}

	shimDir, err := makeShimDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	c.peers = peerClients{clients: map[string]*api.Client{}, bundle: c.sec.bundle}
	a.lead = &leaderSide{core: a.core}
	a.work = &workerSide{core: a.core, lead: a.lead, exec: ex, socket: sock, shimDir: shimDir}
	a.http = httpapi.NewServer(apiRoles(c, a.lead, a.work, a.leaveReq), c.log)
	c.metrics = a.newMetrics()
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

// Name is the node's name.
func (a *Agent) Name() string { return a.core.cfg.Name }

// SocketPath is the agent's Unix socket.
func (a *Agent) SocketPath() string {
	if a.core.cfg.SocketPath != "" {
		return a.core.cfg.SocketPath
	}
	return a.dir.SocketPath()
}

// Run runs the agent until ctx ends or a fatal error (such as a name
// conflict found while joining), then shuts everything down.
func (a *Agent) Run(parent context.Context) error {
	c := a.core
	// The agent's loops run until the stop is carried out, which with
	// DrainOnStop is a while after parent ends.
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	defer cancel(nil)
	var wg sync.WaitGroup
	wg.Go(func() {
		d, cause := c.cfg.DrainOnStop, error(nil)
		select {
		case <-ctx.Done():
			return
		case <-parent.Done():
			cause = context.Cause(parent)
		case <-a.crash.done:
			cancel(errCrashed)
			return
		case wait := <-a.leaveReq:
			c.log.Info("leaving on request (shoal leave)")
			if wait >= 0 {
				d = wait
			}
		}
		if d > 0 && !c.cfg.KeepTasksOnStop {
			a.work.drainBeforeStop(ctx, d)
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
	if len(c.cfg.Join) > 0 {
		wg.Go(func() {
			if err := c.gossip.Join(ctx, c.cfg.Join); err != nil && ctx.Err() == nil {
				cancel(fmt.Errorf("join %v: %w", c.cfg.Join, err))
			}
		})
	}
	wg.Go(func() { c.bootstrapper().Run(ctx) })
	wg.Go(func() { a.lead.leadLoop().Run(ctx) })
	wg.Go(func() { a.work.heartbeater().Run(ctx) })
	wg.Go(func() { a.work.driver().Run(ctx) })
	wg.Go(func() { a.work.follower().Run(ctx) })
	wg.Go(func() { a.work.reporter().Run(ctx) })
	wg.Go(func() { gossip.LogEvents(ctx, c.gossip.Events(), c.log) })
	if c.sec.bundle != nil { // TLS on
		wg.Go(func() { c.renewer().Run(ctx) })
		wg.Go(func() { c.keyringFollower().Run(ctx) })
	}
	if offer, ok := c.caOffer(); ok {
		wg.Go(func() { c.caOfferer(offer).Run(ctx) })
	}
	wg.Go(func() { a.work.cleaner().Run(ctx) })
	wg.Go(func() { c.discoverer().Run(ctx, c.topology()) })
	if c.cfg.GPUSampler != nil {
		wg.Go(func() { a.work.gpuSampler().Run(ctx) })
	}
	if failpointDiverge { // a fault injected in test builds only: see failpoint_diverge_off.go
		wg.Go(func() { a.failpointDivergeLoop(ctx) })
	}

	c.log.Info("agent started", "api", c.cfg.apiAdvert(), "raft", c.cfg.raftAdvert(),
		"gossip", c.cfg.gossipAdvert(), "socket", a.SocketPath(), "gpus", len(c.cfg.GPUs))
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
	c := a.core
	if a.crashed() {
		a.shutdownCrashed(wg)
		return
	}
	c.log.Info("agent stopping")
	// Hand leadership over first, so the cluster keeps a leader while we
	// stop (no election timeout to wait out) and our exit reports below
	// reach it.
	if c.raft.IsLeader() {
		tctx, cancelTransfer := context.WithTimeout(context.Background(), 5*time.Second)
		if err := c.raft.TransferLeadership(tctx); err != nil {
			c.log.Warn("hand leadership over", "err", err)
		} else {
			c.log.Info("handed leadership over")
		}
		cancelTransfer()
	}
	keep := c.cfg.KeepTasksOnStop
	if keep {
		c.log.Info("stopping for a restart: tasks run on under their supervisors", "tasks", len(a.work.exec.Running()))
	} else {
		a.work.exec.StopAll(fsm.CauseFenced)
		waitCtx, cancelWait := context.WithTimeout(context.Background(), c.cfg.KillGrace+2*time.Second)
		for len(a.work.exec.Running()) > 0 && waitCtx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
		cancelWait()
	}
	// Best effort, retried while a new leader is found: report the exits
	// now (what is not acknowledged is reported again after a restart),
	// then take no new work, rather than once our lease expires.
	reportCtx, cancelReport := context.WithTimeout(context.Background(), 5*time.Second)
	reports := a.work.reporter()
	for reports.Round(reportCtx); len(a.work.exec.PendingExits()) > 0 && sleepCtx(reportCtx, 100*time.Millisecond); {
		reports.Round(reportCtx)
	}
	if !keep {
		err := a.work.announceLeave(reportCtx)
		for err != nil && sleepCtx(reportCtx, 100*time.Millisecond) {
			err = a.work.announceLeave(reportCtx)
		}
		if err != nil {
			c.log.Warn("announce leave; the leader will find out when the lease expires", "err", err)
		}
		leaveCtx, cancelLeave := context.WithTimeout(context.Background(), 2*time.Second)
		if err := c.gossip.Leave(leaveCtx); err != nil {
			c.log.Warn("gossip leave", "err", err)
		}
		cancelLeave()
	}
	cancelReport()
	shutCtx, cancelShut := context.WithTimeout(context.Background(), 3*time.Second)
	_ = a.server.Shutdown(shutCtx)
	cancelShut()
	wg.Wait()
	if err := c.raft.Shutdown(); err != nil {
		c.log.Warn("raft shutdown", "err", err)
	}
	_ = c.gossip.Shutdown()
	if keep {
		a.work.exec.Detach()
	} else {
		a.closeTasks(2 * time.Second)
	}
	a.stopped()
}

// closeTasks gives the executor up to wait to stop and reap every task,
// then removes the agent's cgroup tree if it did.
func (a *Agent) closeTasks(wait time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := a.work.exec.Close(ctx); err == nil {
		removeCgroupTree(a.cgroup.root, a.core.log)
	}
}

// stopped is the last step of either shutdown: the socket goes and the
// data directory is closed.
func (a *Agent) stopped() {
	_ = os.Remove(a.SocketPath())
	a.dir.Close()
	a.core.log.Info("agent stopped")
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

// maxHTTPConns bounds the TCP connections the API serves at once; more
// wait in the kernel's backlog. The Unix socket has no such cap: only
// local users reach it.
const maxHTTPConns = 4096

// absPath is p made absolute (a supervisor runs in its task directory),
// or p where that fails.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
