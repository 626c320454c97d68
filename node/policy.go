package node

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/httpapi"
	"github.com/shoal-sched/shoal/leader"
	"github.com/shoal-sched/shoal/slurm"
)

// proposePolicy makes the policy of the agent's --policy file the
// cluster's, when this agent leads and the replicated one differs. It runs
// once per leadership term, so a `shoal policy set` holds until the next
// election: give every agent the same file, as every Slurm node reads the
// same slurm.conf.
func (a *Agent) proposePolicy(ctx context.Context) {
	want := a.cfg.Policy
	if want == nil || a.state.View().Policy().Equal(want) {
		return
	}
	res, err := a.apply(ctx, fsm.CmdSetPolicy, fsm.SetPolicy{Policy: *want, Time: time.Now()})
	if err == nil {
		err = res.Err
	}
	if err != nil {
		a.log.Warn("propose the --policy file's queue policy", "err", err)
		return
	}
	a.log.Info("queue policy set from the --policy file")
}

// queueFieldsOf checks a submit's queue-policy fields for who: a negative
// nice raises priority, so only root may ask for one (Slurm's rule); a QoS
// the policy does not name is accepted with a warning.
func queueFieldsOf(v *fsm.View, spec cluster.Spec, who caller) ([]string, error) {
	if spec.Nice < 0 && who.UID != 0 {
		return nil, forbidden(fmt.Errorf("nice %d: %w: only root may set a negative nice", spec.Nice, ErrForbidden))
	}
	var warnings []string
	if p := leader.QueuePolicy(v); spec.QoS != "" && !p.HasQoS(spec.QoS) {
		warnings = append(warnings, fmt.Sprintf("--qos %s: the queue policy names no such QoS; the job gets QoS priority 0", spec.QoS))
	}
	return warnings, nil
}

// handlePolicy answers GET /v1/policy.
func (a *Agent) handlePolicy(w http.ResponseWriter, r *http.Request) {
	v, err := a.readView(r.Context())
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	p := leader.QueuePolicy(v)
	httpapi.WriteJSON(w, http.StatusOK, v.Index, api.PolicyResponse{Set: v.Policy() != nil, Policy: p.File()})
}

// handleSetPolicy answers POST /v1/policy: root replaces the policy.
func (a *Agent) handleSetPolicy(w http.ResponseWriter, r *http.Request) {
	var f cluster.PolicyFile
	who, here := a.http.AcceptWrite(w, r, &f)
	if !here {
		return
	}
	if who.UID != 0 {
		httpapi.WriteError(w, forbidden(fmt.Errorf("set policy: %w: only root may", ErrForbidden)))
		return
	}
	// Through the file parser, so the checks and the canonical form are
	// the CLI's.
	b, err := json.Marshal(f)
	if err != nil {
		httpapi.WriteError(w, invalid(fmt.Errorf("policy: %w", err)))
		return
	}
	p, err := cluster.ParsePolicyJSON(b)
	if err != nil {
		httpapi.WriteError(w, invalid(err))
		return
	}
	res, err := a.apply(r.Context(), fsm.CmdSetPolicy, fsm.SetPolicy{Policy: p, Time: time.Now()})
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	if res.Err != nil {
		httpapi.WriteError(w, invalid(res.Err))
		return
	}
	a.log.Info("queue policy set", "by", who.User)
	httpapi.WriteJSON(w, http.StatusOK, a.state.Index(), struct{}{})
}

// handlePriority answers GET /v1/priority[?job=N][&user=U]: the pending
// jobs' priorities, computed from this agent's replica with the leader's
// function.
func (a *Agent) handlePriority(w http.ResponseWriter, r *http.Request) {
	var job uint64
	if s := r.URL.Query().Get("job"); s != "" {
		n, err := slurm.ParseJobID(s)
		if err != nil {
			httpapi.WriteError(w, invalid(fmt.Errorf("?job=: %w", err)))
			return
		}
		job = n
	}
	user := r.URL.Query().Get("user")
	v, err := a.readView(r.Context())
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
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
	httpapi.WriteJSON(w, http.StatusOK, v.Index, out)
}

// handleFairShare answers GET /v1/fairshare: the fair-share tree (sshare),
// computed from this agent's replica with the leader's function.
func (a *Agent) handleFairShare(w http.ResponseWriter, r *http.Request) {
	v, err := a.readView(r.Context())
	if err != nil {
		httpapi.WriteError(w, err)
		return
	}
	out := []api.ShareAssoc{}
	for _, s := range leader.FairShare(v, time.Now()) {
		out = append(out, api.ShareAssoc(s))
	}
	httpapi.WriteJSON(w, http.StatusOK, v.Index, out)
}
