package agent

import (
	"context"
	"os/user"
	"slices"
	"strconv"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/httpapi"
	"github.com/shoal-sched/shoal/leader"
)

// callerOf is who as the queue plans take it (leader.Caller), with what
// they need looked up: whether this node's user database puts who in one
// of policy p's operator groups (as Slurm resolves groups on the
// controller).
func callerOf(p *cluster.Policy, who cluster.Identity) leader.Caller {
	c := leader.Caller{Identity: who}
	groups := p.OperatorGroups()
	if !who.Proven || who.UID == 0 || len(groups) == 0 || p.IsOperator(who.User) {
		return c // decided without the user database
	}
	u, err := user.LookupId(strconv.Itoa(who.UID))
	if err != nil {
		return c
	}
	gids, err := u.GroupIds()
	if err != nil {
		return c
	}
	for _, name := range groups {
		if g, err := user.LookupGroup(name); err == nil && slices.Contains(gids, g.Gid) {
			c.InOperatorGroup = true
			return c
		}
	}
	return c
}

// viewerOf is who as leader.MaySee takes them: the user database is read
// only when the policy keeps jobs private.
func viewerOf(p *cluster.Policy, who cluster.Identity) leader.Caller {
	if p == nil || !p.PrivateJobs {
		return leader.Caller{Identity: who}
	}
	return callerOf(p, who)
}

// propose carries out a queue plan: it proposes each command in order,
// stamped with the time it is proposed, and ends at the first refusal the
// plan does not pass over. It returns the jobs changed and the last
// command's result.
func (l *leaderSide) propose(ctx context.Context, plan leader.QueuePlan) (api.JobsChanged, fsm.Result, error) {
	ids := []uint64{}
	var last fsm.Result
	for _, p := range plan.Proposals {
		if p.Refused != nil {
			return api.JobsChanged{}, fsm.Result{}, p.Refused
		}
		res, err := l.apply(ctx, p.Type, p.Stamp(time.Now()))
		if err != nil {
			return api.JobsChanged{}, fsm.Result{}, err
		}
		if res.Err != nil {
			skip, err := plan.Refusal(res.Err)
			if skip {
				continue
			}
			return api.JobsChanged{}, fsm.Result{}, err
		}
		last = res
		ids = append(ids, uint64(p.Job))
	}
	return api.JobsChanged{ID: plan.ID, IDs: ids}, last, nil
}

// proposeOr carries out the plan planned, unless planning refused.
func (l *leaderSide) proposeOr(ctx context.Context, plan leader.QueuePlan, err error) (api.JobsChanged, error) {
	if err != nil {
		return api.JobsChanged{}, err
	}
	changed, _, err := l.propose(ctx, plan)
	return changed, err
}

// Cancel cancels a job, an array element, or every live element of an
// array (its bare id, as scancel does), for who (leader: leader.PlanCancel).
func (b apiBackend) Cancel(ctx context.Context, ref cluster.JobRef, who cluster.Identity) (api.JobsChanged, error) {
	v := b.state.View()
	plan, err := leader.PlanCancel(v, ref, callerOf(v.Policy(), who))
	return b.lead.proposeOr(ctx, plan, err)
}

// Hold holds pending jobs (scontrol hold, uhold: leader.PlanHold).
func (b apiBackend) Hold(ctx context.Context, ref cluster.JobRef, userHold bool, who cluster.Identity) (api.JobsChanged, error) {
	v := b.state.View()
	plan, err := leader.PlanHold(v, ref, userHold, callerOf(v.Policy(), who))
	return b.lead.proposeOr(ctx, plan, err)
}

// Release releases held jobs (leader.PlanRelease).
func (b apiBackend) Release(ctx context.Context, ref cluster.JobRef, who cluster.Identity) (api.JobsChanged, error) {
	v := b.state.View()
	plan, err := leader.PlanRelease(v, ref, callerOf(v.Policy(), who))
	return b.lead.proposeOr(ctx, plan, err)
}

// Requeue requeues running or ended jobs (scontrol requeue, requeuehold:
// leader.PlanRequeue).
//
// Its request id (an array's elements: one each, derived from it), when
// every server speaks the protocol that keeps it (keptRequestID; for an
// array's elements, leader.ElementIDsProtocol: elementIDs), lets the FSM
// answer a repeat as the first; otherwise the requeue is sent once.
func (b apiBackend) Requeue(ctx context.Context, ref cluster.JobRef, held bool, requestID string, who cluster.Identity) (api.JobsChanged, error) {
	if err := httpapi.CheckRequestID(requestID); err != nil {
		return api.JobsChanged{}, err
	}
	rid := httpapi.ScopedWriteRequestID(httpapi.ScopeRequeue, who, requestID)
	v := b.state.View()
	gate := b.gate(ctx)
	kept := keptRequestID(rid, fsm.CmdRequeueJob, fsm.RequeueJob{RequestID: rid}, gate)
	plan, err := leader.PlanRequeue(v, ref, held, kept, elementIDs(kept, fsm.CmdRequeueJob, gate), callerOf(v.Policy(), who))
	if err != nil {
		return api.JobsChanged{}, err
	}
	changed, _, err := b.lead.propose(ctx, plan)
	return changed, droppedOutcome(err, rid != plan.RequestID, httpapi.RequeueWrite)
}

// SetPriority is `scontrol update JobId=N Priority=P` (root only:
// leader.PlanSetPriority).
func (b apiBackend) SetPriority(ctx context.Context, id string, req api.PriorityRequest, who cluster.Identity) (api.JobsChanged, error) {
	v := b.state.View()
	plan, err := leader.PlanSetPriority(v, id, req.Priority, callerOf(v.Policy(), who))
	return b.lead.proposeOr(ctx, plan, err)
}

// Update is `scontrol update JobId=N Field=Value ...` (leader.PlanUpdate;
// the FSM decides with fsm.PlanJobUpdate). Its request id is kept as
// Requeue's.
func (b apiBackend) Update(ctx context.Context, id string, req api.UpdateRequest, who cluster.Identity) (api.JobsChanged, error) {
	if err := httpapi.CheckRequestID(req.RequestID); err != nil {
		return api.JobsChanged{}, err
	}
	rid := httpapi.ScopedWriteRequestID(httpapi.ScopeUpdate, who, req.RequestID)
	v := b.state.View()
	gate := b.gate(ctx)
	u := leader.JobUpdate{
		Fields:     fsm.JobUpdate{Nodes: req.Nodes, Partition: req.Partition, QoS: req.QoS, Name: req.Name, Comment: req.Comment, Nice: req.Nice},
		TimeLimitS: req.TimeLimitS, TimeLimitAddS: req.TimeLimitAddS, Dependency: req.Dependency,
		RequestID: keptRequestID(rid, fsm.CmdUpdateJob, fsm.UpdateJob{RequestID: rid}, gate),
	}
	u.ElementIDs = elementIDs(u.RequestID, fsm.CmdUpdateJob, gate)
	plan, err := leader.PlanUpdate(v, id, u, callerOf(v.Policy(), who))
	if err != nil {
		return api.JobsChanged{}, err
	}
	changed, _, err := b.lead.propose(ctx, plan)
	return changed, droppedOutcome(err, httpapi.UpdateWrite.ActsTwice(&req) && rid != plan.RequestID, httpapi.UpdateWrite)
}

// spreadGPUs spreads --gpus without --nodes over the nodes this agent
// knows, but those that left (leader.SpreadGPUs).
func (l *leaderSide) spreadGPUs(req *api.SubmitRequest) error {
	var sizes []int
	for _, n := range l.knownNodes(l.state.View()) {
		if n.Status != cluster.NodeLeft {
			sizes = append(sizes, len(n.GPUs))
		}
	}
	nodes, per, err := leader.SpreadGPUs(req.GPUsTotal, sizes)
	if err != nil {
		return err
	}
	req.Nodes, req.GPUsPerNode = nodes, per
	return nil
}
