package node

import (
	"context"
	"fmt"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
)

// SwitchReports are the switches' own LLDP reports in this replica.
func (b apiBackend) SwitchReports() ([]cluster.SwitchReport, uint64) {
	v := b.a.state.View()
	out := make([]cluster.SwitchReport, 0, len(v.Switches()))
	for _, r := range v.Switches() {
		out = append(out, *r)
	}
	return out, v.Index
}

// ReportSwitch records what a switch's lldpd sees (root only, leader):
// `shoal topology report`, run on the switch or on a host that reads its
// LLDP table, needs no node certificate, only root's identity (the Unix
// socket's peer, or a user token of root's over TLS).
func (b apiBackend) ReportSwitch(ctx context.Context, r cluster.SwitchReport, who cluster.Identity) error {
	if who.UID != 0 {
		return forbidden(fmt.Errorf("report switch: %w: only root may", ErrForbidden))
	}
	r = r.Canonical()
	r.By = who.User
	if err := r.Check(); err != nil {
		return invalid(fmt.Errorf("switch report: %w", err))
	}
	res, err := b.a.apply(ctx, fsm.CmdReportSwitch, fsm.ReportSwitch{Report: r, Time: time.Now()})
	if err != nil {
		return err
	}
	if res.Err != nil {
		return invalid(res.Err)
	}
	b.a.log.Info("switch reported", "switch", r.Switch, "neighbors", len(r.Neighbors), "by", who.User)
	return nil
}
