package fsm

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// ReportSwitch records what a switch's own lldpd sees (protocol 5): root
// runs `shoal topology report` on the switch (SONiC, Cumulus) or on a
// host that reads its LLDP table, and the leader stamps Time. It replaces
// the switch's last report; a report with no neighbours removes it. The
// neighbours are canonical (cluster.SwitchReport.Canonical). The tree's
// parents follow from the reports (cluster.SwitchLinks,
// cluster.LeafParents) where no node of a leaf announces one.
type ReportSwitch struct {
	Report cluster.SwitchReport `msgpack:"report"`
	Time   time.Time            `msgpack:"time"`
}

func (s *State) reportSwitch(c ReportSwitch) Result {
	r := c.Report
	r.Time = c.Time
	if err := r.Check(); err != nil {
		return Result{Err: fmt.Errorf("switch report: %w: %w", ErrInvalid, err)}
	}
	i, found := slices.BinarySearchFunc(s.switches, r.Switch, func(x *cluster.SwitchReport, name string) int {
		return strings.Compare(x.Switch, name)
	})
	next := slices.Clone(s.switches) // views share the old slice
	switch {
	case len(r.Neighbors) == 0 && found:
		next = slices.Delete(next, i, i+1)
	case len(r.Neighbors) == 0:
		return Result{}
	case found:
		next[i] = canonSwitch(r)
	case len(next) >= cluster.MaxSwitchReports:
		return Result{Err: fmt.Errorf("switch report %s: %w: the cluster keeps reports of %d switches at most", r.Switch, ErrInvalid, cluster.MaxSwitchReports)}
	default:
		next = slices.Insert(next, i, canonSwitch(r))
	}
	s.switches = nilIfEmpty(next)
	return Result{}
}

// canonSwitch is a stored copy of r, empty lists nil, so a report
// encodes to the same snapshot bytes however it arrived.
func canonSwitch(r cluster.SwitchReport) *cluster.SwitchReport {
	r.Neighbors = nilIfEmpty(slices.Clone(r.Neighbors))
	return &r
}

// validateSwitches checks a snapshot's switch reports: each valid, with
// neighbours, in ascending switch order, each switch once.
func validateSwitches(rs []*cluster.SwitchReport) error {
	if len(rs) > cluster.MaxSwitchReports {
		return fmt.Errorf("%d reports, want at most %d", len(rs), cluster.MaxSwitchReports)
	}
	for i, r := range rs {
		switch {
		case r == nil:
			return fmt.Errorf("[%d]: empty", i)
		case r.Check() != nil:
			return fmt.Errorf("[%d]: %w", i, r.Check())
		case len(r.Neighbors) == 0:
			return fmt.Errorf("[%d] %s: no neighbours", i, r.Switch)
		case i > 0 && r.Switch <= rs[i-1].Switch:
			return fmt.Errorf("[%d] %s: want switches ascending, each once", i, r.Switch)
		}
	}
	return nil
}

// Switches returns the switches' reports, ascending by switch. Callers
// must not mutate them.
func (v *View) Switches() []*cluster.SwitchReport {
	return v.switches[:len(v.switches):len(v.switches)]
}

// SwitchLinks are the links between switches the reports show, for the
// switch tree (cluster.SwitchLinks; a name of a node of the view is never
// a switch).
func (v *View) SwitchLinks() map[string][]string {
	if len(v.switches) == 0 {
		return nil
	}
	return cluster.SwitchLinks(v.switches, func(name string) bool {
		_, ok := v.Node(name)
		return ok
	})
}
