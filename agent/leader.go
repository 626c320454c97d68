package agent

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/consensus"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/gossip"
	"github.com/shoal-sched/shoal/internal/clock"
	"github.com/shoal-sched/shoal/leader"
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

// leaderSide is what this node does while it leads: the lead loop and
// the leader-only loops it starts (scheduling, leases, voter
// reconciliation, the archive), and the leader's side of what the nodes
// and the API ask of it (heartbeats, task reports, submits, queue
// plans), each carried out by proposing commands. It is leader.Duties,
// leader.Proposer and leader.SchedulerMetrics.
type leaderSide struct {
	*core
	// leases is the latest end of every lease this leader granted.
	leases leader.LeaseTable
	// The counters read into the metrics at scrape time: placements and
	// preemptions this leader made, heartbeats it answered.
	placements, preemptions, renewals atomic.Uint64
}

// leadLoop is the lead loop (leader.Lead) over its raft and state.
func (l *leaderSide) leadLoop() leader.Lead {
	return leader.Lead{
		Raft: l.raft, State: l.state, Lead: l.handOver(), Duties: l, Clock: clock.Wall{},
		Log: l.log, BarrierTimeout: barrierTimeout, RegisterTimeout: applyTimeout,
	}
}

// RegisterSelf heartbeats this node to itself as leader (leader.Duties).
func (l *leaderSide) RegisterSelf(ctx context.Context) error {
	_, err := l.Heartbeat(ctx, l.selfNode())
	return err
}

func (l *leaderSide) ProposePolicy(ctx context.Context) { l.proposePolicy(ctx) }

// Loops are the leader-only loops (leader.Duties): scheduling, leases,
// membership and the archive.
func (l *leaderSide) Loops(since time.Time) []func(context.Context) {
	return []func(context.Context){
		l.scheduler().Run, l.leaseWatch(since).Run, l.voterReconciler().Run, l.archiver().Run,
	}
}

// handOver is a diverged leader's hand-off (leader.HandOver) over this
// agent's raft.
func (l *leaderSide) handOver() leader.HandOver {
	return leader.HandOver{Raft: l.raft, Clock: clock.Wall{}, Log: l.log, Interval: divergedHandOffInterval}
}

// scheduler is the leader's scheduling loop (leader.Scheduler) over this
// agent: its state, its raft, the wall clock and its metrics.
func (l *leaderSide) scheduler() leader.Scheduler {
	s := leader.Scheduler{
		State: l.state, Propose: l, Lead: l.handOver(), Clock: clock.Wall{},
		Metrics: l, Log: l.log, Interval: l.cfg.ScheduleInterval, Gate: l.checkProtocol,
		Agents:   func(need int) bool { return leader.EverySpeaks(need, liveProtocols(l.gossip.Members())) },
		Announce: l.raft.AnnounceCommit, Self: l.cfg.Name,
	}
	if plantedDoubleBook { // a planted bug, test builds only: see planted_doublebook_off.go
		s.Occupying = plantedHideNewest
	}
	return s
}

func (l *leaderSide) Apply(ctx context.Context, t fsm.CmdType, body any) (fsm.Result, error) {
	return l.apply(ctx, t, body)
}

func (l *leaderSide) Passed(d time.Duration)     { l.metrics.Passed(d) }
func (l *leaderSide) Placed()                    { l.placements.Add(1) }
func (l *leaderSide) Started(wait time.Duration) { l.metrics.Started(wait) }
func (l *leaderSide) Preempted()                 { l.preemptions.Add(1) }

// leaseWatch is the leader's lease loop (leader.LeaseWatch) over this
// agent, for the leadership gained at since.
func (l *leaderSide) leaseWatch(since time.Time) leader.LeaseWatch {
	return leader.LeaseWatch{
		State: l.state, Propose: l, Clock: clock.Wall{}, Log: l.log, Heartbeats: &l.leases,
		Self: l.cfg.Name, Since: since, TTL: l.cfg.LeaseTTL, PerSecond: l.cfg.renewalsPerSecond(),
		Grace: l.cfg.KillGrace + leaseMargin, Interval: leaseInterval,
	}
}

// voterReconciler is the leader's membership loop
// (consensus.VoterReconciler) over this agent's raft and gossip.
func (l *leaderSide) voterReconciler() consensus.VoterReconciler {
	return consensus.VoterReconciler{
		Raft: l.raft, Peers: agentPeers{l.core}, Self: l.cfg.Name, MaxVoters: l.cfg.RaftVoters,
		DeadServerGrace: l.cfg.DeadServerGrace, Clock: clock.Wall{}, Log: l.log, Interval: voterInterval,
	}
}

// agentPeers is the agent's gossip and security state as the membership
// loop gathers them (consensus.Peers).
type agentPeers struct{ c *core }

func (p agentPeers) Gather() consensus.Gathered {
	members := p.c.gossip.Members()
	sec := p.c.state.View().Security()
	return consensus.Gathered{
		Members: raftMembers(members),
		Revoked: func(id string) bool {
			_, revoked := sec.RevokedAt(id)
			return revoked
		},
		MaxNonvoters: leader.ReplicaCap(p.c.cfg.RaftReplicas, liveProtocols(members)),
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
func (l *leaderSide) leaderSubmit(ctx context.Context, requestID string, spec cluster.Spec) (fsm.Result, error) {
	v := l.state.View()
	if requestID != "" {
		if id, ok := v.JobByRequestID(requestID); ok {
			return fsm.Result{JobID: id, Duplicate: true}, nil
		}
	}
	spec = l.packSubmit(ctx, v, spec) // pack.go
	if b := spec.Batch; b != nil && b.Elastic && l.checkProtocol(ctx, fsm.CmdSubmitJob, fsm.Needs(fsm.CmdSubmitJob, fsm.SubmitJob{Spec: spec})) != nil {
		// A server of protocol 4 would refuse its elastic allocation: it
		// runs at the size it starts with, as batch jobs did.
		nb := *b
		nb.Elastic = false
		spec.Batch = &nb
	}
	if _, err := leader.CheckSubmit(v, l.knownNodes(v), spec); err != nil {
		return fsm.Result{}, err
	}
	res, err := l.apply(ctx, fsm.CmdSubmitJob, fsm.SubmitJob{RequestID: requestID, Spec: spec, Time: time.Now()})
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

// leaderTestOnly is sbatch --test-only (leader.PlanTestOnly).
func (l *leaderSide) leaderTestOnly(spec cluster.Spec) (api.TestOnlyResponse, error) {
	v := l.state.View()
	t, err := leader.PlanTestOnly(v, l.knownNodes(v), spec, time.Now())
	if err != nil && t.Job == 0 {
		return api.TestOnlyResponse{}, err
	}
	out := api.TestOnlyResponse{Job: uint64(t.Job), Partition: t.Spec.Request.Partition, Nodes: t.Nodes, CPUs: t.CPUs}
	if err == nil {
		out.Start = api.FormatTime(t.Start)
	}
	return out, err
}

// knownNodes is every node the FSM records, plus live gossip members that
// have not registered yet (a forming cluster, a node just started): a
// submit is judged against the cluster as it is about to be, not refused
// because a heartbeat has not landed.
func (l *leaderSide) knownNodes(v *fsm.View) []*cluster.Node {
	nodes := v.Nodes()
	for _, m := range l.gossip.Members() {
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

// NodeLeft marks a node that is stopping gracefully as left.
func (l *leaderSide) NodeLeft(ctx context.Context, node string) error {
	if _, ok := l.state.View().Node(node); !ok {
		return nil // never registered: nothing to mark
	}
	res, err := l.apply(ctx, fsm.CmdNodeLeft, fsm.NodeLeft{Node: node, Time: time.Now()})
	if err != nil {
		return err
	}
	if res.Err != nil {
		return invalid(res.Err)
	}
	l.log.Info("node left", "node", node)
	return nil
}

// Heartbeat renews a node's lease and registers or updates its
// record when what it announces changed (leader.PlanHeartbeat).
//
// It answers with the leader's applied index, which the node must reach
// before it starts any rank (see HeartbeatReply): every NodeDown or
// NodeLeft that took allocations back from the node is at or below it;
// and with the lease it granted (leader.GrantLease over the nodes the log
// holds), recorded before the answer leaves so the lease loop never
// judges the node by less than it was told.
func (l *leaderSide) Heartbeat(ctx context.Context, n cluster.Node) (api.HeartbeatReply, error) {
	plan, err := leader.PlanHeartbeat(l.state.View(), n, l.cfg.LeaseTTL, l.cfg.renewalsPerSecond(), agreedStretch(l.gossip.Members()))
	if err != nil {
		return api.HeartbeatReply{}, err
	}
	l.leases.Renew(n.Name, time.Now(), plan.Grant.TTL)
	l.renewals.Add(1)
	reply := func() api.HeartbeatReply {
		return api.HeartbeatReply{Index: l.state.Index(), TTL: plan.Grant.TTL, RenewEvery: plan.Grant.RenewEvery}
	}
	if !plan.Upsert {
		return reply(), nil
	}
	res, err := l.apply(ctx, fsm.CmdUpsertNode, fsm.UpsertNode{Node: n, Time: time.Now()})
	if err != nil {
		return api.HeartbeatReply{}, err
	}
	if res.Err != nil {
		return api.HeartbeatReply{}, invalid(res.Err)
	}
	if plan.Register {
		l.log.Info("node registered", "node", n.Name, "gpus", len(n.GPUs), "switch", n.Topology.Switch)
	}
	return reply(), nil
}

// agreedStretch is leader.AgreedStretch over what the live gossip
// members announce.
func agreedStretch(members []gossip.Member) int {
	var announced []int
	for _, m := range members {
		if m.Status == gossip.StatusAlive {
			announced = append(announced, m.Meta.LeaseStretch)
		}
	}
	return leader.AgreedStretch(announced)
}

// TaskEvent turns a node's task report into commands
// (leader.PlanTaskReport; a prolog's or epilog's failure:
// leaderScriptFailed).
func (l *leaderSide) TaskEvent(ctx context.Context, ev taskEvent) error {
	if ev.Kind == leader.ReportPrologFailed || ev.Kind == leader.ReportEpilogFailed {
		return l.leaderScriptFailed(ctx, ev)
	}
	plan, err := leader.PlanTaskReport(leader.TaskReport(ev), time.Now())
	if err != nil {
		return err
	}
	var res fsm.Result
	if plan.Type != 0 {
		res, err = l.apply(ctx, plan.Type, plan.Cmd)
	}
	if err == nil && res.Err == nil && plan.GPUUsage != nil {
		res, err = l.apply(ctx, fsm.CmdRecordGPUUsage, *plan.GPUUsage)
		if errors.Is(err, fsm.ErrUnsupportedByCluster) {
			// Agents of an older protocol still serve: the usage is not
			// recorded until every server is upgraded, the exit is.
			l.log.Debug("GPU usage not recorded: the cluster does not speak its protocol yet", "job", uint64(ev.Job))
			return nil
		}
	}
	if err != nil {
		return err
	}
	return leader.ReportRefusal(res.Err)
}
