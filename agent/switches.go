package agent

import (
	"context"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/leader"
)

// SwitchReports are the switches' own LLDP reports in this replica.
func (b apiBackend) SwitchReports() ([]cluster.SwitchReport, uint64) {
	v := b.state.View()
	out := make([]cluster.SwitchReport, 0, len(v.Switches()))
	for _, r := range v.Switches() {
		out = append(out, *r)
	}
	return out, v.Index
}

// ReportSwitch records what a switch's lldpd sees (root only, leader:
// leader.PlanReportSwitch).
func (b apiBackend) ReportSwitch(ctx context.Context, r cluster.SwitchReport, who cluster.Identity) error {
	plan, err := leader.PlanReportSwitch(r, leader.Caller{Identity: who})
	if _, err = b.lead.proposeOr(ctx, plan, err); err != nil {
		return err
	}
	r = plan.Proposals[0].Cmd.(fsm.ReportSwitch).Report
	b.log.Info("switch reported", "switch", r.Switch, "neighbors", len(r.Neighbors), "by", who.User)
	return nil
}
