package slurmcli

import (
	"slices"
	"testing"

	"github.com/shoal-sched/shoal/api"
)

// TestPlanNodeFail: a lost node of a step is told of once; without
// --no-kill it ends the step (Slurm's kill_step_on_node), with it the
// others run on.
func TestPlanNodeFail(t *testing.T) {
	nodes := func(states ...string) []api.StepNodeTasks {
		var out []api.StepNodeTasks
		for i, s := range states {
			out = append(out, api.StepNodeTasks{Node: "n" + string(rune('1'+i)), State: s})
		}
		return out
	}
	for _, tt := range []struct {
		name      string
		noKill    bool
		nodes     []api.StepNodeTasks
		told      map[string]bool
		lines     []string
		terminate bool
	}{
		{name: "none lost", nodes: nodes("running", "exited")},
		{name: "lost: the step ends", nodes: nodes("running", "lost"), terminate: true,
			lines: []string{"error: Node failure on n2", "Force Terminated StepId=7.1"}},
		{name: "lost with --no-kill: told, the others run on", noKill: true, nodes: nodes("running", "lost"),
			lines: []string{"error: Node failure on n2"}},
		{name: "already told", noKill: true, nodes: nodes("running", "lost"), told: map[string]bool{"n2": true}},
		{name: "a second node lost with --no-kill", noKill: true, nodes: nodes("lost", "lost", "running"), told: map[string]bool{"n2": true},
			lines: []string{"error: Node failure on n1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := planNodeFail(tt.noKill, 7, 1, tt.nodes, tt.told)
			if !slices.Equal(p.Lines, tt.lines) || p.Terminate != tt.terminate {
				t.Errorf("planNodeFail = %q terminate %v; want %q terminate %v", p.Lines, p.Terminate, tt.lines, tt.terminate)
			}
		})
	}
}
