package agent

import (
	"context"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/internal/clock"
	"github.com/shoal-sched/shoal/leader"
	"github.com/shoal-sched/shoal/metrics"
	"github.com/shoal-sched/shoal/slurm"
	"github.com/shoal-sched/shoal/worker"
)

type taskEvent = api.TaskEvent

// Bounds of the per-node loops.
const (
	heartbeatTimeout = 2 * time.Second
	reportTimeout    = 5 * time.Second
	reportInterval   = time.Second
	driveInterval    = time.Second
)

// workerSide is what this node does as a worker, leader or not: it
// renews its lease (the heartbeat loop), runs the tasks the replica or
// its server gives it (the executor driver, prolog and epilog), reports
// their exits, follows a server while outside the raft configuration,
// samples its GPUs and cleans outputs up. It reaches the leader through
// callLeader, running lead's side here when this node leads.
type workerSide struct {
	*core
	// lead is the leader's side, for the calls made while this node leads.
	lead *leaderSide
	exec *exec.Executor
	// socket is the agent's Unix socket, which tasks reach it by; shimDir
	// holds srun, scontrol and sbatch links to this binary, put first on
	// the PATH of batch scripts and steps.
	socket, shimDir string

	// lease is this node's lease (lessee.Lease): when the last heartbeat
	// the leader acknowledged was sent, the TTL the leader granted with it
	// (the fence deadline is their sum), and the leader's applied index
	// in that acknowledgement, from which ranks start only on a replica at
	// least that far (startAllowed). Nil until the first: a starting
	// agent holds no lease. One pointer, so a reader sees the three of one
	// renewal.
	lease atomic.Pointer[worker.Lease]

	// fencing counts the times this node fenced its ranks; read into the
	// metrics at scrape time.
	fencing atomic.Uint64
	// gpuSample is the last GPU sample (agentGPUs); nil before it.
	gpuSample atomic.Pointer[metrics.GPUReading]
	// gpuUsage is what each job's GPUs here did so far (gpuSampler).
	gpuUsage worker.GPUUsage
	// scripts are the runs whose --prolog or --epilog ran here (prolog.go).
	scripts scriptRuns
}

// heartbeater is the worker's heartbeat loop (worker.Heartbeater) over
// this agent: the leader, local or remote, the lease it keeps for its
// tasks' supervisors and its executor.
func (w *workerSide) heartbeater() worker.Heartbeater {
	return worker.Heartbeater{
		Node: lessee{w}, Clock: clock.Wall{}, Log: w.log, Interval: w.cfg.HeartbeatInterval, TTL: w.cfg.LeaseTTL,
		MaxStretch: leader.MaxLeaseStretch,
		// A restarted agent inherits what is left of its predecessor's
		// lease, which its reattached tasks run under, rather than fencing
		// them before its first heartbeat.
		Inherited: time.Now().Add(w.exec.LeaseLeft()),
		Fenced:    func() { w.fencing.Add(1) },
		NoFence:   plantedNoFence, // a planted bug, test builds only (planted_nofence_off.go)
		// Renewals come when the leader says (worker.RenewAfter), which
		// spreads them as the cluster grows so it sees a bounded number a
		// second; under an older leader, by the cluster's size in gossip.
		RenewAfter: func(g worker.Grant) time.Duration {
			return worker.RenewAfter(g, w.gossip.NumMembers(), w.cfg.HeartbeatInterval, w.cfg.LeaseTTL,
				w.cfg.renewalsPerSecond(), rand.Float64())
		},
	}
}

// lessee is the worker side as worker.Lessee.
type lessee struct{ w *workerSide }

func (l lessee) Heartbeat(ctx context.Context) (worker.Grant, error) { return l.w.heartbeat(ctx) }

func (l lessee) Renewed(sent time.Time, index uint64, ttl time.Duration) {
	// The supervisors' lease first, with the TTL granted: a task started
	// once startAllowed sees the renewal must find it.
	if err := l.w.exec.RenewLease(sent, ttl); err != nil {
		l.w.log.Warn("write the lease for the supervisors", "err", err)
	}
	l.w.lease.Store(&worker.Lease{Renewed: sent, Index: index, TTL: ttl})
}

func (l lessee) Lease() worker.Lease { return l.w.currentLease() }
func (l lessee) Running() int        { return len(l.w.exec.Running()) }
func (l lessee) Fence()              { l.w.exec.StopAll(fsm.CauseFenced) }

// currentLease is this node's lease; before the first renewal, one
// renewed at Unix 0.
func (w *workerSide) currentLease() worker.Lease {
	if l := w.lease.Load(); l != nil {
		return *l
	}
	return worker.Lease{Renewed: time.Unix(0, 0), TTL: w.cfg.LeaseTTL}
}

// watchdogTTL arms the supervisors' watchdogs (which enforce the TTL each
// renewal was granted): LeaseTTL, or none in a build with the planted
// no-fence bug, which must leave the ranks of a node cut off running for
// the chaos checker to catch.
func (c *Config) watchdogTTL() time.Duration {
	if plantedNoFence {
		return 0
	}
	return c.LeaseTTL
}

func (w *workerSide) heartbeat(ctx context.Context) (worker.Grant, error) {
	ctx, cancel := context.WithTimeout(ctx, heartbeatTimeout)
	defer cancel()
	reply, err := callLeader(ctx, w.core, "/v1/internal/heartbeat", api.Heartbeat{Node: w.selfNode()},
		func(ctx context.Context, hb api.Heartbeat) (api.HeartbeatReply, error) {
			return w.lead.Heartbeat(ctx, hb.Node)
		})
	return worker.Grant{Index: reply.Index, TTL: reply.TTL, RenewEvery: reply.RenewEvery}, err
}

// startAllowed reports whether the executor may start ranks from view v:
// only under a live lease, and only from a replica that has applied at
// least what the leader had applied when it last renewed that lease. A
// node cut off and healed replays the log through states in which it
// still holds allocations the cluster has since taken back (NodeDown) and
// given to other jobs; acting on those would put two jobs on one GPU
// (DESIGN invariant 1). Stopping ranks needs no such care.
func (w *workerSide) startAllowed(v *fsm.View) bool {
	return worker.MayStart(w.currentLease(), time.Now(), v.Index)
}

// sendTaskEvent delivers a task report to the leader.
func (w *workerSide) sendTaskEvent(ctx context.Context, ev taskEvent) error {
	ctx, cancel := context.WithTimeout(ctx, reportTimeout)
	defer cancel()
	_, err := callLeader(ctx, w.core, "/v1/internal/task", ev, noReplyFrom(w.lead.TaskEvent))
	return err
}

// announceLeave tells the leader this node is going away.
func (w *workerSide) announceLeave(ctx context.Context) error {
	_, err := callLeader(ctx, w.core, "/v1/internal/leave", api.Heartbeat{Node: cluster.Node{Name: w.cfg.Name}},
		noReplyFrom(func(ctx context.Context, hb api.Heartbeat) error { return w.lead.NodeLeft(ctx, hb.Node.Name) }))
	return err
}

// drainBeforeStop is a graceful stop's first half with --drain-on-stop:
// the node is drained (no new job lands on it; the reason says why and
// stays until `shoal resume`), and the agent keeps running, renewing its
// lease and reporting exits, until its tasks have ended or wait is over.
func (w *workerSide) drainBeforeStop(ctx context.Context, wait time.Duration) {
	deadline := time.Now().Add(wait)
	w.log.Info("stopping: draining first", "wait", wait, "tasks", len(w.exec.Running()))
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	err := w.announceDrain(dctx)
	for err != nil && sleepCtx(dctx, 200*time.Millisecond) {
		err = w.announceDrain(dctx)
	}
	if err != nil {
		w.log.Warn("drain before stop", "err", err)
	}
	for len(w.exec.Running()) > 0 && sleepCtx(dctx, 200*time.Millisecond) {
	}
	if n := len(w.exec.Running()); n > 0 {
		w.log.Warn("stopping with tasks still running after the drain wait", "tasks", n)
	} else {
		w.log.Info("drained: every task has ended")
	}
}

// announceDrain asks the leader to drain this node before it stops.
func (w *workerSide) announceDrain(ctx context.Context) error {
	_, err := callLeader(ctx, w.core, "/v1/internal/drain", api.Heartbeat{Node: cluster.Node{Name: w.cfg.Name}},
		noReplyFrom(func(ctx context.Context, hb api.Heartbeat) error { return w.lead.DrainSelf(ctx, hb.Node.Name) }))
	return err
}

// DrainSelf is the leader's side of announceDrain.
func (l *leaderSide) DrainSelf(ctx context.Context, node string) error {
	res, err := l.apply(ctx, fsm.CmdSetDrain, fsm.SetDrain{Node: node, Drain: true, Reason: drainOnStopReason, Time: time.Now()})
	if err != nil {
		return err
	}
	return res.Err
}

// drainOnStopReason is the drain reason of a node stopping with
// --drain-on-stop.
const drainOnStopReason = "agent stopping (--drain-on-stop)"

// reporter is the worker's exit-report loop (worker.Reporter) over this
// agent's executor and the leader, local or remote.
func (w *workerSide) reporter() worker.Reporter {
	return worker.Reporter{Exits: exitLog{w.exec}, Leader: exitReporter{w}, Clock: clock.Wall{}, Log: w.log, Interval: reportInterval}
}

// exitLog is the executor as worker.ExitLog.
type exitLog struct{ e *exec.Executor }

func (l exitLog) Running() []exec.TaskKey  { return l.e.Running() }
func (l exitLog) Notify() <-chan struct{}  { return l.e.ExitNotify() }
func (l exitLog) Ack(k exec.TaskKey) error { return l.e.Ack(k) }
func (l exitLog) Recorded() []worker.Exit {
	pending := l.e.PendingExits()
	out := make([]worker.Exit, len(pending))
	for i, ex := range pending {
		out[i] = worker.Exit{
			Key:      exec.TaskKey{Job: ex.Job, Incarnation: ex.Incarnation, Step: ex.Step, Join: ex.Join},
			ExitCode: ex.ExitCode, Cause: ex.Cause, Usage: ex.Usage,
		}
	}
	return out
}

// exitReporter sends an exit to the leader with the job's GPU usage on
// this node (worker.ExitReporter).
type exitReporter struct{ w *workerSide }

func (r exitReporter) ReportExit(ctx context.Context, ex worker.Exit) error {
	k := ex.Key
	ev := taskEvent{
		Kind: leader.ReportExited, Job: k.Job, Incarnation: k.Incarnation, Node: r.w.cfg.Name, Join: k.Join,
		ExitCode: ex.ExitCode, Cause: ex.Cause, Usage: ex.Usage,
	}
	run := worker.GPURun{Job: k.Job, Incarnation: k.Incarnation}
	if k.Step != exec.NoStep {
		ev.Kind, ev.Step = leader.ReportStepExited, k.Step
	} else {
		ev.GPUUsage = r.w.gpuUsage.Get(run)
		// The job's own task ended here: its run ends here with it, and
		// the exit releases the node's resources.
		r.w.runEpilog(ctx, worker.Ref{Job: k.Job, Incarnation: k.Incarnation, Join: k.Join})
	}
	if err := r.w.sendTaskEvent(ctx, ev); err != nil {
		return err
	}
	if ev.Kind == leader.ReportExited {
		r.w.gpuUsage.Forget(run)
	}
	return nil
}

// driver is the worker's loop (worker.Driver) over this agent: its
// replica, its executor and the leader, local or remote.
func (w *workerSide) driver() worker.Driver[*fsm.View] {
	d := &agentWorker{workerSide: w, signals: &signalLog{seen: map[exec.TaskKey]uint64{}}, limits: map[exec.TaskKey]time.Duration{}}
	return worker.Driver[*fsm.View]{Name: w.cfg.Name, Node: d, Tasks: d, Clock: clock.Wall{}, Log: w.log, Interval: driveInterval}
}

// agentWorker is the worker side as the worker loop sees it: worker.Node and
// worker.Tasks. signals and limits are what Follow last delivered; floor
// is the index of the newest view a round acted on; only the loop's
// goroutine uses them.
type agentWorker struct {
	*workerSide
	signals *signalLog
	limits  map[exec.TaskKey]time.Duration
	floor   uint64
}

// Current is the replica's view while this node is a raft server, and
// the view a server last sent while it is a worker (follow.go). A view
// older than one a round already acted on is never acted on (switching
// between the two, or from a lagging server, must not stop a task a newer
// state started).
func (w *agentWorker) Current() (*fsm.View, bool) {
	var v *fsm.View
	ready := false
	if !w.Outside() {
		v = w.state.View()
		ready = w.caughtUp() && w.state.Diverged() == nil
	} else if v = w.remote.Current(); v != nil {
		ready = true
	} else {
		v = w.state.View() // nothing followed yet: wait on it, act on nothing
	}
	if v.Index < w.floor {
		return v, false
	}
	if ready {
		w.floor = v.Index
	}
	return v, ready
}

func (w *agentWorker) MayStart(v *fsm.View) bool { return w.startAllowed(v) }

func (w *agentWorker) Start(ctx context.Context, v *fsm.View, s worker.Start) bool {
	if !w.runProlog(ctx, s.Job) {
		return false
	}
	return w.start(ctx, v, s)
}

func (w *agentWorker) Report(ctx context.Context, r worker.Report) error {
	ev := taskEvent{Kind: r.Kind, Job: r.Job, Incarnation: r.Incarnation, Node: w.cfg.Name, Join: r.Join}
	if r.Kind == worker.ReportReleased {
		ev.Cause = fsm.CauseCancelled
		w.runEpilog(ctx, r.Ref)
	}
	return w.sendTaskEvent(ctx, ev)
}

func (w *agentWorker) Follow(v *fsm.View) {
	w.deliverSignals(v, w.signals)
	w.deliverTimeLimits(v, w.limits)
	w.scripts.forget(v, w.cfg.Name)
}

func (w *agentWorker) Running() []exec.TaskKey { return w.exec.Running() }

func (w *agentWorker) PendingExits() []exec.TaskKey {
	pending := w.exec.PendingExits()
	keys := make([]exec.TaskKey, len(pending))
	for i, ex := range pending {
		keys[i] = exec.TaskKey{Job: ex.Job, Incarnation: ex.Incarnation, Step: ex.Step, Join: ex.Join}
	}
	return keys
}

func (w *agentWorker) Stop(k exec.TaskKey, cause string) bool { return w.exec.Stop(k, cause) }

// deliverTimeLimits gives running tasks their job's time limit when it
// changed (scontrol update TimeLimit=; worker.TimeLimits decides); given
// holds what each task was last given, and forgets tasks that ended.
func (w *workerSide) deliverTimeLimits(v *fsm.View, given map[exec.TaskKey]time.Duration) {
	running := w.exec.Running()
	for _, ch := range worker.TimeLimits(v.Job, running, given) {
		if err := w.exec.SetTimeLimit(ch.Key, ch.Limit); err != nil {
			w.log.Debug("time limit", "job", uint64(ch.Key.Job), "step", ch.Key.Step, "err", err)
			continue // the next round tries again
		}
		given[ch.Key] = ch.Limit
	}
	live := make(map[exec.TaskKey]bool, len(running))
	for _, k := range running {
		live[k] = true
	}
	for k := range given {
		if !live[k] {
			delete(given, k)
		}
	}
}

// start starts one task of the plan; it says whether it did.
func (w *workerSide) start(ctx context.Context, v *fsm.View, s worker.Start) bool {
	j := s.Job
	l := w.launch(v, j, s.NodeIndex)
	if s.Step != nil {
		names := make([]string, len(s.Step.Nodes))
		tasks := 0
		for n, sn := range s.Step.Nodes {
			names[n] = sn.Node
			if sn.Node == w.cfg.Name {
				tasks = sn.Tasks
			}
		}
		stepCopy := *s.Step
		l.Step = &stepCopy
		l.StepNodeList = slurm.CompressHostlist(names)
		if err := w.exec.Start(ctx, l); err != nil {
			w.log.Warn("start step", "job", uint64(j.ID), "step", s.Step.ID, "err", err)
			return false
		}
		w.log.Info("step started here", "job", uint64(j.ID), "step", s.Step.ID, "tasks", tasks)
		return true
	}
	if j.Spec.Batch != nil {
		l.Stdout, l.Stderr = j.BatchOutput(w.cfg.Name)
		l.Stdin = j.BatchInput(w.cfg.Name)
	}
	if err := w.exec.Start(ctx, l); err != nil {
		// The executor records a start failure as an exit, which the report
		// loop sends; nothing else to do here.
		w.log.Warn("start job", "job", uint64(j.ID), "err", err)
		return false
	}
	w.log.Info("job started here", "job", uint64(j.ID), "incarnation", j.Incarnation, "node_rank", s.NodeIndex)
	return true
}

// launch is what the executor needs to run job j's tasks on this node,
// its allocation's node nodeIndex: the contract's inputs, the agent's
// address (so srun inside finds it) and the Slurm shims on PATH.
func (w *workerSide) launch(v *fsm.View, j *cluster.Job, nodeIndex int) exec.Launch {
	spec := j.Spec
	spec.Env = append(append([]string(nil), j.Spec.Env...), "SHOAL_ADDR=unix://"+w.socket)
	var hosts []exec.Host
	if len(w.cfg.TaskHelper) > 0 {
		hosts = w.taskHosts(v)
	}
	// An elastic allocation as it is now: a node that joined it sees the
	// nodes it has, without those it lost, and its index among them.
	alloc, k := j.Alloc.Current(nodeIndex)
	if k < 0 {
		alloc, k = j.Alloc, nodeIndex
	}
	return exec.Launch{
		Hosts:       hosts,
		Job:         j.ID,
		Incarnation: j.Incarnation,
		Spec:        spec,
		Alloc:       *alloc,
		NodeIndex:   k,
		Join:        j.Alloc.Nodes[nodeIndex].Join,
		NodeList:    slurm.CompressHostlist(alloc.NodeNames()),
		NodeName:    w.cfg.Name,
		ClusterName: v.Policy().Name(),
		Topology:    w.topology(),
		MasterAddr:  w.masterAddr(v, j.Alloc.Nodes[0].Node),
		ShimDir:     w.shimDir,
		JobStart:    j.StartTime,
		Array:       j.Array,
	}
}

// taskHosts are the cluster's node names at their agents' addresses (the
// host of each node's API address, as masterAddr), for the tasks' own
// /etc/hosts.
func (w *workerSide) taskHosts(v *fsm.View) []exec.Host {
	nodes := v.Nodes()
	hosts := make([]exec.Host, 0, len(nodes))
	for _, n := range nodes {
		addr := w.masterAddr(v, n.Name)
		if addr == n.Name {
			continue // no address known
		}
		hosts = append(hosts, exec.Host{Name: n.Name, Addr: addr})
	}
	return hosts
}

// masterAddr is the host ranks dial to reach the job's first node.
func (w *workerSide) masterAddr(v *fsm.View, first string) string {
	if first == w.cfg.Name {
		return w.cfg.AdvertiseAddr
	}
	if n, ok := v.Node(first); ok {
		if host, _, err := net.SplitHostPort(n.APIAddr); err == nil {
			return host
		}
	}
	return first // resolvable as a host name on a real cluster
}
