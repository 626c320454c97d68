package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/consensus"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/gossip"
	"github.com/shoal-sched/shoal/leader"
	"github.com/shoal-sched/shoal/placement"
)

// Bounds of the leader's loops.
const (
	// barrierTimeout is how long a new leader waits for its FSM to catch up
	// with everything committed before it acts on it.
	barrierTimeout = 10 * time.Second
	// applyTimeout bounds one Apply of a leader loop.
	applyTimeout  = 10 * time.Second
	voterInterval = 3 * time.Second
	leaseInterval = 500 * time.Millisecond
	// divergedHandOffInterval spaces a diverged leader's attempts to
	// transfer leadership (one fails when no other voter is caught up).
	divergedHandOffInterval = time.Second
)

// lead is the agent's lead loop (leader.Lead) over its raft and state.
func (a *Agent) lead() leader.Lead {
	return leader.Lead{
		Raft: a.raft, State: a.state, Lead: agentLeader{a}, Duties: agentLeader{a}, Clock: wallClock{},
		Log: a.log, BarrierTimeout: barrierTimeout, RegisterTimeout: applyTimeout,
	}
}

// RegisterSelf heartbeats this node to itself as leader (leader.Duties).
func (l agentLeader) RegisterSelf(ctx context.Context) error {
	_, err := l.a.leaderHeartbeat(ctx, l.a.selfNode())
	return err
}

func (l agentLeader) ProposePolicy(ctx context.Context) { l.a.proposePolicy(ctx) }

// Loops are the leader-only loops (leader.Duties): scheduling, leases,
// membership and the archive.
func (l agentLeader) Loops(since time.Time) []func(context.Context) {
	a := l.a
	return []func(context.Context){
		a.scheduler().Run, a.leaseWatch(since).Run, a.voterReconciler().Run, a.archiver().Run,
	}
}

// handOffLeadership transfers leadership away from a diverged replica,
// retrying every divergedHandOffInterval until it works or leadership is
// lost (ctx ends). Until then nothing is scheduled from this replica.
func (a *Agent) handOffLeadership(ctx context.Context) {
	for {
		err := a.raft.TransferLeadership(ctx)
		if err == nil {
			return
		}
		a.log.Error("hand leadership over from a diverged replica", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(divergedHandOffInterval):
		}
	}
}

// apply encodes and applies one command through raft.
func (a *Agent) apply(ctx context.Context, t fsm.CmdType, body any) (fsm.Result, error) {
	data, err := fsm.Encode(t, body)
	if err != nil {
		return fsm.Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, applyTimeout)
	defer cancel()
	if err := a.mayPropose(ctx, t, fsm.Needs(t, body)); err != nil { // versions.go
		return fsm.Result{}, err
	}
	start := time.Now()
	res, _, err := a.raft.Apply(ctx, data)
	a.metrics.Applied(time.Since(start))
	if err != nil {
		return res, fmt.Errorf("apply %s: %w", t, err)
	}
	return res, nil
}

// scheduler is the leader's scheduling loop (leader.Scheduler) over this
// agent: its state, its raft, the wall clock and its metrics.
func (a *Agent) scheduler() leader.Scheduler {
	s := leader.Scheduler{
		State: a.state, Propose: agentLeader{a}, Lead: agentLeader{a}, Clock: wallClock{},
		Metrics: agentLeader{a}, Log: a.log, Interval: a.cfg.ScheduleInterval, Gate: a.checkProtocol,
		Agents:   func(need int) bool { return everyAgentSpeaks(need, a.gossip.Members()) },
		Announce: a.raft.AnnounceCommit,
	}
	if plantedDoubleBook { // a planted bug, test builds only: see planted_doublebook_off.go
		s.Occupying = plantedHideNewest
	}
	return s
}

// agentLeader is the agent as the leader loops see it: leader.Proposer,
// leader.Leadership and leader.SchedulerMetrics.
type agentLeader struct{ a *Agent }

func (l agentLeader) Apply(ctx context.Context, t fsm.CmdType, body any) (fsm.Result, error) {
	return l.a.apply(ctx, t, body)
}

func (l agentLeader) HandOff(ctx context.Context) { l.a.handOffLeadership(ctx) }

func (l agentLeader) Passed(d time.Duration)     { l.a.metrics.Passed(d) }
func (l agentLeader) Placed()                    { l.a.placements.Add(1) }
func (l agentLeader) Started(wait time.Duration) { l.a.metrics.Started(wait) }
func (l agentLeader) Preempted()                 { l.a.preemptions.Add(1) }

// wallClock is leader.Clock on the real time.
type wallClock struct{}

func (wallClock) Now() time.Time                         { return time.Now() }
func (wallClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (wallClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// leaseTable records the leases the leader granted: for each node, the
// latest end of any (a later renewal granted a shorter TTL, when the
// cluster shrank, may not have reached the node, which then still holds
// the longer one).
type leaseTable struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// renew records a lease granted to node for ttl, on a heartbeat received
// at at (after the node sent it, from when the node counts it).
func (l *leaseTable) renew(node string, at time.Time, ttl time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.until == nil {
		l.until = map[string]time.Time{}
	}
	if end := at.Add(ttl); end.After(l.until[node]) {
		l.until[node] = end
	}
}

// HeldUntil is when the latest lease the leader granted node ends
// (leader.Heartbeats).
func (l *leaseTable) HeldUntil(node string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until[node]
}

// leaseWatch is the leader's lease loop (leader.LeaseWatch) over this
// agent, for the leadership gained at since.
func (a *Agent) leaseWatch(since time.Time) leader.LeaseWatch {
	return leader.LeaseWatch{
		State: a.state, Propose: agentLeader{a}, Clock: wallClock{}, Log: a.log, Heartbeats: &a.leases,
		Self: a.cfg.Name, Since: since, TTL: a.cfg.LeaseTTL, PerSecond: a.cfg.renewalsPerSecond(),
		Grace: a.cfg.KillGrace + leaseMargin, Interval: leaseInterval,
	}
}

// voterReconciler is the leader's membership loop
// (consensus.VoterReconciler) over this agent's raft and gossip.
func (a *Agent) voterReconciler() consensus.VoterReconciler {
	return consensus.VoterReconciler{
		Raft: a.raft, Peers: agentPeers{a}, Self: a.cfg.Name, MaxVoters: a.cfg.RaftVoters,
		DeadServerGrace: a.cfg.DeadServerGrace, Clock: wallClock{}, Log: a.log, Interval: voterInterval,
	}
}

// agentPeers is the agent's gossip and security state as the membership
// loop gathers them (consensus.Peers).
type agentPeers struct{ a *Agent }

func (p agentPeers) Gather() consensus.Gathered {
	members := p.a.gossip.Members()
	sec := p.a.state.View().Security()
	return consensus.Gathered{
		Members: raftMembers(members),
		Revoked: func(id string) bool {
			_, revoked := sec.RevokedAt(id)
			return revoked
		},
		MaxNonvoters: replicaCap(p.a.cfg.RaftReplicas, members),
	}
}

// raftMembers is the gossip view as consensus.Candidates reads it.
func raftMembers(members []gossip.Member) []consensus.Member {
	out := make([]consensus.Member, 0, len(members))
	for _, m := range members {
		out = append(out, consensus.Member{
			ID: m.Name, RaftAddr: m.Meta.RaftAddr, Switch: m.Meta.Switch,
			Alive: m.Status == gossip.StatusAlive || m.Status == gossip.StatusSuspect, Left: m.Status == gossip.StatusLeft,
		})
	}
	return out
}

// ErrForbidden is returned when the caller may not act on a job.
var ErrForbidden = cluster.ErrForbidden

// leaderSubmit validates a submit against the cluster and applies it.
func (a *Agent) leaderSubmit(ctx context.Context, requestID string, spec cluster.Spec) (fsm.Result, error) {
	v := a.state.View()
	if requestID != "" {
		if id, ok := v.JobByRequestID(requestID); ok {
			return fsm.Result{JobID: id, Duplicate: true}, nil
		}
	}
	spec = a.packSubmit(ctx, v, spec) // pack.go
	if b := spec.Batch; b != nil && b.Elastic && a.checkProtocol(ctx, fsm.CmdSubmitJob, fsm.Needs(fsm.CmdSubmitJob, fsm.SubmitJob{Spec: spec})) != nil {
		// A server of protocol 4 would refuse its elastic allocation: it
		// runs at the size it starts with, as batch jobs did.
		nb := *b
		nb.Elastic = false
		spec.Batch = &nb
	}
	if _, err := a.checkSubmit(v, spec); err != nil {
		return fsm.Result{}, err
	}
	res, err := a.apply(ctx, fsm.CmdSubmitJob, fsm.SubmitJob{RequestID: requestID, Spec: spec, Time: time.Now()})
	if err != nil {
		return res, err
	}
	if errors.Is(res.Err, fsm.ErrLimit) {
		return res, cluster.Mark(fsm.ErrLimit, res.Err)
	}
	if res.Err != nil {
		return res, invalid(res.Err)
	}
	return res, nil
}

// checkSubmit validates spec and judges it against its partition's nodes
// (the FSM names the partition again when it applies the submit); it
// returns the spec as the FSM will record it.
func (a *Agent) checkSubmit(v *fsm.View, spec cluster.Spec) (cluster.Spec, error) {
	if err := spec.Validate(); err != nil {
		return spec, invalid(err)
	}
	resolved, part, err := v.Policy().ResolvePartition(spec)
	if err != nil {
		return spec, invalid(err)
	}
	nodes := a.knownNodes(v)
	if part != nil && len(part.Nodes) > 0 {
		nodes = slices.DeleteFunc(slices.Clone(nodes), func(n *cluster.Node) bool { return !part.Has(n.Name) })
	}
	if err := placement.Check(nodes, resolved.Request); err != nil {
		if part != nil {
			err = fmt.Errorf("partition %s: %w", part.Name, err)
		}
		return spec, invalid(err)
	}
	return resolved, nil
}

// leaderTestOnly is sbatch --test-only: the spec checked as a submit
// would be, and when and where it could start (placement.EarliestStart),
// without submitting it.
func (a *Agent) leaderTestOnly(spec cluster.Spec) (api.TestOnlyResponse, error) {
	v := a.state.View()
	resolved, err := a.checkSubmit(v, spec)
	if err != nil {
		return api.TestOnlyResponse{}, err
	}
	now := time.Now()
	j := &cluster.Job{ID: v.LastJobID() + 1, Spec: resolved, State: cluster.JobPending, SubmitTime: now}
	var parts []cluster.Partition
	if p := v.Policy(); p != nil {
		parts = p.Partitions
	}
	start, nodes, ok := placement.EarliestStart(placement.NewView(v.Nodes(), v.Jobs()).WithPartitions(parts).WithSwitchLinks(v.SwitchLinks()), j, now)
	out := api.TestOnlyResponse{Job: uint64(j.ID), Partition: resolved.Request.Partition, Nodes: []string{}}
	if !ok {
		return out, conflict(fmt.Errorf("job %d: no start can be estimated: it waits on jobs without a time limit or on nodes that are down", j.ID))
	}
	out.Start = api.FormatTime(start)
	for _, n := range nodes {
		out.Nodes = append(out.Nodes, n.Node)
	}
	out.CPUs = resolved.Request.Ranks(resolved.Request.Nodes) * max(1, resolved.Request.CPUsPerTask)
	return out, nil
}

// knownNodes is every node the FSM records, plus live gossip members that
// have not registered yet (a forming cluster, a node just started): a
// submit is judged against the cluster as it is about to be, not refused
// because a heartbeat has not landed.
func (a *Agent) knownNodes(v *fsm.View) []*cluster.Node {
	nodes := v.Nodes()
	for _, m := range a.gossip.Members() {
		if m.Status != gossip.StatusAlive {
			continue
		}
		if _, ok := v.Node(m.Name); ok {
			continue
		}
		n := &cluster.Node{Name: m.Name, Status: cluster.NodeUp, GPUs: make([]cluster.GPU, m.Meta.GPUs)}
		n.Features, _ = cluster.ParseFeatures(m.Meta.Features) // DecodeMeta checked them
		for i := range n.GPUs {
			n.GPUs[i] = cluster.GPU{Index: i, Model: m.Meta.GPUModel, MemoryMiB: m.Meta.GPUMemoryMiB, NUMA: -1}
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// leaderSetDrain drains or resumes a node on behalf of who (root only:
// leader.PlanSetDrain).
func (a *Agent) leaderSetDrain(ctx context.Context, node string, drain bool, reason string, who cluster.Identity) error {
	v := a.state.View()
	plan, err := leader.PlanSetDrain(v, node, drain, reason, callerOf(v.Policy(), who))
	if _, err = a.proposeOr(ctx, plan, err); err != nil {
		return err
	}
	verb := "resume"
	if drain {
		verb = "drain"
	}
	a.log.Info("node "+verb+"ed", "node", node, "reason", reason, "by", who.User)
	return nil
}

// leaderNodeLeft marks a node that is stopping gracefully as left.
func (a *Agent) leaderNodeLeft(ctx context.Context, node string) error {
	if _, ok := a.state.View().Node(node); !ok {
		return nil // never registered: nothing to mark
	}
	res, err := a.apply(ctx, fsm.CmdNodeLeft, fsm.NodeLeft{Node: node, Time: time.Now()})
	if err != nil {
		return err
	}
	if res.Err != nil {
		return invalid(res.Err)
	}
	a.log.Info("node left", "node", node)
	return nil
}

// leaderHeartbeat renews a node's lease and registers or updates its
// record when what it announces changed.
//
// It answers with the leader's applied index, which the node must reach
// before it starts any rank (see HeartbeatReply): every NodeDown or
// NodeLeft that took allocations back from the node is at or below it;
// and with the lease it granted (leader.GrantLease over the nodes the log
// holds), recorded before the answer leaves so the lease loop never
// judges the node by less than it was told.
func (a *Agent) leaderHeartbeat(ctx context.Context, n cluster.Node) (api.HeartbeatReply, error) {
	if !cluster.ValidNodeName(n.Name) {
		return api.HeartbeatReply{}, invalid(fmt.Errorf("heartbeat: node name %q is not valid", n.Name))
	}
	v := a.state.View()
	g := leader.GrantLease(len(v.Nodes()), a.cfg.LeaseTTL, a.cfg.renewalsPerSecond(), agreedStretch(a.gossip.Members()))
	a.leases.renew(n.Name, time.Now(), g.TTL)
	a.renewals.Add(1)
	reply := func() api.HeartbeatReply {
		return api.HeartbeatReply{Index: a.state.Index(), TTL: g.TTL, RenewEvery: g.RenewEvery}
	}
	cur, ok := v.Node(n.Name)
	if ok && cur.Status == cluster.NodeUp && sameAnnouncement(cur, &n) {
		return reply(), nil
	}
	res, err := a.apply(ctx, fsm.CmdUpsertNode, fsm.UpsertNode{Node: n, Time: time.Now()})
	if err != nil {
		return api.HeartbeatReply{}, err
	}
	if res.Err != nil {
		return api.HeartbeatReply{}, invalid(res.Err)
	}
	if !ok {
		a.log.Info("node registered", "node", n.Name, "gpus", len(n.GPUs), "switch", n.Topology.Switch)
	}
	return reply(), nil
}

// agreedStretch is how far the leader may stretch a lease
// (leader.GrantLease): the least LeaseStretch any live member announces,
// none (0) while an agent older than stretched leases is alive, since it
// could be elected and would judge a node by --lease-ttl alone. It is
// pure.
func agreedStretch(members []gossip.Member) int {
	stretch := leader.MaxLeaseStretch
	for _, m := range members {
		if m.Status == gossip.StatusAlive {
			stretch = min(stretch, m.Meta.LeaseStretch)
		}
	}
	return stretch
}

// sameAnnouncement compares what a node announces about itself.
func sameAnnouncement(a, b *cluster.Node) bool {
	if a.APIAddr != b.APIAddr || a.RaftAddr != b.RaftAddr || a.GossipAddr != b.GossipAddr ||
		a.CPUs != b.CPUs || a.MemoryMiB != b.MemoryMiB || a.Topology != b.Topology ||
		a.Sockets != b.Sockets || a.CoresPerSocket != b.CoresPerSocket || a.ThreadsPerCore != b.ThreadsPerCore ||
		a.Version != b.Version || len(a.GPUs) != len(b.GPUs) || !slices.Equal(a.Features, b.Features) {
		return false
	}
	for i := range a.GPUs {
		ga, gb := a.GPUs[i], b.GPUs[i]
		if ga.Index != gb.Index || ga.UUID != gb.UUID || ga.Model != gb.Model || ga.MemoryMiB != gb.MemoryMiB ||
			ga.NUMA != gb.NUMA || !slices.Equal(ga.NVLinkPeers, gb.NVLinkPeers) {
			return false
		}
	}
	return true
}

// leaderTaskEvent turns a node's task report into a command.
func (a *Agent) leaderTaskEvent(ctx context.Context, ev taskEvent) error {
	var (
		res fsm.Result
		err error
	)
	switch ev.Kind {
	case "started":
		res, err = a.apply(ctx, fsm.CmdTaskStarted, fsm.TaskStarted{
			Job: ev.Job, Incarnation: ev.Incarnation, Node: ev.Node, Join: ev.Join, Time: time.Now()})
	case "exited":
		res, err = a.apply(ctx, fsm.CmdTaskExited, fsm.TaskExited{
			Job: ev.Job, Incarnation: ev.Incarnation, Node: ev.Node, Join: ev.Join,
			ExitCode: ev.ExitCode, Cause: ev.Cause, Usage: ev.Usage, Time: time.Now()})
	case eventPrologFailed, eventEpilogFailed:
		return a.leaderScriptFailed(ctx, ev)
	case "gpu-usage":
		// Applied below with an exit's; alone, it changes nothing else.
	case "step-exited":
		res, err = a.apply(ctx, fsm.CmdStepExited, fsm.StepExited{
			Job: ev.Job, Incarnation: ev.Incarnation, Step: ev.Step, Node: ev.Node,
			ExitCode: ev.ExitCode, Cause: ev.Cause, Usage: ev.Usage, Time: time.Now()})
	default:
		return invalid(fmt.Errorf("kind %q: want started, exited, step-exited, gpu-usage, prolog-failed or epilog-failed", ev.Kind))
	}
	if err == nil && res.Err == nil && ev.GPUUsage != nil && (ev.Kind == "exited" || ev.Kind == "gpu-usage") {
		res, err = a.apply(ctx, fsm.CmdRecordGPUUsage, fsm.RecordGPUUsage{
			Job: ev.Job, Incarnation: ev.Incarnation, Node: ev.Node, Join: ev.Join, Usage: *ev.GPUUsage})
		if errors.Is(err, fsm.ErrUnsupportedByCluster) {
			// Agents of an older protocol still serve: the usage is not
			// recorded until every server is upgraded, the exit is.
			a.log.Debug("GPU usage not recorded: the cluster does not speak its protocol yet", "job", uint64(ev.Job))
			return nil
		}
	}
	if err != nil {
		return err
	}
	if res.Err != nil {
		if errors.Is(res.Err, fsm.ErrUnknownJob) || errors.Is(res.Err, fsm.ErrUnknownStep) {
			return nil // nothing to report to: acknowledge so the node stops retrying
		}
		return invalid(res.Err)
	}
	return nil
}
