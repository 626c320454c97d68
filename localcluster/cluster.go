package localcluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cgroup"
	"github.com/shoal-sched/shoal/pki"
)

// Options shape a local cluster.
type Options struct {
	// Binary is the shoal executable to run.
	Binary string
	// Dir holds one data dir per agent (Dir/<name>) and the agents' logs.
	Dir         string
	Nodes       int
	GPUsPerNode int
	// LeafSize is how many nodes share a leaf switch; leaves sit under
	// one spine, "spine0".
	LeafSize int
	// CPUs is what each agent offers (--cpus); 0 means 16, as the Slurm
	// peer's nodes claim: every agent runs on this one machine, whose own
	// count would make jobs of more than a few ranks per node unplaceable.
	CPUs int
	// TopologyConf, when set, is a Slurm topology.conf every agent reads
	// its switch from (--topology-conf) instead of LeafSize's.
	TopologyConf string
	// BootstrapExpect is how many of the first nodes bootstrap together
	// (default min(3, Nodes)); the rest join later.
	BootstrapExpect int
	// Host is the loopback IP every agent binds (default 127.0.0.1).
	Host string
	// HostOf, when set, gives agent i a loopback IP of its own to bind
	// instead of Host, as real nodes have addresses of their own: node
	// names then resolve to different addresses inside jobs, and a
	// reverse lookup of an address gives back its node's name.
	HostOf func(i int) string
	// ExtraArgs are added to every agent's command line.
	ExtraArgs []string
	// Detach starts agents in their own session so they outlive this
	// process (`shoal dev --detach`).
	Detach bool
	// Insecure starts the agents with --insecure (no TLS, no gossip
	// encryption). By default the cluster has a CA of its own, in
	// Dir/ca, and every agent a certificate from it, as on real machines.
	Insecure bool
	// Advertise, when set, gives agent i an address to advertise other
	// than Host (--advertise): another loopback IP where a test puts a
	// proxy in front of it, which then carries all node-to-node traffic.
	Advertise func(i int) string
	// BeforeStart, when set, runs once the agents are laid out and
	// certified, before any starts (a test starts its proxies there).
	BeforeStart func(c *Cluster) error
	// CertLifetime, when set, is how long the agents' certificates are
	// valid (and --cert-lifetime, what the leader signs), to see renewal.
	CertLifetime time.Duration
	// Initial is how many agents Start launches (default all); the others
	// are prepared and started later with StartAgent, as nodes that join a
	// running cluster.
	Initial int
	// Prepare lays the agents out (names, ports, data dirs, arguments) and
	// certifies them, and starts none: the caller runs them itself (the
	// scale harness runs them in its own process).
	Prepare bool
}

// Agent is one agent process of the cluster.
type Agent struct {
	Name       string
	DataDir    string
	HTTPPort   int
	RaftPort   int
	GossipPort int
	Args       []string

	mu   sync.Mutex
	cmd  *osexec.Cmd
	done chan struct{} // closed when cmd exits
	host string
	// advertise is the IP other agents dial ("" = host).
	advertise string
}

// HTTPAddr is the agent's API host:port.
func (a *Agent) HTTPAddr() string { return net.JoinHostPort(a.host, strconv.Itoa(a.HTTPPort)) }

// GossipAddr is the agent's advertised gossip host:port (what --join
// takes).
func (a *Agent) GossipAddr() string {
	return net.JoinHostPort(cmp.Or(a.advertise, a.host), strconv.Itoa(a.GossipPort))
}

// Socket is the agent's Unix socket.
func (a *Agent) Socket() string { return filepath.Join(a.DataDir, "shoal.sock") }

// LogPath is where the agent's stderr goes.
func (a *Agent) LogPath() string { return filepath.Join(a.DataDir, "agent.log") }

// Pid is the running process's pid, or 0.
func (a *Agent) Pid() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd == nil || a.cmd.Process == nil {
		return 0
	}
	return a.cmd.Process.Pid
}

// Client returns an API client over the agent's Unix socket.
func (a *Agent) Client() *api.Client {
	c, err := api.NewClient("unix://" + a.Socket())
	if err != nil {
		panic(fmt.Sprintf("client for %s: %v", a.Name, err)) // the path is ours: cannot fail
	}
	return c
}

// Cluster is a running local cluster.
type Cluster struct {
	opts   Options
	Agents []*Agent
}

// Start launches the agents and returns once every process has started
// (not once the cluster has formed: see WaitReady).
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Nodes < 1 {
		return nil, fmt.Errorf("--nodes %d: want at least 1", opts.Nodes)
	}
	if opts.GPUsPerNode < 0 {
		return nil, fmt.Errorf("--gpus-per-node %d: want 0 or more", opts.GPUsPerNode)
	}
	if opts.LeafSize < 1 {
		return nil, fmt.Errorf("--leaf-size %d: want at least 1", opts.LeafSize)
	}
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if opts.BootstrapExpect == 0 {
		opts.BootstrapExpect = min(3, opts.Nodes)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("--data-dir %s: %w", opts.Dir, err)
	}
	hosts := make([]string, opts.Nodes)
	perHost := map[string]int{} // how many agents bind each address
	for i := range hosts {
		hosts[i] = opts.Host
		if opts.HostOf != nil {
			hosts[i] = opts.HostOf(i)
		}
		perHost[hosts[i]]++
	}
	// Every port of one address at once: ports found one agent at a time
	// would be free again, and found again, for the next.
	ports := map[string][]int{}
	for host, n := range perHost {
		p, err := FreePorts(host, 3*n)
		if err != nil {
			return nil, err
		}
		ports[host] = p
	}
	c := &Cluster{opts: opts}
	for i, host := range hosts {
		name := fmt.Sprintf("n%d", i+1)
		p := ports[host]
		ports[host] = p[3:]
		a := &Agent{
			Name: name, DataDir: filepath.Join(opts.Dir, name), host: host,
			HTTPPort: p[0], RaftPort: p[1], GossipPort: p[2],
		}
		if opts.Advertise != nil {
			a.advertise = opts.Advertise(i)
		}
		c.Agents = append(c.Agents, a)
	}
	for i, a := range c.Agents {
		a.Args = []string{"agent",
			"--name", a.Name, "--data-dir", a.DataDir, "--bind", a.host,
			"--http-port", strconv.Itoa(a.HTTPPort), "--raft-port", strconv.Itoa(a.RaftPort),
			"--gossip-port", strconv.Itoa(a.GossipPort),
			"--gpus", strconv.Itoa(opts.GPUsPerNode),
			"--cpus", strconv.Itoa(cmp.Or(opts.CPUs, 16)),
		}
		if opts.TopologyConf != "" {
			a.Args = append(a.Args, "--topology-conf", opts.TopologyConf)
		} else {
			a.Args = append(a.Args, "--switch", fmt.Sprintf("leaf%d", i/opts.LeafSize), "--switch-parent", "spine0")
		}
		if i < opts.BootstrapExpect {
			a.Args = append(a.Args, "--bootstrap-expect", strconv.Itoa(opts.BootstrapExpect))
		}
		if i > 0 {
			a.Args = append(a.Args, "--join", c.Agents[0].GossipAddr())
		}
		if a.advertise != "" {
			a.Args = append(a.Args, "--advertise", a.advertise)
		}
		if opts.Insecure {
			a.Args = append(a.Args, "--insecure")
		}
		if opts.CertLifetime > 0 {
			a.Args = append(a.Args, "--cert-lifetime", opts.CertLifetime.String())
		}
		a.Args = append(a.Args, opts.ExtraArgs...)
	}
	if !opts.Insecure {
		if err := c.certify(); err != nil {
			return nil, err
		}
	}
	if opts.BeforeStart != nil {
		if err := opts.BeforeStart(c); err != nil {
			return nil, err
		}
	}
	if opts.Prepare {
		return c, nil
	}
	if opts.Initial == 0 {
		opts.Initial = opts.Nodes
	}
	for _, a := range c.Agents[:min(opts.Initial, opts.Nodes)] {
		if err := c.start(a); err != nil {
			c.Stop(5 * time.Second)
			return nil, err
		}
	}
	return c, nil
}

// CAPaths is where the cluster's CA, its key and the gossip key are.
func (c *Cluster) CAPaths() pki.Paths { return pki.DefaultPaths(filepath.Join(c.opts.Dir, "ca")) }

// certify creates the cluster's CA and gossip key and gives every agent a
// certificate of its own in its data dir.
func (c *Cluster) certify() error {
	var nodes []CertNode
	for _, a := range c.Agents {
		nodes = append(nodes, CertNode{Name: a.Name, DataDir: a.DataDir, IP: net.ParseIP(cmp.Or(a.advertise, a.host))})
	}
	return Certify(c.CAPaths(), nodes, c.opts.CertLifetime)
}

// CertNode is a node Certify gives a certificate.
type CertNode struct {
	Name    string
	DataDir string
	IP      net.IP
}

// Certify creates a CA and a gossip key at caPaths and gives every node a
// certificate (with its IP and loopback) and the gossip key in its data
// dir's tls folder, as an operator would with 'shoal tls init' and 'shoal
// tls cert create'. The first node also gets the CA's key, as the node an
// operator ran 'shoal tls init' on: its first leadership records the CA in
// the replicated state, so join tokens work. lifetime 0 is the default.
func Certify(caPaths pki.Paths, nodes []CertNode, lifetime time.Duration) error {
	now := time.Now()
	ca, err := pki.InitCA(caPaths, "localcluster", now)
	if err != nil {
		return err
	}
	key, err := pki.NewGossipKey()
	if err != nil {
		return err
	}
	if err := pki.WriteGossipKey(caPaths.GossipKey, key); err != nil {
		return err
	}
	caKey, err := os.ReadFile(caPaths.CAKey)
	if err != nil {
		return err
	}
	for i, n := range nodes {
		p := pki.DefaultPaths(n.DataDir)
		if i == 0 {
			if err := os.MkdirAll(filepath.Dir(p.CAKey), 0o700); err != nil {
				return err
			}
			if err := os.WriteFile(p.CAKey, caKey, 0o600); err != nil {
				return err
			}
		}
		p.CAKey = ""
		ips := []net.IP{net.IPv4(127, 0, 0, 1)}
		if n.IP != nil && !n.IP.IsLoopback() {
			ips = append(ips, n.IP)
		} else if n.IP != nil {
			ips = []net.IP{n.IP}
		}
		if _, err := pki.IssueNodeFiles(ca, p, n.Name, ips, lifetime, now); err != nil {
			return fmt.Errorf("certify %s: %w", n.Name, err)
		}
		if err := pki.WriteGossipKey(p.GossipKey, key); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) start(a *Agent) error {
	cmd := osexec.Command(c.opts.Binary, a.Args...)
	// Each agent leads its own process group, so a signal to this process
	// group (Ctrl-C in a terminal) is not delivered to it twice.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: !c.opts.Detach, Setsid: c.opts.Detach}
	done, err := StartAgentProcess(a.Name, a.DataDir, a.LogPath(), cmd)
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.cmd, a.done = cmd, done
	a.mu.Unlock()
	return nil
}

// StartAgentProcess starts agent name's process cmd (its SysProcAttr
// set): its data dir made, its output appended to the log at logPath.
// done closes once it has exited and been reaped.
func StartAgentProcess(name, dataDir, logPath string, cmd *osexec.Cmd) (done chan struct{}, err error) {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("agent %s: %w", name, err)
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("agent %s: log file: %w", name, err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("agent %s: start %s: %w", name, cmd.Args[0], err)
	}
	done = make(chan struct{})
	// Reaps the process; ends when it exits.
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	return done, nil
}

// Running reports whether the agent's process is alive.
func (a *Agent) Running() bool {
	a.mu.Lock()
	done := a.done
	a.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// signal sends sig to the agent and, with wait > 0, waits for its exit.
func (a *Agent) signal(sig syscall.Signal, wait time.Duration) error {
	a.mu.Lock()
	cmd, done := a.cmd, a.done
	a.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return fmt.Errorf("agent %s: not started", a.Name)
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("agent %s: signal %s: %w", a.Name, sig, err)
	}
	if wait <= 0 {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-time.After(wait):
		return fmt.Errorf("agent %s: still running %s after %s", a.Name, wait, sig)
	}
}

// Kill sends SIGKILL (kill -9) and waits for the process to go.
func (c *Cluster) Kill(i int) error { return c.Agents[i].signal(syscall.SIGKILL, 10*time.Second) }

// Pause stops the agent with SIGSTOP; Resume continues it.
func (c *Cluster) Pause(i int) error  { return c.Agents[i].signal(syscall.SIGSTOP, 0) }
func (c *Cluster) Resume(i int) error { return c.Agents[i].signal(syscall.SIGCONT, 0) }

// StopAgent stops one agent gracefully (SIGTERM), killing it after grace.
func (c *Cluster) StopAgent(i int, grace time.Duration) error {
	a := c.Agents[i]
	if !a.Running() {
		return nil
	}
	if err := a.signal(syscall.SIGTERM, grace); err != nil {
		_ = a.signal(syscall.SIGCONT, 0)
		return a.signal(syscall.SIGKILL, 10*time.Second)
	}
	return nil
}

// StartAgent starts agent i (one held back by Options.Initial, or one
// that stopped) from its data dir, with its name, ports and flags.
func (c *Cluster) StartAgent(i int) error { return c.Restart(i) }

// Restart starts a stopped agent again from its data dir, with the same
// name, ports and flags.
func (c *Cluster) Restart(i int) error {
	if c.Agents[i].Running() {
		return fmt.Errorf("agent %s: still running", c.Agents[i].Name)
	}
	return c.start(c.Agents[i])
}

// Stop stops every agent (SIGTERM, SIGKILL after grace), in parallel,
// and removes the cgroup trees that agents killed along the way left
// behind, once nothing runs in them.
func (c *Cluster) Stop(grace time.Duration) {
	var wg sync.WaitGroup
	for i := range c.Agents {
		wg.Go(func() { _ = c.StopAgent(i, grace) })
	}
	wg.Wait()
	for _, a := range c.Agents {
		_ = cgroup.RemoveIdle(cgroup.AgentKey(a.Name, a.DataDir))
	}
}

// WaitReady waits until agent 0 reports a leader and want registered nodes
// that are up, or ctx ends.
func (c *Cluster) WaitReady(ctx context.Context, want int) error {
	var last error
	for {
		last = c.ready(ctx, want)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster not ready: %w (last: %v)", ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *Cluster) ready(ctx context.Context, want int) error {
	for _, a := range c.Agents {
		if !a.Running() {
			continue
		}
		cl := a.Client()
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if _, err := cl.Leader(rctx); err != nil {
			return err
		}
		nodes, err := cl.Nodes(rctx)
		if err != nil {
			return err
		}
		up := 0
		for _, n := range nodes {
			if n.State != "DOWN" {
				up++
			}
		}
		if up < want {
			return fmt.Errorf("%d of %d nodes registered", up, want)
		}
		return nil
	}
	return errors.New("no agent is running")
}

// FreePorts finds n distinct ports on host free for both TCP and UDP
// (gossip uses both on one port).
func FreePorts(host string, n int) ([]int, error) {
	// Bounded, and enough for 1,000 agents' 3,000 ports (a port taken for
	// UDP costs a try).
	maxTries := 2*n + 1000
	var ports []int
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for try := 0; len(ports) < n; try++ {
		if try >= maxTries {
			return nil, fmt.Errorf("found only %d of %d free ports on %s", len(ports), n, host)
		}
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, fmt.Errorf("find free port on %s: %w", host, err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			l.Close()
			continue
		}
		u.Close()
		held = append(held, l) // hold it so the next Listen gets another
		ports = append(ports, port)
	}
	return ports, nil
}

// PidFile lists "name pid" lines, for `shoal dev stop`.
func (c *Cluster) PidFile() string {
	var b strings.Builder
	for _, a := range c.Agents {
		fmt.Fprintf(&b, "%s %d\n", a.Name, a.Pid())
	}
	return b.String()
}
