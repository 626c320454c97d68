package leader

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
)

// Administrators' requests to the leader: root drains or resumes a node,
// replaces the queue policy, records a switch's LLDP report. The plans
// check the caller and the request, in the order the answers name them;
// the FSM's refusals are invalid requests. The agent carries them out as
// the queue operations' (Proposal, QueuePlan).

// PlanSetDrain drains or resumes node (root only, as scontrol update
// State=DRAIN needs an administrator); a drain says why.
func PlanSetDrain(v *fsm.View, node string, drain bool, reason string, c Caller) (QueuePlan, error) {
	verb := "resume"
	if drain {
		verb = "drain"
	}
	if c.UID != 0 {
		return QueuePlan{}, forbidden(fmt.Errorf("%s node %s: %w: only root may", verb, node, cluster.ErrForbidden))
	}
	if drain && strings.TrimSpace(reason) == "" {
		return QueuePlan{}, invalid(fmt.Errorf("drain node %s: reason: empty, want why (it shows in shoal nodes)", node))
	}
	if _, ok := v.Node(node); !ok {
		return QueuePlan{}, notFound(fmt.Errorf("%s node %s: %w", verb, node, fsm.ErrUnknownNode))
	}
	return adminPlan(fsm.CmdSetDrain, fsm.SetDrain{Node: node, Drain: drain, Reason: reason}), nil
}

// PlanSetPolicy replaces the queue policy with f (root only), through the
// policy file's parser, so that the checks and the canonical form are the
// CLI's.
func PlanSetPolicy(f cluster.PolicyFile, c Caller) (QueuePlan, error) {
	if c.UID != 0 {
		return QueuePlan{}, forbidden(fmt.Errorf("set policy: %w: only root may", cluster.ErrForbidden))
	}
	data, err := json.Marshal(f)
	if err != nil {
		return QueuePlan{}, invalid(fmt.Errorf("policy: %w", err))
	}
	p, err := cluster.ParsePolicyJSON(data)
	if err != nil {
		return QueuePlan{}, invalid(err)
	}
	return adminPlan(fsm.CmdSetPolicy, fsm.SetPolicy{Policy: p}), nil
}

// PlanReportSwitch records what a switch's lldpd sees (root only:
// `shoal topology report` needs no node certificate, only root's
// identity), in its canonical form, signed by the caller.
func PlanReportSwitch(r cluster.SwitchReport, c Caller) (QueuePlan, error) {
	if c.UID != 0 {
		return QueuePlan{}, forbidden(fmt.Errorf("report switch: %w: only root may", cluster.ErrForbidden))
	}
	r = r.Canonical()
	r.By = c.User
	if err := r.Check(); err != nil {
		return QueuePlan{}, invalid(fmt.Errorf("switch report: %w", err))
	}
	return adminPlan(fsm.CmdReportSwitch, fsm.ReportSwitch{Report: r}), nil
}

// adminPlan is the plan of one administrator's command.
func adminPlan(t fsm.CmdType, cmd any) QueuePlan {
	return QueuePlan{op: opAdmin, Proposals: []Proposal{{Type: t, Cmd: cmd}}}
}
