package httpapi

import (
	"context"
	"net/http"

	"github.com/shoal-sched/shoal/cluster"
)

// Switches are the switches' own LLDP reports (`shoal topology report`),
// read from this agent's replica and recorded by root through the
// leader.
type Switches interface {
	// SwitchReports are the reports, ascending by switch, and the
	// replica's index.
	SwitchReports() ([]cluster.SwitchReport, uint64)
	// ReportSwitch records a switch's report (root only).
	ReportSwitch(ctx context.Context, r cluster.SwitchReport, who cluster.Identity) error
}

// HandleSwitchReports is GET /v1/topology/switches.
func (s *Server) HandleSwitchReports(w http.ResponseWriter, r *http.Request) {
	if err := s.WaitReadable(r.Context()); err != nil {
		WriteError(w, err)
		return
	}
	out, index := s.b.SwitchReports()
	WriteJSON(w, http.StatusOK, index, out)
}

// HandleReportSwitch is POST /v1/topology/switches: root records what a
// switch's lldpd sees.
func (s *Server) HandleReportSwitch(w http.ResponseWriter, r *http.Request) {
	bodyWrite(s, w, r, noAnswer(s.b.ReportSwitch))
}
