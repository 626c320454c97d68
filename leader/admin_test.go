package leader

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
)

// TestAdminPlans: root alone drains, sets the policy and reports
// switches; each request's checks come in the order the answers name
// them, marked with their kind.
func TestAdminPlans(t *testing.T) {
	h := &harness{s: fsm.New(), now: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	if _, err := h.apply(fsm.CmdUpsertNode, fsm.UpsertNode{Node: cluster.Node{Name: "n1", CPUs: 8}, Time: h.now}); err != nil {
		t.Fatal(err)
	}
	v := h.s.View()
	root := Caller{Identity: cluster.Identity{User: "root", UID: 0, Proven: true}}
	ada := Caller{Identity: cluster.Identity{User: "ada", UID: 1000, Proven: true}}
	tests := []struct {
		name string
		plan func() (QueuePlan, error)
		kind error  // the refusal's kind, or nil
		msg  string // in the refusal
		cmd  any    // the command proposed, when none
	}{
		{"a user's drain", func() (QueuePlan, error) { return PlanSetDrain(v, "n1", true, "disk", ada) }, cluster.ErrForbidden, "drain node n1: permission denied: only root may", nil},
		{"a user's resume", func() (QueuePlan, error) { return PlanSetDrain(v, "n9", false, "", ada) }, cluster.ErrForbidden, "resume node n9: permission denied", nil},
		{"a drain without a reason", func() (QueuePlan, error) { return PlanSetDrain(v, "n1", true, " ", root) }, cluster.ErrInvalid, "reason: empty", nil},
		{"an unknown node", func() (QueuePlan, error) { return PlanSetDrain(v, "n9", true, "disk", root) }, cluster.ErrNotFound, "drain node n9: unknown node", nil},
		{"root drains", func() (QueuePlan, error) { return PlanSetDrain(v, "n1", true, "disk", root) }, nil, "", fsm.SetDrain{Node: "n1", Drain: true, Reason: "disk"}},
		{"root resumes", func() (QueuePlan, error) { return PlanSetDrain(v, "n1", false, "", root) }, nil, "", fsm.SetDrain{Node: "n1"}},
		{"a user's policy", func() (QueuePlan, error) { return PlanSetPolicy(cluster.PolicyFile{}, ada) }, cluster.ErrForbidden, "set policy: permission denied: only root may", nil},
		{"a bad policy", func() (QueuePlan, error) { return PlanSetPolicy(cluster.PolicyFile{MaxAge: "soon"}, root) }, cluster.ErrInvalid, "max_age", nil},
		{"a user's switch report", func() (QueuePlan, error) { return PlanReportSwitch(cluster.SwitchReport{Switch: "leaf0"}, ada) }, cluster.ErrForbidden, "report switch: permission denied", nil},
		{"a bad switch name", func() (QueuePlan, error) { return PlanReportSwitch(cluster.SwitchReport{Switch: "a b"}, root) }, cluster.ErrInvalid, "switch report: switch", nil},
		{"root's switch report, canonical and signed", func() (QueuePlan, error) {
			return PlanReportSwitch(cluster.SwitchReport{Switch: "leaf0", Neighbors: []cluster.SwitchNeighbor{{Name: "n2"}, {Name: "n1"}, {Name: "n2", Bridge: true}}}, root)
		}, nil, "", fsm.ReportSwitch{Report: cluster.SwitchReport{Switch: "leaf0", By: "root", Neighbors: []cluster.SwitchNeighbor{{Name: "n1"}, {Name: "n2", Bridge: true}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := tt.plan()
			if tt.kind != nil {
				if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.msg) {
					t.Fatalf("err = %v; want %v with %q", err, tt.kind, tt.msg)
				}
				return
			}
			if err != nil || len(plan.Proposals) != 1 || !reflect.DeepEqual(plan.Proposals[0].Cmd, tt.cmd) {
				t.Fatalf("plan = %+v, %v; want one proposal of %+v", plan, err, tt.cmd)
			}
			// Every refusal of the FSM is an invalid request.
			if skip, marked := plan.Refusal(fsm.ErrJobFinished); skip || !errors.Is(marked, cluster.ErrInvalid) {
				t.Errorf("Refusal = %v, %v; want an invalid request", skip, marked)
			}
		})
	}
	// A policy goes through the file's parser.
	plan, err := PlanSetPolicy(cluster.PolicyFile{MaxAge: "24h", HalfLife: "168h", QoS: map[string]int64{"high": 10}}, root)
	if err != nil {
		t.Fatal(err)
	}
	if p := plan.Proposals[0].Cmd.(fsm.SetPolicy).Policy; !p.HasQoS("high") {
		t.Errorf("PlanSetPolicy = %+v, %v; want the policy with QoS high", plan, err)
	}
}

// TestStamp: every command a plan proposes gets the time it is proposed
// at.
func TestStamp(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for _, cmd := range []any{fsm.CancelJob{}, fsm.SetHold{}, fsm.RequeueJob{}, fsm.SetJobPriority{}, fsm.UpdateJob{},
		fsm.SignalJob{}, fsm.StartStep{}, fsm.CancelStep{}, fsm.SetDrain{}, fsm.SetPolicy{}, fsm.ReportSwitch{}} {
		got := reflect.ValueOf(Proposal{Cmd: cmd}.Stamp(now)).FieldByName("Time").Interface()
		if got != now {
			t.Errorf("Stamp(%T) time = %v; want %v", cmd, got, now)
		}
	}
}
