package fsm

import (
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// The usage a node reports with an exit is stored on its share of the
// allocation (a task) or of the step, and an exit without one (no
// cgroups, an agent from before usage) stores none. OOM ends the job
// OUT_OF_MEMORY with the task's code.
func TestExitUsage(t *testing.T) {
	u := &cluster.Usage{MaxRSS: 64 << 20, AveRSS: 32 << 20, UserCPU: 1500 * time.Millisecond, SystemCPU: 20 * time.Millisecond}
	runApplyCases(t, []applyCase{
		{
			name: "task exit with usage", setup: withRunning, typ: CmdTaskExited,
			cmd: TaskExited{Job: 1, Incarnation: 1, Node: "n1", Cause: CauseOOM, ExitCode: 137, Usage: u},
			check: func(t *testing.T, v *View, r Result) {
				j := wantState(t, v, 1, cluster.JobOutOfMemory)
				if got := j.Alloc.Nodes[0].Usage; got == nil || *got != *u || j.ExitCode != 137 {
					t.Errorf("n1's usage = %+v, exit %d; want %+v, 137", got, j.ExitCode, u)
				}
				if j.Alloc.Nodes[1].Usage != nil {
					t.Errorf("n2's usage = %+v before it reported; want none", j.Alloc.Nodes[1].Usage)
				}
			},
		},
		{
			name: "task exit without usage", setup: withRunning, typ: CmdTaskExited,
			cmd: TaskExited{Job: 1, Incarnation: 1, Node: "n1", Cause: CauseExit},
			check: func(t *testing.T, v *View, r Result) {
				if got := job(t, v, 1).Alloc.Nodes[0].Usage; got != nil {
					t.Errorf("usage = %+v; want none", got)
				}
			},
		},
		{
			name: "step exit with usage", setup: withStep, typ: CmdStepExited,
			cmd: StepExited{Job: 1, Incarnation: 1, Step: 0, Node: "n2", Cause: CauseExit, Usage: u},
			check: func(t *testing.T, v *View, r Result) {
				st := step(t, v, 1, 0)
				for _, sn := range st.Nodes {
					switch {
					case sn.Node == "n2" && (sn.Usage == nil || *sn.Usage != *u):
						t.Errorf("n2's step usage = %+v; want %+v", sn.Usage, u)
					case sn.Node != "n2" && sn.Usage != nil:
						t.Errorf("%s's step usage = %+v; want none", sn.Node, sn.Usage)
					}
				}
			},
		},
		{
			name: "a step's OOM on one node", setup: withStep, typ: CmdStepExited,
			cmd: StepExited{Job: 1, Incarnation: 1, Step: 0, Node: "n2", Cause: CauseOOM, ExitCode: 137},
			check: func(t *testing.T, v *View, r Result) {
				if st := step(t, v, 1, 0); st.State != cluster.StepRunning {
					t.Errorf("step state %s with n1 running; want RUNNING", st.State)
				}
			},
		},
		{
			name: "a step ends OUT_OF_MEMORY once all its nodes did", setup: func(t *testing.T, h *harness) {
				withStep(t, h)
				h.must(t, CmdStepExited, StepExited{Job: 1, Incarnation: 1, Step: 0, Node: "n2", Cause: CauseOOM, ExitCode: 137})
			}, typ: CmdStepExited,
			cmd: StepExited{Job: 1, Incarnation: 1, Step: 0, Node: "n1", Cause: CauseExit},
			check: func(t *testing.T, v *View, r Result) {
				if st := step(t, v, 1, 0); st.State != cluster.StepOutOfMemory || st.ExitCode != 137 {
					t.Errorf("step state %s code %d; want OUT_OF_MEMORY 137", st.State, st.ExitCode)
				}
			},
		},
	})
}
