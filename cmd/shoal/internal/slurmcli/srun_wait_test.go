package slurmcli

import (
	"slices"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/slurm"
)

func TestPlanWait(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 19, 0, 0, 0, time.UTC)
	node := func(state string, code int, ranks ...int) api.StepNodeTasks {
		return api.StepNodeTasks{Node: "n", Ranks: ranks, State: state, ExitCode: code}
	}
	for _, tc := range []struct {
		name      string
		first     time.Time
		nodes     []api.StepNodeTasks
		now       time.Time
		wantFirst time.Time
		lines     []string // nil: no termination
	}{
		{name: "all running", nodes: []api.StepNodeTasks{node("running", 0, 0), node("running", 0, 1)}, now: t0},
		{name: "first end seen", nodes: []api.StepNodeTasks{node("exited", 3, 0), node("running", 0, 1, 2)}, now: t0, wantFirst: t0},
		{name: "still waiting", first: t0, nodes: []api.StepNodeTasks{node("exited", 3, 0), node("running", 0, 1, 2)},
			now: t0.Add(1999 * time.Millisecond), wantFirst: t0},
		{name: "wait over", first: t0, nodes: []api.StepNodeTasks{node("exited", 3, 0), node("running", 0, 1, 2)},
			now: t0.Add(2 * time.Second), wantFirst: t0, lines: []string{
				"First task exited 2s ago",
				"StepId=7.1 tasks 1-2: running",
				"StepId=7.1 task 0: exited abnormally",
				"launch/slurm: _step_signal: Terminating StepId=7.1",
			}},
		{name: "clean and failed exits", first: t0, nodes: []api.StepNodeTasks{node("exited", 0, 0, 2), node("assigned", 0, 1), node("lost", -1, 3), node("running", 0, 5, 4)},
			now: t0.Add(time.Minute), wantFirst: t0, lines: []string{
				"First task exited 2s ago",
				"StepId=7.1 tasks 1,4-5: running",
				"StepId=7.1 tasks 0,2: exited",
				"StepId=7.1 task 3: exited abnormally",
				"launch/slurm: _step_signal: Terminating StepId=7.1",
			}},
		{name: "all ended", first: t0, nodes: []api.StepNodeTasks{node("exited", 0, 0), node("exited", 0, 1)}, now: t0.Add(time.Hour), wantFirst: t0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planWait(2*time.Second, tc.first, 7, 1, tc.nodes, tc.now)
			if !p.FirstEnd.Equal(tc.wantFirst) {
				t.Errorf("FirstEnd %v; want %v", p.FirstEnd, tc.wantFirst)
			}
			if p.Terminate != (tc.lines != nil) || !slices.Equal(p.Lines, tc.lines) {
				t.Errorf("Terminate %v, lines %q; want %q", p.Terminate, p.Lines, tc.lines)
			}
		})
	}
}

// TestStepHints: a step takes --dependency as a hint (Debian's Slurm
// runs `srun --dependency=...` inside an allocation), with a warning,
// and --exclusive as --exact, with none; -x and -C are no hints:
// -x is taken (stepExclude), -C still refused.
func TestStepHints(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		warns int
		ok    bool
	}{
		{[]string{"--exclusive"}, 0, true},
		{[]string{"--exclusive", "-n1", "--dependency=afterok:1"}, 1, true},
		{[]string{"-x", "n2"}, 0, true},
		{[]string{"-C", "gpu"}, 0, false},
	} {
		opts, rest, err := slurm.ParseArgs(slurm.Srun, append(tc.args, "true"))
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		_, err = stepSpec(opts, rest)
		if (err == nil) != tc.ok || len(stepHints(opts)) != tc.warns {
			t.Errorf("%v: %v, hints %q; want ok %v and %d hints", tc.args, err, stepHints(opts), tc.ok, tc.warns)
		}
	}
}
