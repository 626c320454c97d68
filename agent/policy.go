package agent

import (
	"context"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/leader"
)

// proposePolicy makes the policy of the agent's --policy file the
// cluster's, when this agent leads and the replicated one differs. It runs
// once per leadership term, so a `shoal policy set` holds until the next
// election: give every agent the same file, as every Slurm node reads the
// same slurm.conf.
func (l *leaderSide) proposePolicy(ctx context.Context) {
	want := l.cfg.Policy
	if want == nil || l.state.View().Policy().Equal(want) {
		return
	}
	res, err := l.apply(ctx, fsm.CmdSetPolicy, fsm.SetPolicy{Policy: *want, Time: time.Now()})
	if err == nil {
		err = res.Err
	}
	if err != nil {
		l.log.Warn("propose the --policy file's queue policy", "err", err)
		return
	}
	l.log.Info("queue policy set from the --policy file")
}

// Policy is the queue policy in force.
func (b apiBackend) Policy() (api.PolicyResponse, uint64) {
	v := b.state.View()
	p := leader.QueuePolicy(v)
	return api.PolicyResponse{Set: v.Policy() != nil, Policy: p.File()}, v.Index
}

// SetPolicy replaces the policy (root only, leader: leader.PlanSetPolicy).
func (b apiBackend) SetPolicy(ctx context.Context, f cluster.PolicyFile, who cluster.Identity) error {
	plan, err := leader.PlanSetPolicy(f, leader.Caller{Identity: who})
	if _, err = b.lead.proposeOr(ctx, plan, err); err != nil {
		return err
	}
	b.log.Info("queue policy set", "by", who.User)
	return nil
}

// Priorities are the pending jobs' priorities (of job, of user, when
// given), computed from this agent's replica with the leader's function.
func (b apiBackend) Priorities(job uint64, user string) ([]api.Priority, uint64) {
	v := b.state.View()
	out := []api.Priority{}
	for _, p := range leader.Priorities(v, time.Now()) {
		if (job != 0 && uint64(p.Job) != job) || (user != "" && p.User != user) {
			continue
		}
		out = append(out, api.Priority{
			Job: uint64(p.Job), User: p.User, Account: p.Account, QoSName: p.QoS,
			Priority: p.Priority, Nice: p.Nice,
			Age: p.Weighted.Age, Fair: p.Weighted.FairShare, JobSize: p.Weighted.JobSize, QoS: p.Weighted.QoS,
			Partition: p.Weighted.Partition, PartitionName: p.Partition,
			Factors: api.PriorityFactor(p.Factors),
		})
	}
	return out, v.Index
}

// FairShare is the fair-share tree (sshare), computed from this agent's
// replica with the leader's function.
func (b apiBackend) FairShare() ([]api.ShareAssoc, uint64) {
	v := b.state.View()
	out := []api.ShareAssoc{}
	for _, s := range leader.FairShare(v, time.Now()) {
		out = append(out, api.ShareAssoc(s))
	}
	return out, v.Index
}
