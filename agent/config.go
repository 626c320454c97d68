package agent

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/consensus"
	"github.com/shoal-sched/shoal/exec/stepd"
	"github.com/shoal-sched/shoal/gpu"
	"github.com/shoal-sched/shoal/pki"
	"github.com/shoal-sched/shoal/topology"
	"github.com/shoal-sched/shoal/worker"
)

// Default ports of an agent.
const (
	DefaultHTTPPort   = 7070
	DefaultRaftPort   = 7071
	DefaultGossipPort = 7072
)

// Config is an agent's configuration, filled from flags by cmd/shoal.
type Config struct {
	Name    string
	DataDir string
	// SocketPath is the CLI's Unix socket (--socket); "" means
	// DataDir/shoal.sock.
	SocketPath string

	// BindAddr is the IP every listener binds; AdvertiseAddr is the IP
	// other nodes dial (defaults to BindAddr, or 127.0.0.1 for 0.0.0.0).
	BindAddr      string
	AdvertiseAddr string
	HTTPPort      int
	RaftPort      int
	GossipPort    int

	// Join lists gossip addresses of existing members ("host" or
	// "host:port"). BootstrapExpect > 0 bootstraps once that many nodes
	// with the same setting have met; with neither Join nor
	// BootstrapExpect a lone agent bootstraps itself.
	Join            []string
	BootstrapExpect int

	// GPUs is this node's devices (discovered or simulated by the caller).
	GPUs []cluster.GPU
	// GPUSampler reads the GPUs' utilization, memory, temperature and
	// power every GPUSampleInterval for /metrics; nil: not sampled. The
	// agent closes it when it stops.
	GPUSampler        gpu.Sampler
	GPUSampleInterval time.Duration
	// GPUReportInterval is how often the usage of running jobs' GPUs so
	// far is recorded in the replicated state (with their exit always).
	GPUReportInterval time.Duration
	CPUs              int
	MemoryMiB         uint64
	// Topology is the operator's place for the node (--switch,
	// --switch-parent, --block, --topology-conf); it wins, field by
	// field, over what TopologySources find (topology.Merge).
	Topology cluster.Topology
	// TopologySources find the node's place by themselves; the agent
	// runs them at start and every TopologyInterval (topology.go).
	// Empty: no discovery (--discover-topology=off).
	TopologySources  []topology.Source
	TopologyInterval time.Duration
	// Features label the node for jobs' --constraint (--features a,b).
	Features []string

	// Sockets, CoresPerSocket and ThreadsPerCore are the CPU layout
	// (--sockets, --cores-per-socket, --threads-per-core, as slurm.conf's):
	// all zero (unknown) or all positive with CPUs their product.
	Sockets, CoresPerSocket, ThreadsPerCore int
	// Cgroups (--cgroups) is CgroupsAuto (the default), CgroupsRequired
	// or CgroupsOff: whether tasks run confined in cgroups (see
	// cgroups.go).
	Cgroups string
	// TaskPidsMax (--task-pids-max), when positive, bounds the processes
	// and threads of one task on this node (pids.max); 0: no bound.
	TaskPidsMax int64
	// OCIRuntime (--oci-runtime) is the OCI runtime, runc or crun (a
	// name looked up on PATH, or a path), that runs --container tasks;
	// empty: the first of stepd.OCIRuntimes on PATH, or none;
	// OCIRuntimeNone: none (this node runs no containers).
	OCIRuntime string

	// Timing of raft; zero value = consensus.DefaultTiming().
	RaftTiming consensus.Timing
	// HeartbeatInterval, LeaseTTL and KillGrace govern node liveness
	// (see the package comment): KillGrace is the time between SIGTERM and
	// SIGKILL when a node fences its ranks.
	HeartbeatInterval time.Duration
	LeaseTTL          time.Duration
	KillGrace         time.Duration
	// RenewalsPerSecond is the bound on lease renewals a second at the
	// leader from all nodes together, which stretches leases as the
	// cluster grows (leader.GrantLease); 0: worker.MaxRenewalsPerSecond.
	// Hidden flag --lease-renewals-per-second: it lets a test of a few
	// agents see stretched leases. Like LeaseTTL, every agent must have
	// the same.
	RenewalsPerSecond int
	// KillWait is the time between SIGTERM and SIGKILL when ranks are
	// stopped at their time limit, on cancel or when a rank failed
	// (Slurm's KillWait). It plays no part in the lease bound: fencing
	// uses KillGrace, also for ranks already in their kill-wait.
	KillWait time.Duration
	// KeepTasksOnStop (--keep-tasks-on-stop) makes a graceful stop a
	// restart: the tasks run on under their supervisors and the next
	// agent reattaches to them (see shutdown).
	KeepTasksOnStop bool
	// DrainOnStop (--drain-on-stop), when above 0, makes a graceful stop
	// drain the node first and wait up to that long for its running jobs
	// to end before it stops what is left (and requeues it) and leaves.
	DrainOnStop time.Duration
	// Prolog and Epilog (--prolog, --epilog), when set, are programs run
	// as root on this node before a job's first task here and after the
	// job has ended here, as slurm.conf's Prolog= and Epilog= (package
	// prolog); PrologEpilogTimeout bounds each run (0: no bound).
	Prolog, Epilog      string
	PrologEpilogTimeout time.Duration
	// DeadServerGrace is how long a failed voter stays before it is replaced.
	DeadServerGrace time.Duration
	// RaftReplicas (--raft-replicas) is how many non-voter raft replicas
	// the leader keeps beside the voters; every other node is a worker
	// that follows its jobs from a server (follow.go). 0 means
	// DefaultRaftReplicas; a negative value none.
	RaftReplicas int
	// RaftVoters (--raft-voters) caps the voters; 0 means 3, or 5 once
	// five nodes are up (consensus.VoterConfig.MaxVoters).
	RaftVoters int
	// RaftIneligible (--raft-eligible=false) keeps this node out of the
	// raft configuration for good: it never announces its raft address,
	// so neither bootstrap nor the leader's plan counts it, and it is
	// always a worker (as a Nomad client). For nodes an operator wants
	// off the consensus path (a busy or low-priority host; the scale
	// harness's workers, which share one low-priority process). It
	// needs --join: such a node cannot bootstrap a cluster.
	RaftIneligible bool
	// ScheduleInterval bounds how long a pending job waits for a pass when
	// nothing changes.
	ScheduleInterval time.Duration
	// Policy, when set (--policy FILE), is the queue policy this agent
	// makes the cluster's whenever it becomes leader (see proposePolicy).
	Policy *cluster.Policy
	// TaskHostname (--task-hostname) says whether tasks run in a UTS and
	// mount namespace of their own with the node's name as hostname and
	// an /etc/hosts naming the cluster's nodes: TaskHostnameAuto (the
	// default: when the host's name is not the node's and the agent has
	// root, as with several agents on one machine), TaskHostnameOn or
	// TaskHostnameOff.
	TaskHostname string
	// TaskHelper is the argv prefix of the program that sets up a task's
	// namespaces (the shoal binary and stepd.TaskNamespaceCommand); without
	// it tasks never get namespaces of their own.
	TaskHelper []string
	// TaskExec is the argv prefix of the exec shim ranks start through to
	// learn their pid (the shoal binary and stepd.TaskExecCommand); empty:
	// ranks start directly and lack SLURM_TASK_PID.
	TaskExec []string
	// TaskStepd, when set, is the argv prefix of the supervisor of tasks
	// that serve no PMIx (exec.Config.StepdLightCommand: shoal-slurm's
	// stepd); empty: this binary supervises every task.
	TaskStepd []string

	// Security: TLS material, or the explicit choice to run without.
	Security

	Version string
	// Protocol lowers the protocol version this agent announces (0: this
	// build's, fsm.ProtocolVersion). Hidden flag --protocol-version: it
	// lets a test stand in for an older agent without an older binary.
	Protocol int
	Logger   *slog.Logger
}

// renewalsPerSecond is RenewalsPerSecond or its default.
func (c *Config) renewalsPerSecond() int {
	if c.RenewalsPerSecond > 0 {
		return c.RenewalsPerSecond
	}
	return worker.MaxRenewalsPerSecond
}

// Defaults of the liveness timings.
const (
	DefaultHeartbeatInterval = time.Second
	DefaultLeaseTTL          = 10 * time.Second
	DefaultKillGrace         = 10 * time.Second
	DefaultKillWait          = 30 * time.Second
	DefaultDeadServerGrace   = 30 * time.Second
	DefaultRaftReplicas      = 2
	DefaultScheduleInterval  = 2 * time.Second
	// DefaultPrologEpilogTimeout bounds --prolog and --epilog (Slurm
	// waits for ever by default; a hung script here would hold the
	// node's starts).
	DefaultPrologEpilogTimeout = 5 * time.Minute
	// DefaultGPUSampleInterval is how often GPUs are sampled: NVML's
	// utilization rate already averages over its own period (1/6 s to
	// 1 s), so this bounds the metrics' resolution, not their accuracy.
	DefaultGPUSampleInterval = 10 * time.Second
	DefaultGPUReportInterval = 5 * time.Minute
	// leaseMargin is added on the leader's side on top of LeaseTTL +
	// KillGrace to absorb scheduling delay and clock-rate drift.
	leaseMargin = 2 * time.Second
)

func (c *Config) setDefaults() {
	if c.BindAddr == "" {
		c.BindAddr = "127.0.0.1"
	}
	if c.AdvertiseAddr == "" {
		c.AdvertiseAddr = c.BindAddr
		if ip := net.ParseIP(c.BindAddr); ip != nil && ip.IsUnspecified() {
			c.AdvertiseAddr = "127.0.0.1"
		}
	}
	// Unset (zero) fields take their defaults.
	c.HTTPPort = cmp.Or(c.HTTPPort, DefaultHTTPPort)
	c.RaftPort = cmp.Or(c.RaftPort, DefaultRaftPort)
	c.GossipPort = cmp.Or(c.GossipPort, DefaultGossipPort)
	c.HeartbeatInterval = cmp.Or(c.HeartbeatInterval, DefaultHeartbeatInterval)
	c.LeaseTTL = cmp.Or(c.LeaseTTL, DefaultLeaseTTL)
	c.KillGrace = cmp.Or(c.KillGrace, DefaultKillGrace)
	c.KillWait = cmp.Or(c.KillWait, DefaultKillWait)
	c.DeadServerGrace = cmp.Or(c.DeadServerGrace, DefaultDeadServerGrace)
	c.RaftReplicas = cmp.Or(c.RaftReplicas, DefaultRaftReplicas)
	c.ScheduleInterval = cmp.Or(c.ScheduleInterval, DefaultScheduleInterval)
	c.RaftTiming = cmp.Or(c.RaftTiming, consensus.DefaultTiming())
	c.Logger = cmp.Or(c.Logger, slog.Default())
	c.Version = cmp.Or(c.Version, "dev")
	c.TaskHostname = cmp.Or(c.TaskHostname, TaskHostnameAuto)
	c.Cgroups = cmp.Or(c.Cgroups, CgroupsAuto)
	// Sampling intervals must be positive: 0 or less is the default.
	c.GPUSampleInterval = positiveOr(c.GPUSampleInterval, DefaultGPUSampleInterval)
	c.GPUReportInterval = positiveOr(c.GPUReportInterval, DefaultGPUReportInterval)
	c.TopologyInterval = positiveOr(c.TopologyInterval, DefaultTopologyInterval)
}

// positiveOr is d unless v is positive.
func positiveOr(v, d time.Duration) time.Duration {
	if v <= 0 {
		return d
	}
	return v
}

// validate names the first bad field, as the flag the user typed.
func (c *Config) validate() error {
	switch {
	case c.Name == "":
		return errors.New("--name: empty, want this node's name")
	case !cluster.ValidNodeName(c.Name):
		return fmt.Errorf("--name %q: want letters, digits, '-', '_' or '.', at most 63 characters, starting with a letter or digit", c.Name)
	case c.DataDir == "":
		return errors.New("--data-dir: empty, want a directory for this node's state")
	case net.ParseIP(c.BindAddr) == nil:
		return fmt.Errorf("--bind %q: want an IP address", c.BindAddr)
	case net.ParseIP(c.AdvertiseAddr) == nil:
		return fmt.Errorf("--advertise %q: want an IP address", c.AdvertiseAddr)
	case c.BootstrapExpect < 0:
		return fmt.Errorf("--bootstrap-expect %d: want 0 or more", c.BootstrapExpect)
	case c.RaftIneligible && (c.BootstrapExpect > 0 || len(c.Join) == 0):
		return errors.New("--raft-eligible=false: want --join and no --bootstrap-expect (a node that never holds a raft seat cannot bootstrap a cluster)")
	case c.KillGrace < 0:
		return fmt.Errorf("--kill-grace %s: want more than 0", c.KillGrace)
	case c.KillWait < 0:
		return fmt.Errorf("--kill-wait %s: want more than 0", c.KillWait)
	case c.LeaseTTL < 3*c.HeartbeatInterval:
		return fmt.Errorf("--lease-ttl %s: want at least 3 heartbeat intervals (%s)", c.LeaseTTL, 3*c.HeartbeatInterval)
	case c.RenewalsPerSecond < 0:
		return fmt.Errorf("--lease-renewals-per-second %d: want 0 (the default, %d) or more", c.RenewalsPerSecond, worker.MaxRenewalsPerSecond)
	case c.CertLifetime != 0 && (c.CertLifetime < time.Minute || c.CertLifetime > pki.MaxNodeLifetime):
		return fmt.Errorf("--cert-lifetime %s: want 1m to %s", c.CertLifetime, pki.MaxNodeLifetime)
	case c.CPUs < 0:
		return fmt.Errorf("--cpus %d: want 0 or more", c.CPUs)
	case c.TaskHostname != TaskHostnameAuto && c.TaskHostname != TaskHostnameOn && c.TaskHostname != TaskHostnameOff:
		return fmt.Errorf("--task-hostname %q: want auto, on or off", c.TaskHostname)
	case c.Cgroups != CgroupsAuto && c.Cgroups != CgroupsRequired && c.Cgroups != CgroupsOff:
		return fmt.Errorf("--cgroups %q: want auto, required or off", c.Cgroups)
	case c.TaskPidsMax < 0:
		return fmt.Errorf("--task-pids-max %d: want 0 (no bound) or more", c.TaskPidsMax)
	}
	if err := validProtocol(c.Protocol); err != nil {
		return err
	}
	if err := validLayout(c.CPUs, c.Sockets, c.CoresPerSocket, c.ThreadsPerCore); err != nil {
		return err
	}
	if err := cluster.ValidateFeatures(c.Features); err != nil {
		return fmt.Errorf("--features: %w", err)
	}
	for _, p := range []struct {
		flag string
		port int
	}{{"--http-port", c.HTTPPort}, {"--raft-port", c.RaftPort}, {"--gossip-port", c.GossipPort}} {
		if p.port < 1 || p.port > 65535 {
			return fmt.Errorf("%s %d: want 1 to 65535", p.flag, p.port)
		}
	}
	return nil
}

// Values of Config.TaskHostname.
const (
	TaskHostnameAuto = "auto"
	TaskHostnameOn   = "on"
	TaskHostnameOff  = "off"
)

// taskNamespace decides from TaskHostname whether this node's tasks run
// in namespaces of their own and returns the helper for exec, or nil. It
// says in the log when node names will not resolve inside jobs.
// OCIRuntimeNone is --oci-runtime's value for a node that runs no
// containers.
const OCIRuntimeNone = "none"

// ociRuntime is the path of the OCI runtime --container tasks run with:
// --oci-runtime's, which must be there, or the first of
// stepd.OCIRuntimes on PATH; "" when there is none (such tasks then fail
// to start, naming the node).
func (c *Config) ociRuntime(log *slog.Logger) (string, error) {
	if c.OCIRuntime == OCIRuntimeNone {
		return "", nil
	}
	if c.OCIRuntime != "" {
		p, err := osexec.LookPath(c.OCIRuntime)
		if err != nil {
			return "", fmt.Errorf("--oci-runtime %s: %w", c.OCIRuntime, err)
		}
		return p, nil
	}
	for _, name := range stepd.OCIRuntimes {
		if p, err := osexec.LookPath(name); err == nil {
			log.Debug("OCI runtime for --container", "path", p)
			return p, nil
		}
	}
	log.Info("no OCI runtime on PATH: --container tasks will not start here", "looked_for", stepd.OCIRuntimes)
	return "", nil
}

func (c *Config) taskNamespace(log *slog.Logger) ([]string, error) {
	if c.TaskHostname == TaskHostnameOff {
		return nil, nil
	}
	host, _ := os.Hostname()
	on := c.TaskHostname == TaskHostnameOn
	if short, _, _ := strings.Cut(host, "."); !on && short == c.Name {
		return nil, nil // a real cluster: the node's name is the host's
	}
	why := ""
	switch {
	case os.Geteuid() != 0:
		why = "the agent is not root"
	case len(c.TaskHelper) == 0:
		why = "no task namespace helper"
	default:
		if err := stepd.ProbeTaskNamespace(c.TaskHelper, c.Name); err != nil {
			why = err.Error()
		}
	}
	if why != "" {
		if on {
			return nil, fmt.Errorf("--task-hostname=on: tasks cannot get namespaces of their own: %s", why)
		}
		log.Warn("node names will not resolve inside jobs: tasks keep the host's name and /etc/hosts (--task-hostname)",
			"host", host, "node", c.Name, "why", why)
		return nil, nil
	}
	log.Info("tasks run with the node's name as hostname and an /etc/hosts naming the cluster's nodes", "host", host)
	return c.TaskHelper, nil
}

func (c *Config) httpAddr() string { return net.JoinHostPort(c.BindAddr, strconv.Itoa(c.HTTPPort)) }
func (c *Config) raftBind() string { return net.JoinHostPort(c.BindAddr, strconv.Itoa(c.RaftPort)) }
func (c *Config) raftAdvert() string {
	return net.JoinHostPort(c.AdvertiseAddr, strconv.Itoa(c.RaftPort))
}

// raftSeat is the raft address gossip announces: none from a node that
// may not hold a raft seat (RaftIneligible), which bootstrap and the
// leader's membership plan then pass over (consensus.Candidates).
func (c *Config) raftSeat() string {
	if c.RaftIneligible {
		return ""
	}
	return c.raftAdvert()
}
func (c *Config) apiAdvert() string {
	return net.JoinHostPort(c.AdvertiseAddr, strconv.Itoa(c.HTTPPort))
}
func (c *Config) gossipAdvert() string {
	return net.JoinHostPort(c.AdvertiseAddr, strconv.Itoa(c.GossipPort))
}

// validLayout checks the CPU layout flags against --cpus: all three zero
// (unknown), or all positive with --cpus their product.
func validLayout(cpus, sockets, cores, threads int) error {
	if sockets == 0 && cores == 0 && threads == 0 {
		return nil
	}
	if sockets <= 0 || cores <= 0 || threads <= 0 {
		return fmt.Errorf("--sockets %d, --cores-per-socket %d, --threads-per-core %d: want all three 1 or more", sockets, cores, threads)
	}
	if p := sockets * cores * threads; p != cpus {
		return fmt.Errorf("--cpus %d: want --sockets × --cores-per-socket × --threads-per-core = %d×%d×%d = %d", cpus, sockets, cores, threads, p)
	}
	return nil
}
