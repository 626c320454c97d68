package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	osexec "os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/agent"
	"github.com/shoal-sched/shoal/cgroup"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/consensus"
	"github.com/shoal-sched/shoal/exec/rankexec"
	"github.com/shoal-sched/shoal/exec/task"
	"github.com/shoal-sched/shoal/gpu"
	"github.com/shoal-sched/shoal/pki"
	"github.com/shoal-sched/shoal/slurm"
	"github.com/shoal-sched/shoal/topology"
)

func newAgentCmd(g *globalFlags) *cobra.Command {
	var (
		cfg       agent.Config
		join      []string
		gpus      string
		gpuModel  string
		gpuMemory string
		// simGPULoad is --sim-gpu-load, in percent.
		simGPULoad float64
		memory     string
		features   string
		devTiming  bool
		// raftReplicas is --raft-replicas: 0 means none (Config's -1).
		raftReplicas int
		// raftEligible is --raft-eligible (Config's RaftIneligible negated).
		raftEligible bool
		logLevel     string
		logJSON      bool
		// policyFile is --policy: the queue policy this agent proposes
		// when it leads.
		policyFile string
		topoFile   string
		// discover is --discover-topology; lldpSocket --lldp-socket.
		discover   string
		lldpSocket string
	)
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run a Shoal agent: this node joins (or forms) a cluster and runs the jobs placed on it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// In `shoal bench scale --in-process`, one agent of many in
			// the process: its own log, no process-wide CPU profile.
			inProc, _ := cmd.Context().Value(inProcessKey{}).(*inProcessAgent)
			logTo := io.Writer(os.Stderr)
			if inProc != nil {
				logTo = inProc.log
			}
			log, err := newLogger(logTo, logLevel, logJSON)
			if err != nil {
				return err
			}
			cfg.Logger = log
			cfg.Version = version
			cfg.DataDir = g.dataDir
			// --token: a node without a certificate gets one with it.
			cfg.JoinToken = g.token
			if cfg.DataDir == "" {
				cfg.DataDir = defaultDataDir()
			}
			if cfg.Name == "" {
				if cfg.Name, err = os.Hostname(); err != nil {
					return fmt.Errorf("--name: not given and the host name is unknown: %w", err)
				}
				cfg.Name, _, _ = strings.Cut(cfg.Name, ".")
			}
			for _, j := range join {
				for _, part := range strings.Split(j, ",") {
					if part = strings.TrimSpace(part); part != "" {
						cfg.Join = append(cfg.Join, part)
					}
				}
			}
			host, err := cgroup.HostCPUs()
			if err != nil {
				log.Warn("CPU layout not detected", "err", err)
			}
			cfg.CPUs, cfg.Sockets, cfg.CoresPerSocket, cfg.ThreadsPerCore = cpuLayout(
				cfg.CPUs, cfg.Sockets, cfg.CoresPerSocket, cfg.ThreadsPerCore, host)
			if memory != "" {
				if cfg.MemoryMiB, err = parseMemory("--memory", memory); err != nil {
					return err
				}
			} else {
				cfg.MemoryMiB = systemMemoryMiB()
			}
			gpuMemMiB, err := parseMemory("--gpu-memory", gpuMemory)
			if err != nil {
				return err
			}
			if cfg.GPUs, err = discoverGPUs(cmd, log, gpus, gpuModel, gpuMemMiB); err != nil {
				return err
			}
			if cfg.GPUSampler, err = gpuSampler(log, gpus, cfg.GPUs, simGPULoad); err != nil {
				return err
			}
			if devTiming {
				cfg.RaftTiming = consensus.FastTiming()
			}
			if cfg.RaftVoters < 0 || cfg.RaftVoters%2 == 0 && cfg.RaftVoters != 0 {
				return fmt.Errorf("--raft-voters %d: want an odd number, or 0 for 3 or 5 by cluster size", cfg.RaftVoters)
			}
			if raftReplicas < 0 {
				return fmt.Errorf("--raft-replicas %d: want 0 or more", raftReplicas)
			}
			cfg.RaftReplicas = raftReplicas
			cfg.RaftIneligible = !raftEligible
			if raftReplicas == 0 {
				cfg.RaftReplicas = -1 // Config's "none"; its 0 is the default
			}
			if topoFile != "" {
				if err := topologyFromConf(cmd, &cfg, topoFile); err != nil {
					return err
				}
			}
			if cfg.TopologySources, err = topologySources(discover, &cfg, lldpSocket); err != nil {
				return err
			}
			if cfg.Features, err = cluster.ParseFeatures(features); err != nil {
				return fmt.Errorf("--features: %w", err)
			}
			if policyFile != "" {
				p, err := readPolicyFile(policyFile)
				if err != nil {
					return err
				}
				cfg.Policy = &p
			}
			if exe, err := os.Executable(); err == nil {
				rank, light := smallTaskBinary(exe, log)
				cfg.TaskHelper = []string{rank, rankexec.NamespaceCommand}
				cfg.TaskExec = []string{rank, rankexec.ExecCommand}
				cfg.TaskStepd = light
			}
			if inProc == nil {
				stopProfile, err := startCPUProfile(os.Getenv(cpuProfileEnv), cfg.Name, log)
				if err != nil {
					return err
				}
				defer stopProfile()
			}
			a, err := agent.New(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if inProc != nil {
				inProc.started(a.Crash)
			}
			return a.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Name, "name", "", "this node's name, unique in the cluster (default: the host name)")
	f.StringVar(&cfg.BindAddr, "bind", "127.0.0.1", "IP address to listen on")
	f.StringVar(&cfg.AdvertiseAddr, "advertise", "", "IP address other nodes use to reach this one (default: --bind)")
	f.IntVar(&cfg.HTTPPort, "http-port", agent.DefaultHTTPPort, "HTTP API port")
	f.IntVar(&cfg.RaftPort, "raft-port", agent.DefaultRaftPort, "Raft port")
	f.IntVar(&cfg.GossipPort, "gossip-port", agent.DefaultGossipPort, "gossip port (TCP and UDP)")
	f.StringSliceVar(&join, "join", nil, "gossip address of any member, host or host:port (repeatable or comma-separated; port defaults to 7072)")
	f.IntVar(&cfg.BootstrapExpect, "bootstrap-expect", 0, "form a new cluster once this many nodes started with the same value have met")
	f.StringVar(&gpus, "gpus", "auto", "GPUs this node offers: auto (NVML) or N simulated GPUs")
	f.StringVar(&gpuModel, "gpu-model", "SimGPU-80GB", "model name of simulated GPUs")
	f.StringVar(&gpuMemory, "gpu-memory", "80G", "memory of each simulated GPU")
	f.Float64Var(&simGPULoad, "sim-gpu-load", 0, "utilization, in percent, every simulated GPU a job holds reports to the GPU metrics (0 to 100)")
	f.DurationVar(&cfg.GPUReportInterval, "gpu-report-interval", agent.DefaultGPUReportInterval, "how often running jobs' GPU usage so far is recorded in the cluster's state (always with their exit)")
	f.DurationVar(&cfg.GPUSampleInterval, "gpu-sample-interval", agent.DefaultGPUSampleInterval, "how often the GPUs' utilization, memory, temperature and power are sampled for /metrics")
	f.IntVar(&cfg.CPUs, "cpus", 0, "CPUs this node offers (default: detected), like slurm.conf CPUs=")
	f.IntVar(&cfg.Sockets, "sockets", 0, "CPU sockets of this node, like slurm.conf Sockets= (default: detected; --cpus must be sockets × cores × threads)")
	f.IntVar(&cfg.CoresPerSocket, "cores-per-socket", 0, "cores per socket, like slurm.conf CoresPerSocket= (default: detected, or 1 when --sockets is given)")
	f.IntVar(&cfg.ThreadsPerCore, "threads-per-core", 0, "hardware threads per core, like slurm.conf ThreadsPerCore= (default: detected, or 1 when --sockets is given)")
	f.StringVar(&cfg.Cgroups, "cgroups", agent.CgroupsAuto, "confine tasks to their CPUs, memory and GPUs with cgroups: auto (what the host has; says what is missing), required (refuse to start without them) or off")
	f.StringVar(&cfg.OCIRuntime, "oci-runtime", "", "the OCI runtime that runs --container tasks, runc or crun (a name on PATH or a path); default: the first of crun and runc on PATH; none: this node runs no containers (such tasks fail to start, naming the node)")
	f.Int64Var(&cfg.TaskPidsMax, "task-pids-max", 0, "most processes and threads one task may have on this node (cgroup pids.max); 0: no bound (threads count: a training job's data loaders run thousands)")
	f.StringVar(&memory, "memory", "", "memory this node offers, e.g. 512G (default: detected), like slurm.conf RealMemory=")
	f.StringVar(&cfg.Topology.Switch, "switch", "", "this node's leaf switch")
	f.StringVar(&cfg.Topology.SwitchParent, "switch-parent", "", "the leaf switch's parent (spine)")
	f.StringVar(&cfg.Topology.Block, "block", "", "this node's NVLink block (domain)")
	f.StringVar(&topoFile, "topology-conf", "", "a Slurm topology.conf (SwitchName= ... Nodes=/Switches=, BlockName= ... Nodes=) to read this node's switch, parent and block from; --switch, --switch-parent and --block win")
	f.StringVar(&discover, "discover-topology", "auto", "find this node's place by itself: auto (the leaf switch from lldpd's neighbour on the interface holding --advertise/--bind, leaf and parent from ibnetdiscover, the NVLink block from NVML) or off; --switch, --switch-parent, --block and --topology-conf win, field by field")
	f.DurationVar(&cfg.TopologyInterval, "topology-interval", agent.DefaultTopologyInterval, "how often topology discovery runs again (a re-cabled node is seen within it)")
	f.StringVar(&lldpSocket, "lldp-socket", "", "lldpd's control socket, for lldpcli -u (default: lldpcli's own, /run/lldpd.socket)")
	f.StringVar(&features, "features", "", "this node's features for jobs' --constraint, comma-separated (like slurm.conf Features=)")
	f.DurationVar(&cfg.LeaseTTL, "lease-ttl", agent.DefaultLeaseTTL, "how long this node's allocations survive without contact with the leader")
	f.DurationVar(&cfg.KillGrace, "kill-grace", agent.DefaultKillGrace, "time between SIGTERM and SIGKILL when this node fences its ranks (lost lease, agent stopping); part of the lease bound")
	f.DurationVar(&cfg.KillWait, "kill-wait", agent.DefaultKillWait, "time between SIGTERM and SIGKILL at a time limit, on cancel or when a rank failed (Slurm's KillWait)")
	f.DurationVar(&cfg.DrainOnStop, "drain-on-stop", 0, "on SIGTERM, drain this node and wait up to this long for its jobs to end before stopping what is left (requeued) and leaving (default 0: stop them at once)")
	f.StringVar(&cfg.Prolog, "prolog", "", "program run as root before a job's first task on this node, with SLURM_JOB_ID, SLURM_JOB_USER, SLURM_JOB_UID, SLURM_JOB_NODELIST, ... in its environment (slurm.conf Prolog=); one that fails drains the node (\"Prolog error\") and requeues the job held")
	f.StringVar(&cfg.Epilog, "epilog", "", "program run as root once a job has ended on this node (completed, failed or cancelled), with the prolog's environment (slurm.conf Epilog=); one that fails drains the node (\"Epilog error\")")
	f.DurationVar(&cfg.PrologEpilogTimeout, "prolog-epilog-timeout", agent.DefaultPrologEpilogTimeout, "how long --prolog and --epilog may run before they are killed, which counts as their failure (slurm.conf PrologEpilogTimeout=); 0: no bound")
	f.BoolVar(&cfg.KeepTasksOnStop, "keep-tasks-on-stop", false, "on SIGTERM, stop for a restart: tasks run on under their supervisors and the next agent on this data dir reattaches to them (default: stop them and leave)")
	f.DurationVar(&cfg.HeartbeatInterval, "heartbeat", agent.DefaultHeartbeatInterval, "lease renewal interval")
	f.DurationVar(&cfg.DeadServerGrace, "dead-server-grace", agent.DefaultDeadServerGrace, "how long a failed raft voter stays before it is replaced")
	f.IntVar(&cfg.RaftVoters, "raft-voters", 0, "raft voters, odd (default 0: 3, or 5 from five nodes up)")
	f.IntVar(&raftReplicas, "raft-replicas", agent.DefaultRaftReplicas, "non-voter raft replicas kept beside the 3 or 5 voters; every other node is a worker that follows its jobs from a server")
	f.BoolVar(&raftEligible, "raft-eligible", true, "whether this node may hold a raft seat (voter or replica); false: it is always a worker that follows its jobs from a server, and needs --join")
	f.BoolVar(&devTiming, "dev-timing", false, "fast raft timeouts for loopback clusters (shoal dev, tests); not for real networks")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	// Hidden: tests stand in for an agent of an older protocol with it.
	f.IntVar(&cfg.Protocol, "protocol-version", 0, "announce this older protocol version (tests of rolling upgrades)")
	_ = f.MarkHidden("protocol-version") // the flag is defined just above: cannot fail
	// Hidden: tests of a few agents stretch leases with a lower bound.
	f.IntVar(&cfg.RenewalsPerSecond, "lease-renewals-per-second", 0, "bound on lease renewals a second at the leader, which stretches leases as the cluster grows (default 50)")
	_ = f.MarkHidden("lease-renewals-per-second") // the flag is defined just above: cannot fail
	f.BoolVar(&logJSON, "log-json", false, "log JSON lines instead of text")
	f.StringVar(&cfg.TaskHostname, "task-hostname", agent.TaskHostnameAuto, "run each task with the node's name as hostname and an /etc/hosts naming the cluster's nodes, in namespaces of its own (needs root): auto (when the host's name is not the node's), on or off")
	f.StringVar(&cfg.SocketPath, "socket", "", "the CLI's Unix socket (default <data-dir>/shoal.sock; the CLI also looks in /run/shoal/shoal.sock)")
	f.StringVar(&cfg.TLS.CA, "tls-ca", "", "the cluster CA certificate (PEM; default <data-dir>/tls/ca.pem)")
	f.StringVar(&cfg.TLS.Cert, "tls-cert", "", "this node's certificate, signed by the cluster CA and naming --name (PEM; default <data-dir>/tls/node.pem)")
	f.StringVar(&cfg.TLS.Key, "tls-key", "", "this node's private key (PEM, mode 0600; default <data-dir>/tls/node-key.pem)")
	f.StringVar(&cfg.TLS.GossipKey, "gossip-key-file", "", "the gossip encryption key (base64, mode 0600; default <data-dir>/tls/gossip.key)")
	f.DurationVar(&cfg.CertLifetime, "cert-lifetime", pki.DefaultNodeLifetime, "how long the node certificates this agent signs as leader are valid (nodes renew theirs when a third is left)")
	f.BoolVar(&cfg.Insecure, "insecure", false, "run with no TLS and no gossip encryption: anyone who reaches this agent's ports can act as any node and any user (never on a shared network)")
	f.StringVar(&cfg.ClusterName, "cluster-name", "shoal", "name written into the CA a first node creates")
	f.StringVar(&policyFile, "policy", "", "queue policy file (JSON: priority weights, fair-share accounts, QoS levels) this agent makes the cluster's when it becomes leader; give every agent the same file")
	return cmd
}

func newLogger(w io.Writer, level string, asJSON bool) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	if asJSON {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}

// gpuSampler returns what samples the node's GPUs: the synthetic load of
// simulated ones (--gpus N), NVML for real ones; nil without GPUs, or
// when NVML cannot be opened for sampling (logged: the node still offers
// its GPUs).
func gpuSampler(log *slog.Logger, spec string, gpus []cluster.GPU, simLoadPercent float64) (gpu.Sampler, error) {
	if len(gpus) == 0 {
		return nil, nil
	}
	if auto, _, _ := gpu.Parse(spec); !auto {
		s, err := gpu.NewSimulatedSampler(gpus, simLoadPercent/100)
		if err != nil {
			return nil, fmt.Errorf("--sim-gpu-load %v: want 0 to 100", simLoadPercent)
		}
		return s, nil
	}
	s, err := gpu.OpenNVMLSampler()
	if err != nil {
		log.Warn("GPUs are not sampled: no GPU utilization in the metrics", "err", err)
		return nil, nil
	}
	return s, nil
}

// discoverGPUs turns --gpus into this node's devices.
func discoverGPUs(cmd *cobra.Command, log *slog.Logger, spec, model string, memMiB uint64) ([]cluster.GPU, error) {
	auto, n, err := gpu.Parse(spec)
	if err != nil {
		return nil, err
	}
	if !auto {
		return gpu.Simulated(n, model, memMiB), nil
	}
	gpus, err := gpu.Discover(cmd.Context())
	if errors.Is(err, gpu.ErrNoNVML) {
		log.Warn("no GPUs: NVML is not available, so this node offers none; use --gpus N to simulate", "err", err)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--gpus auto: %w", err)
	}
	return gpus, nil
}

// parseMemory reads the agent's --memory and --gpu-memory as Slurm
// reads --mem (slurm.ParseMemory: MiB by default, a K, M, G or T suffix,
// K rounded up to whole MiB), ignoring spaces around the value.
func parseMemory(flag, s string) (uint64, error) {
	v, err := slurm.ParseMemory(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", flag, err)
	}
	return v, nil
}

// systemMemoryMiB reads MemTotal from /proc/meminfo, or 0.
func systemMemoryMiB() uint64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			fields := strings.Fields(rest)
			if len(fields) > 0 {
				kb, _ := strconv.ParseUint(fields[0], 10, 64)
				return kb / 1024
			}
		}
	}
	return 0
}

// A small delay helper kept here so dev and tests agree on polling.
const pollInterval = 200 * time.Millisecond

// topologyFromConf fills the node's switch, its parent and its block from
// a Slurm topology.conf, where the flags did not give them. A node the
// file does not name is an error: a typo would otherwise scatter jobs.
func topologyFromConf(cmd *cobra.Command, cfg *agent.Config, file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("--topology-conf: %w", err)
	}
	topo, err := slurm.ParseTopology(string(data))
	if err != nil {
		return fmt.Errorf("--topology-conf %s: %w", file, err)
	}
	leaf, parent, block := topo.Place(cfg.Name)
	if leaf == "" && block == "" {
		return fmt.Errorf("--topology-conf %s: node %q is under no switch and in no block", file, cfg.Name)
	}
	f := cmd.Flags()
	if !f.Changed("switch") {
		cfg.Topology.Switch = leaf
	}
	if !f.Changed("switch-parent") {
		cfg.Topology.SwitchParent = parent
	}
	if !f.Changed("block") {
		cfg.Topology.Block = block
	}
	return nil
}

// topologySources are the sources --discover-topology runs: none for
// off; for auto, LLDP on the interface holding the node's advertise (or
// bind) address (the leaf), then the InfiniBand fabric (leaf and parent)
// and NVML's GPU fabric (the block). Merge takes each field from the
// first source that knows it, in this order.
func topologySources(mode string, cfg *agent.Config, lldpSocket string) ([]topology.Source, error) {
	switch mode {
	case "off":
		return nil, nil
	case "auto":
	default:
		return nil, fmt.Errorf("--discover-topology %q: want auto or off", mode)
	}
	if cfg.TopologyInterval <= 0 {
		return nil, fmt.Errorf("--topology-interval %s: want more than 0", cfg.TopologyInterval)
	}
	addr := cfg.AdvertiseAddr
	if addr == "" {
		addr = cfg.BindAddr
	}
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		// A host name: no interface holds it; LLDP finds nothing.
		ip = netip.Addr{}
	}
	return []topology.Source{
		topology.LLDP{Addr: ip, Socket: lldpSocket},
		topology.NewIBSource(),
		topology.NewNVMLSource(),
	}, nil
}

// cpuLayout fills --cpus and the layout flags from what was given and the
// host's CPUs: given no layout, the host's layout when --cpus is the
// host's count or not given (then it is the host's count), and none (all
// zero) for a node that claims another count (a simulated node); given
// part of a layout, the rest is 1 and --cpus, when not given, their
// product. agent.Config.validate refuses an inconsistent result.
func cpuLayout(cpus, sockets, cores, threads int, host []cgroup.HostCPU) (int, int, int, int) {
	if sockets == 0 && cores == 0 && threads == 0 {
		if len(host) == 0 {
			if cpus == 0 {
				cpus = runtime.NumCPU()
			}
			return cpus, 0, 0, 0
		}
		if cpus != 0 && cpus != len(host) {
			return cpus, 0, 0, 0
		}
		s, c, t := cgroup.Layout(host)
		return len(host), s, c, t
	}
	orOne := func(n int) int {
		if n == 0 {
			return 1
		}
		return n // a negative one is refused by validation
	}
	sockets, cores, threads = orOne(sockets), orOne(cores), orOne(threads)
	if cpus == 0 {
		cpus = sockets * cores * threads
	}
	return cpus, sockets, cores, threads
}

// taskProbeWait bounds each probe of shoal-slurm at an agent's start.
const taskProbeWait = 5 * time.Second

// smallTaskBinary is shoal-slurm beside self when it serves the ranks'
// exec shim and namespace helper (package rankexec; an older one does
// not), else self; stepd is shoal-slurm's supervisor command when it may
// supervise tasks too (built with cgo, so it resolves groups as self
// does), else nil. A task's start then costs the small binary's starts,
// not the agent's (BENCHMARKS.md, "Task start").
func smallTaskBinary(self string, log *slog.Logger) (rank string, stepd []string) {
	shim := slurm.ShimTarget(self)
	if shim == self {
		return self, nil
	}
	probe := func(args ...string) error {
		ctx, cancel := context.WithTimeout(context.Background(), taskProbeWait)
		defer cancel()
		out, err := osexec.CommandContext(ctx, shim, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s %s: %w: %s", shim, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	if err := probe(rankexec.ExecCommand, "--probe"); err != nil {
		log.Info("tasks start through this binary, not "+slurm.ShimBinary, "err", err)
		return self, nil
	}
	if err := probe(task.StepdArg, task.StepdProbe); err != nil {
		log.Info("tasks are supervised by this binary, not "+slurm.ShimBinary, "err", err)
		return shim, nil
	}
	return shim, []string{shim, task.StepdArg}
}
