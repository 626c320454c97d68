package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
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
	"github.com/shoal-sched/shoal/localcluster"
	"github.com/shoal-sched/shoal/pki"
)

// NetMode is how agents are networked.
type NetMode string

const (
	// NetAuto uses namespaces when NetNSMissing is empty, else loopback.
	NetAuto NetMode = ""
	// NetNamespaces puts each agent in its own network namespace.
	NetNamespaces NetMode = "netns"
	// NetLoopback runs agents on 127.x addresses: process faults only.
	NetLoopback NetMode = "loopback"
)

// MaxNodes bounds a harness's cluster.
const MaxNodes = 9

// DefaultAgentArgs make agents fast: short raft timeouts, a 3s lease, a 2s
// kill grace and kill-wait and a 5s dead-server grace (as the integration
// tests use).
var DefaultAgentArgs = []string{"--dev-timing", "--heartbeat", "300ms", "--lease-ttl", "3s",
	"--kill-grace", "2s", "--kill-wait", "2s", "--dead-server-grace", "5s", "--log-level", "debug"}

// Options shape a harness.
type Options struct {
	// Binary is the shoal executable the agents run.
	Binary string
	// Nodes is how many agents (default 5, at most MaxNodes).
	Nodes int
	// GPUsPerNode is each agent's simulated GPUs (default 8).
	GPUsPerNode int
	// Dir holds each agent's data dir (Dir/<name>) and the rank records
	// (Dir/records). Keep it short: Unix socket paths are limited to 107
	// bytes.
	Dir string
	Net NetMode
	// AgentArgs are added to every agent's command line (default
	// DefaultAgentArgs).
	AgentArgs []string
	// Outsiders is how many extra namespaces to put on the agents'
	// network that run no agent: hosts that reach the cluster but are not
	// part of it (an attacker, in the security tests). Netns mode only.
	Outsiders int
	// Insecure runs the agents with --insecure. By default the harness
	// makes a CA (Dir/ca) and certifies every agent, as on real machines.
	Insecure bool
	Log      *slog.Logger
}

// Agent is one agent of the harness.
type Agent struct {
	Index   int
	Name    string
	DataDir string
	// Addr is the IP it binds: 10.77.0.x in its namespace, or 127.x.
	Addr       string
	HTTPPort   int
	RaftPort   int
	GossipPort int

	ns   string // its network namespace, or ""
	args []string
	// binary, when set, replaces Options.Binary at its next start
	// (SetBinary: a rolling upgrade).
	binary string
	client *api.Client

	mu     sync.Mutex
	cmd    *osexec.Cmd
	done   chan struct{}
	paused bool
}

// Client talks to the agent over its Unix socket, which the host reaches
// whatever a fault did to the agent's network.
func (a *Agent) Client() *api.Client { return a.client }

// Socket is the agent's Unix socket.
func (a *Agent) Socket() string { return filepath.Join(a.DataDir, "shoal.sock") }

// Netns is the agent's network namespace, or "" on loopback.
func (a *Agent) Netns() string { return a.ns }

// LogPath is where the agent's stderr goes.
func (a *Agent) LogPath() string { return filepath.Join(a.DataDir, "agent.log") }

// Running reports whether the agent's process is alive.
func (a *Agent) Running() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done == nil {
		return false
	}
	select {
	case <-a.done:
		return false
	default:
		return true
	}
}

// Harness is a running cluster of agents under the harness's control.
type Harness struct {
	opts   Options
	Mode   NetMode
	Agents []*Agent
	// RecordDir is where ranks append their records.
	RecordDir string
	net       *netns
	log       *slog.Logger
}

// Start creates the network (in namespace mode), starts every agent and
// waits until they form a healthy cluster. Stop undoes all of it; Start
// undoes it itself when it fails.
func Start(ctx context.Context, opts Options) (_ *Harness, err error) {
	if opts.Nodes == 0 {
		opts.Nodes = 5
	}
	if opts.Nodes < 1 || opts.Nodes > MaxNodes {
		return nil, fmt.Errorf("--nodes %d: want 1 to %d", opts.Nodes, MaxNodes)
	}
	if opts.GPUsPerNode == 0 {
		opts.GPUsPerNode = 8
	}
	if opts.AgentArgs == nil {
		opts.AgentArgs = DefaultAgentArgs
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Binary == "" {
		return nil, errors.New("binary: empty, want the shoal executable")
	}
	if _, err := os.Stat(opts.Binary); err != nil {
		return nil, fmt.Errorf("binary: %w", err)
	}
	if opts.Dir == "" {
		return nil, errors.New("dir: empty, want a directory for data dirs and records")
	}
	h := &Harness{opts: opts, log: opts.Log.With("component", "chaos"), RecordDir: filepath.Join(opts.Dir, "records")}
	missing := NetNSMissing()
	switch opts.Net {
	case NetAuto:
		h.Mode = NetNamespaces
		if missing != "" {
			h.Mode = NetLoopback
			h.log.Warn("network namespaces unavailable: agents run on loopback with process faults only", "missing", missing)
		}
	case NetNamespaces:
		if missing != "" {
			return nil, fmt.Errorf("network namespaces need %s", missing)
		}
		h.Mode = NetNamespaces
	case NetLoopback:
		h.Mode = NetLoopback
	default:
		return nil, fmt.Errorf("net mode %q: want netns or loopback", opts.Net)
	}
	// The ranks run as the submitting user (root here) and must write here.
	if err := os.MkdirAll(h.RecordDir, 0o777); err != nil {
		return nil, fmt.Errorf("records dir: %w", err)
	}
	defer func() {
		if err != nil {
			h.Stop(context.WithoutCancel(ctx))
		}
	}()
	if h.Mode == NetNamespaces {
		if removed, err := RemoveLeftovers(ctx); err != nil {
			h.log.Warn("remove leftovers of crashed runs", "err", err)
		} else if len(removed) > 0 {
			h.log.Info("removed leftovers of crashed runs", "names", removed)
		}
		h.net = &netns{prefix: newRunPrefix(), n: opts.Nodes + opts.Outsiders, log: h.log}
		if err := h.net.setup(ctx); err != nil {
			return nil, fmt.Errorf("network: %w", err)
		}
	}
	if opts.Outsiders > 0 && h.net == nil {
		return nil, fmt.Errorf("outsiders: %d, but they need network namespaces (%s)", opts.Outsiders, missing)
	}
	if err := h.prepare(); err != nil {
		return nil, err
	}
	if !opts.Insecure {
		var nodes []localcluster.CertNode
		for _, a := range h.Agents {
			nodes = append(nodes, localcluster.CertNode{Name: a.Name, DataDir: a.DataDir, IP: net.ParseIP(a.Addr)})
		}
		if err := localcluster.Certify(h.CAPaths(), nodes, 0); err != nil {
			return nil, fmt.Errorf("certify agents: %w", err)
		}
	}
	for _, a := range h.Agents {
		if err := h.startAgent(a); err != nil {
			return nil, err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if _, err := h.WaitHealthy(wctx); err != nil {
		return nil, fmt.Errorf("cluster did not form: %w", err)
	}
	return h, nil
}

// prepare lays out the agents: names, addresses, ports and flags.
func (h *Harness) prepare() error {
	n := h.opts.Nodes
	var loopBase string
	if h.Mode == NetLoopback {
		// 127.0.0.0/8 is all loopback: a random /24 keeps concurrent runs
		// apart.
		loopBase = fmt.Sprintf("127.%d.%d.", 100+rand.IntN(100), rand.IntN(250))
	}
	for i := range n {
		a := &Agent{Index: i, Name: fmt.Sprintf("n%d", i+1), DataDir: filepath.Join(h.opts.Dir, fmt.Sprintf("n%d", i+1)),
			HTTPPort: 7070, RaftPort: 7071, GossipPort: 7072}
		if h.net != nil {
			a.Addr, a.ns = h.net.addr(i), h.net.ns(i)
		} else {
			a.Addr = loopBase + strconv.Itoa(i+1)
			ports, err := localcluster.FreePorts(a.Addr, 3)
			if err != nil {
				return fmt.Errorf("agent %s: %w", a.Name, err)
			}
			a.HTTPPort, a.RaftPort, a.GossipPort = ports[0], ports[1], ports[2]
		}
		if len(a.Socket()) > 107 {
			return fmt.Errorf("dir %s: socket path %s is longer than 107 bytes", h.opts.Dir, a.Socket())
		}
		c, err := api.NewClient("unix://" + a.Socket())
		if err != nil {
			return fmt.Errorf("agent %s: %w", a.Name, err)
		}
		a.client = c
		h.Agents = append(h.Agents, a)
	}
	bootstrap := min(3, n)
	for i, a := range h.Agents {
		a.args = []string{"agent",
			"--name", a.Name, "--data-dir", a.DataDir, "--bind", a.Addr,
			"--http-port", strconv.Itoa(a.HTTPPort), "--raft-port", strconv.Itoa(a.RaftPort),
			"--gossip-port", strconv.Itoa(a.GossipPort),
			"--gpus", strconv.Itoa(h.opts.GPUsPerNode),
			"--switch", fmt.Sprintf("leaf%d", i/2), "--switch-parent", "spine0",
		}
		if i < bootstrap {
			a.args = append(a.args, "--bootstrap-expect", strconv.Itoa(bootstrap))
		}
		// Join every other agent, so a restart finds whoever is up.
		var join []string
		for _, b := range h.Agents {
			if b != a {
				join = append(join, net.JoinHostPort(b.Addr, strconv.Itoa(b.GossipPort)))
			}
		}
		if len(join) > 0 {
			a.args = append(a.args, "--join", strings.Join(join, ","))
		}
		if h.opts.Insecure {
			a.args = append(a.args, "--insecure")
		}
		a.args = append(a.args, h.opts.AgentArgs...)
	}
	return nil
}

// CAPaths is where the harness's cluster CA, its key and the gossip key
// are (unless Insecure).
func (h *Harness) CAPaths() pki.Paths { return pki.DefaultPaths(filepath.Join(h.opts.Dir, "ca")) }

// Outsider returns the namespace and address of outsider host i: on the
// agents' network, running no agent.
func (h *Harness) Outsider(i int) (netns, addr string) {
	j := h.opts.Nodes + i
	return h.net.ns(j), h.net.addr(j)
}

// startAgent starts agent a's process from its data dir.
func (h *Harness) startAgent(a *Agent) error {
	if a.Running() {
		return fmt.Errorf("agent %s: already running", a.Name)
	}
	a.mu.Lock()
	bin := cmp.Or(a.binary, h.opts.Binary)
	a.mu.Unlock()
	var cmd *osexec.Cmd
	if a.ns != "" {
		// ip netns exec execs the agent: the pid is the agent's own.
		cmd = osexec.Command("ip", append([]string{"netns", "exec", a.ns, bin}, a.args...)...)
	} else {
		cmd = osexec.Command(bin, a.args...)
	}
	// Its own process group; killed if the harness dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	done, err := localcluster.StartAgentProcess(a.Name, a.DataDir, a.LogPath(), cmd)
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.cmd, a.done, a.paused = cmd, done, false
	a.mu.Unlock()
	return nil
}

func (a *Agent) signal(sig syscall.Signal) error {
	a.mu.Lock()
	cmd := a.cmd
	a.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return fmt.Errorf("agent %s: not started", a.Name)
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("agent %s: signal %s: %w", a.Name, sig, err)
	}
	return nil
}

// exitWait bounds how long a killed agent may take to go.
const exitWait = 15 * time.Second

// Kill sends SIGKILL to agent i and waits for it to exit.
func (h *Harness) Kill(i int) error {
	a := h.Agents[i]
	if !a.Running() {
		return nil
	}
	if err := a.signal(syscall.SIGKILL); err != nil {
		return err
	}
	a.mu.Lock()
	done := a.done
	a.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-time.After(exitWait):
		return fmt.Errorf("agent %s: still running %s after SIGKILL", a.Name, exitWait)
	}
}

// Restart starts a stopped agent i again from its data dir.
func (h *Harness) Restart(i int) error { return h.startAgent(h.Agents[i]) }

// SetBinary makes agent i run binary from its next (re)start on: with
// Kill and Restart, one step of a rolling upgrade.
func (h *Harness) SetBinary(i int, binary string) {
	a := h.Agents[i]
	a.mu.Lock()
	defer a.mu.Unlock()
	a.binary = binary
}

// Pause stops agent i with SIGSTOP; Resume continues it.
func (h *Harness) Pause(i int) error { return h.Agents[i].pause(syscall.SIGSTOP, true) }

// Resume continues agent i after Pause.
func (h *Harness) Resume(i int) error { return h.Agents[i].pause(syscall.SIGCONT, false) }

// pause sends sig (SIGSTOP or SIGCONT) and records whether the agent is
// now paused.
func (a *Agent) pause(sig syscall.Signal, paused bool) error {
	if err := a.signal(sig); err != nil {
		return err
	}
	a.mu.Lock()
	a.paused = paused
	a.mu.Unlock()
	return nil
}

// NetFaults reports whether network faults are possible (namespace mode).
func (h *Harness) NetFaults() bool { return h.net != nil }

var errNoNetFaults = errors.New("network faults need network namespaces; this harness runs on loopback")

// SetLink sets agent i's link up or down.
func (h *Harness) SetLink(ctx context.Context, i int, up bool) error {
	if h.net == nil {
		return errNoNetFaults
	}
	return h.net.setLink(ctx, i, up)
}

// Block replaces agent i's drop rules: it drops packets from the agents in
// inFrom and to the agents in outTo. Block(ctx, i, nil, nil) clears them.
func (h *Harness) Block(ctx context.Context, i int, inFrom, outTo []int) error {
	if h.net == nil {
		return errNoNetFaults
	}
	return h.net.setBlocks(ctx, i, inFrom, outTo)
}

// Slow limits agent i's link to rateKbit in each direction with tc tbf
// queues that hold a packet up to latency before dropping it.
func (h *Harness) Slow(ctx context.Context, i, rateKbit int, latency time.Duration) error {
	if h.net == nil {
		return errNoNetFaults
	}
	return h.net.setSlow(ctx, i, rateKbit, latency)
}

// Lose drops percent of agent i's packets to and from the others at
// random. It replaces Block's rules; Block(ctx, i, nil, nil) clears it.
func (h *Harness) Lose(ctx context.Context, i, percent int) error {
	if h.net == nil {
		return errNoNetFaults
	}
	return h.net.setLoss(ctx, i, percent)
}

// Heal undoes every fault: links up to full speed, drop and loss rules
// cleared, paused agents continued and stopped agents started.
func (h *Harness) Heal(ctx context.Context) error {
	var errs []error
	for i, a := range h.Agents {
		if h.net != nil {
			if err := h.net.setLink(ctx, i, true); err != nil {
				errs = append(errs, err)
			}
			if err := h.net.setBlocks(ctx, i, nil, nil); err != nil {
				errs = append(errs, err)
			}
			if err := h.net.clearSlow(ctx, i); err != nil {
				errs = append(errs, err)
			}
		}
		a.mu.Lock()
		paused := a.paused
		a.mu.Unlock()
		if paused {
			if err := h.Resume(i); err != nil {
				errs = append(errs, err)
			}
		}
		if !a.Running() {
			if err := h.Restart(i); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Health is the cluster as the harness saw it when it was healthy.
type Health struct {
	Leader string
}

// healthPoll is how often WaitHealthy asks.
const healthPoll = 200 * time.Millisecond

// WaitHealthy waits until every agent runs, all of them name one leader,
// and the leader sees every node up (not DOWN), or ctx ends.
func (h *Harness) WaitHealthy(ctx context.Context) (Health, error) {
	var last error
	for {
		hl, err := h.healthy(ctx)
		if err == nil {
			return hl, nil
		}
		last = err
		select {
		case <-ctx.Done():
			return Health{}, fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-time.After(healthPoll):
		}
	}
}

func (h *Harness) healthy(ctx context.Context) (Health, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	leader := ""
	for _, a := range h.Agents {
		if !a.Running() {
			return Health{}, fmt.Errorf("agent %s is not running", a.Name)
		}
		st, err := a.client.Status(ctx)
		if err != nil {
			return Health{}, fmt.Errorf("agent %s: %w", a.Name, err)
		}
		if st.Leader == "" {
			return Health{}, fmt.Errorf("agent %s knows no leader", a.Name)
		}
		if leader != "" && st.Leader != leader {
			return Health{}, fmt.Errorf("agents name leaders %s and %s", leader, st.Leader)
		}
		leader = st.Leader
	}
	la := h.agent(leader)
	if la == nil {
		return Health{}, fmt.Errorf("leader %q is no agent of the harness", leader)
	}
	nodes, err := la.client.Nodes(ctx)
	if err != nil {
		return Health{}, fmt.Errorf("leader %s: nodes: %w", leader, err)
	}
	up := 0
	for _, n := range nodes {
		if n.State != "DOWN" {
			up++
		}
	}
	if up < len(h.Agents) {
		return Health{}, fmt.Errorf("leader %s sees %d of %d nodes up", leader, up, len(h.Agents))
	}
	return Health{Leader: leader}, nil
}

func (h *Harness) agent(name string) *Agent {
	for _, a := range h.Agents {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// Leader returns the index of the agent most agents name as leader, or -1.
func (h *Harness) Leader(ctx context.Context) int {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	votes := map[string]int{}
	for _, a := range h.Agents {
		if !a.Running() {
			continue
		}
		if st, err := a.client.Status(ctx); err == nil && st.Leader != "" {
			votes[st.Leader]++
		}
	}
	best, bestN := -1, 0
	for name, n := range votes {
		if a := h.agent(name); a != nil && n > bestN {
			best, bestN = a.Index, n
		}
	}
	return best
}

// Stop stops every agent and removes the network. It goes on past errors.
func (h *Harness) Stop(ctx context.Context) error {
	var errs []error
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, a := range h.Agents {
		if !a.Running() {
			continue
		}
		wg.Go(func() {
			_ = a.signal(syscall.SIGCONT)
			if err := h.Kill(i); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if h.net != nil {
		if err := h.net.teardown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
