package fsm

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/wire"
)

// withStep is withRunning plus step 1.0 on both nodes.
func withStep(t *testing.T, h *harness) {
	withRunning(t, h)
	h.must(t, CmdStartStep, stepCmd(1, 1, 0, 0))
}

// withRequeuedStep: job 1 (--requeue, n1 and n2) runs step 0 on both
// nodes when n1 goes down, which requeues the job once n2 reports.
func withRequeuedStep(t *testing.T, h *harness) {
	withNodes("n1", "n2")(t, h)
	h.must(t, CmdSubmitJob, SubmitJob{Spec: requeueSpec(spec(2, 1), true)})
	h.must(t, CmdAllocate, Allocate{Decisions: []Decision{place(1, "n1", []int{0}, "n2", []int{0})}})
	h.must(t, CmdStartStep, stepCmd(1, 1, 0, 0))
	h.must(t, CmdNodeDown, NodeDown{Node: "n1"})
}

func step(t *testing.T, v *View, id cluster.JobID, s int) cluster.Step {
	t.Helper()
	j := job(t, v, id)
	if s >= len(j.Steps) {
		t.Fatalf("job %d has %d steps; want step %d", id, len(j.Steps), s)
	}
	return j.Steps[s]
}

func wantStep(t *testing.T, v *View, s int, state cluster.StepState, code int, ended bool) {
	t.Helper()
	st := step(t, v, 1, s)
	if st.State != state || st.ExitCode != code || st.EndTime.IsZero() == ended {
		t.Errorf("step 1.%d = %s exit %d end %v; want %s exit %d, ended %t", s, st.State, st.ExitCode, st.EndTime, state, code, ended)
	}
	if ended && !st.EndTime.Equal(t0.Add(time.Duration(v.Index)*time.Second)) {
		t.Errorf("step 1.%d EndTime = %v; want the command's time", s, st.EndTime)
	}
}

func TestStartStep(t *testing.T) {
	withSpec := func(f func(sp *cluster.StepSpec)) StartStep {
		c := stepCmd(1, 1, 0, 0)
		f(&c.Spec)
		return c
	}
	released := func(t *testing.T, h *harness) {
		withRunning(t, h)
		h.must(t, CmdTaskExited, TaskExited{Job: 1, Incarnation: 1, Node: "n2", Cause: CauseExit})
	}
	full := func(t *testing.T, h *harness) {
		withRunning(t, h)
		// No command makes 10000 steps cheaply: restore them.
		snap := mustSnapshot(t, h.s)
		var b snapshotBody
		if err := wire.Decode(snap[1:], &b); err != nil {
			t.Fatal(err)
		}
		j := b.Jobs[0]
		for k := range cluster.MaxStepsPerJob {
			j.Steps = append(j.Steps, cluster.Step{
				ID: k, Incarnation: 1, State: cluster.StepCompleted,
				Spec:  cluster.StepSpec{Command: []string{"true"}, Nodes: 1, TasksPerNode: 1},
				Nodes: []cluster.StepNode{{Node: "n1", Tasks: 1, State: cluster.TaskExited}},
			})
		}
		if err := h.s.Restore(encodeBody(t, b)); err != nil {
			t.Fatal(err)
		}
	}
	runApplyCases(t, []applyCase{
		{
			name: "defaults", setup: withRunning, typ: CmdStartStep, cmd: stepCmd(1, 1, 0, 0),
			check: func(t *testing.T, v *View, r Result) {
				st := step(t, v, 1, 0)
				if r.StepID != 0 || st.ID != 0 || st.Incarnation != 1 || st.State != cluster.StepRunning ||
					st.Spec.Nodes != 2 || st.Spec.TasksPerNode != 1 || !st.StartTime.Equal(t0.Add(time.Duration(v.Index)*time.Second)) {
					t.Errorf("Result.StepID %d, step = %+v; want step 0 of incarnation 1 RUNNING on 2 nodes x 1 task, started now", r.StepID, st)
				}
				want := []cluster.StepNode{
					{Node: "n1", FirstRank: 0, Tasks: 1, State: cluster.TaskAssigned},
					{Node: "n2", FirstRank: 1, Tasks: 1, State: cluster.TaskAssigned},
				}
				if len(st.Nodes) != 2 || !reflect.DeepEqual(st.Nodes, want) {
					t.Errorf("step nodes = %+v; want %+v", st.Nodes, want)
				}
				wantFree(t, v, "n1", 2, 3) // steps hold no GPUs of their own
			},
		},
		{
			name: "first nodes in rank order, ranks by tasks per node", setup: withStep, typ: CmdStartStep,
			cmd: withSpec(func(sp *cluster.StepSpec) { sp.Nodes, sp.TasksPerNode, sp.GPUsPerTask = 1, 2, 1 }),
			check: func(t *testing.T, v *View, r Result) {
				st := step(t, v, 1, 1)
				if r.StepID != 1 || len(st.Nodes) != 1 || !reflect.DeepEqual(st.Nodes[0], cluster.StepNode{Node: "n1", Tasks: 2, State: cluster.TaskAssigned}) {
					t.Errorf("StepID %d nodes %+v; want step 1 on n1 with 2 tasks from rank 0", r.StepID, st.Nodes)
				}
			},
		},
		{
			name: "srun -n 5 -m cyclic: round robin, the busiest node sizes tasks_per_node", setup: withRunning, typ: CmdStartStep,
			cmd: withSpec(func(sp *cluster.StepSpec) { sp.NTasks, sp.Distribution = 5, "cyclic" }),
			check: func(t *testing.T, v *View, r Result) {
				st := step(t, v, 1, 0)
				want := []cluster.StepNode{
					{Node: "n1", FirstRank: 0, Tasks: 3, State: cluster.TaskAssigned},
					{Node: "n2", FirstRank: 1, Tasks: 2, State: cluster.TaskAssigned},
				}
				if st.Spec.TasksPerNode != 3 || len(st.Nodes) != 2 || !reflect.DeepEqual(st.Nodes, want) {
					t.Errorf("tasks_per_node %d, nodes %+v; want 3, %+v", st.Spec.TasksPerNode, st.Nodes, want)
				}
				if got := st.Spec.RankAt(1, 1); got != 3 {
					t.Errorf("RankAt(node 1, local 1) = %d; want 3", got)
				}
			},
		},
		{
			name: "srun -m cyclic alone: tasks per node on each node, dealt round robin", setup: withRunning, typ: CmdStartStep,
			cmd: withSpec(func(sp *cluster.StepSpec) { sp.TasksPerNode, sp.Distribution = 2, "cyclic" }),
			check: func(t *testing.T, v *View, r Result) {
				st := step(t, v, 1, 0)
				if st.Spec.NTasks != 4 || st.Spec.TasksPerNode != 2 || st.Nodes[1].FirstRank != 1 {
					t.Errorf("spec %+v nodes %+v; want 4 tasks, 2 per node, the second node from rank 1", st.Spec, st.Nodes)
				}
			},
		},
		{
			name: "a node the layout leaves empty", setup: withRunning, typ: CmdStartStep,
			cmd:     withSpec(func(sp *cluster.StepSpec) { sp.NTasks, sp.Distribution = 4, "plane=4" }),
			wantErr: ErrInvalid, errHas: "node 1 would run no task",
		},
		{
			name: "distribution not as written back", setup: withRunning, typ: CmdStartStep,
			cmd:     withSpec(func(sp *cluster.StepSpec) { sp.NTasks, sp.Distribution = 4, "CYCLIC" }),
			wantErr: ErrInvalid, errHas: "want it as written back",
		},
		{
			name: "srun --signal: the step records it", setup: withRunning, typ: CmdStartStep,
			cmd: withSpec(func(sp *cluster.StepSpec) { sp.Signal = &cluster.JobSignal{Number: 10, Before: time.Minute} }),
			check: func(t *testing.T, v *View, r Result) {
				if sig := step(t, v, 1, 0).Spec.Signal; sig == nil || *sig != (cluster.JobSignal{Number: 10, Before: time.Minute}) {
					t.Errorf("Spec.Signal = %+v; want USR1 a minute before the limit", sig)
				}
			},
		},
		{
			name: "srun --signal: not a signal", setup: withRunning, typ: CmdStartStep,
			cmd:     withSpec(func(sp *cluster.StepSpec) { sp.Signal = &cluster.JobSignal{Number: 99} }),
			wantErr: ErrInvalid, errHas: "signal.number 99",
		},
		{
			name: "srun --signal: a step has no batch shell", setup: withRunning, typ: CmdStartStep,
			cmd:     withSpec(func(sp *cluster.StepSpec) { sp.Signal = &cluster.JobSignal{Number: 10, BatchOnly: true} }),
			wantErr: ErrInvalid, errHas: "signal.batch_only",
		},
		{
			name: "empty env stored as nil", setup: withRunning, typ: CmdStartStep,
			cmd: withSpec(func(sp *cluster.StepSpec) { sp.Env = []string{} }),
			check: func(t *testing.T, v *View, r Result) {
				if env := step(t, v, 1, 0).Spec.Env; env != nil {
					t.Errorf("Spec.Env = %#v; want nil (canonical)", env)
				}
			},
		},
		{name: "unknown job", setup: withRunning, typ: CmdStartStep, cmd: stepCmd(9, 1, 0, 0), wantErr: ErrUnknownJob, errHas: "job 9"},
		{name: "pending job", setup: withRunning, typ: CmdStartStep, cmd: stepCmd(2, 0, 0, 0), wantErr: ErrInvalid, errHas: "job is PENDING, want RUNNING"},
		{
			name: "finished job", typ: CmdStartStep, cmd: stepCmd(1, 1, 0, 0), wantErr: ErrJobFinished, errHas: "CANCELLED",
			setup: func(t *testing.T, h *harness) {
				withRunning(t, h)
				h.must(t, CmdCancelJob, CancelJob{Job: 1})
			},
		},
		{
			name: "requeued job", typ: CmdStartStep, cmd: stepCmd(1, 1, 0, 0), wantErr: ErrInvalid, errHas: "job is REQUEUED",
			setup: func(t *testing.T, h *harness) {
				withNodes("n1", "n2")(t, h)
				h.must(t, CmdSubmitJob, SubmitJob{Spec: requeueSpec(spec(2, 1), true)})
				h.must(t, CmdAllocate, Allocate{Decisions: []Decision{place(1, "n1", []int{0}, "n2", []int{0})}})
				h.must(t, CmdNodeDown, NodeDown{Node: "n1"})
			},
		},
		{name: "older incarnation", setup: withRunning, typ: CmdStartStep, cmd: stepCmd(1, 0, 0, 0), wantErr: ErrInvalid, errHas: "incarnation 0"},
		{name: "newer incarnation", setup: withRunning, typ: CmdStartStep, cmd: stepCmd(1, 2, 0, 0), wantErr: ErrInvalid, errHas: "job is at incarnation 1"},
		{name: "no command", setup: withRunning, typ: CmdStartStep, cmd: withSpec(func(sp *cluster.StepSpec) { sp.Command = nil }), wantErr: ErrInvalid, errHas: "command: empty"},
		{name: "empty program", setup: withRunning, typ: CmdStartStep, cmd: withSpec(func(sp *cluster.StepSpec) { sp.Command = []string{""} }), wantErr: ErrInvalid, errHas: "command: empty"},
		{
			name: "too many arguments", setup: withRunning, typ: CmdStartStep, wantErr: ErrInvalid, errHas: "command: 4097 arguments",
			cmd: withSpec(func(sp *cluster.StepSpec) { sp.Command = make([]string, cluster.MaxCommandArgs+1); sp.Command[0] = "x" }),
		},
		{
			name: "command too long", setup: withRunning, typ: CmdStartStep, wantErr: ErrInvalid, errHas: "bytes, want at most 1048576",
			cmd: withSpec(func(sp *cluster.StepSpec) { sp.Command = []string{"x", strings.Repeat("a", cluster.MaxCommandBytes)} }),
		},
		{
			name: "name too long", setup: withRunning, typ: CmdStartStep, wantErr: ErrInvalid, errHas: "name: 257 bytes",
			cmd: withSpec(func(sp *cluster.StepSpec) { sp.Name = strings.Repeat("n", cluster.MaxJobNameBytes+1) }),
		},
		{
			name: "work dir too long", setup: withRunning, typ: CmdStartStep, wantErr: ErrInvalid, errHas: "work_dir: 4097 bytes",
			cmd: withSpec(func(sp *cluster.StepSpec) { sp.WorkDir = strings.Repeat("d", maxWorkDirBytes+1) }),
		},
		{
			name: "too many env vars", setup: withRunning, typ: CmdStartStep, wantErr: ErrInvalid, errHas: "env: 4097 variables",
			cmd: withSpec(func(sp *cluster.StepSpec) { sp.Env = make([]string, cluster.MaxEnvVars+1) }),
		},
		{name: "bad env pair", setup: withRunning, typ: CmdStartStep, cmd: withSpec(func(sp *cluster.StepSpec) { sp.Env = []string{"A=1", "=2"} }), wantErr: ErrInvalid, errHas: "env[1]"},
		{name: "more nodes than the allocation", setup: withRunning, typ: CmdStartStep, cmd: stepCmd(1, 1, 3, 0), wantErr: ErrInvalid, errHas: "nodes 3: the allocation has 2 nodes"},
		{name: "negative nodes", setup: withRunning, typ: CmdStartStep, cmd: stepCmd(1, 1, -1, 0), wantErr: ErrInvalid, errHas: "nodes -1: the allocation has 2 nodes"},
		{name: "negative tasks per node", setup: withRunning, typ: CmdStartStep, cmd: stepCmd(1, 1, 0, -2), wantErr: ErrInvalid, errHas: "tasks_per_node -2"},
		{name: "too many tasks per node", setup: withRunning, typ: CmdStartStep, cmd: stepCmd(1, 1, 0, cluster.MaxTasksPerNode+1), wantErr: ErrInvalid, errHas: "tasks_per_node 4097"},
		{name: "negative gpus per task", setup: withRunning, typ: CmdStartStep, cmd: withSpec(func(sp *cluster.StepSpec) { sp.GPUsPerTask = -1 }), wantErr: ErrInvalid, errHas: "gpus_per_task -1"},
		{
			name: "more gpus than the node holds", setup: withRunning, typ: CmdStartStep, wantErr: ErrInvalid,
			errHas: "gpus_per_task 1 x tasks_per_node 3: each node holds 2 gpus for the job",
			cmd:    withSpec(func(sp *cluster.StepSpec) { sp.GPUsPerTask, sp.TasksPerNode = 1, 3 }),
		},
		{
			name: "huge gpus per task does not overflow", setup: withRunning, typ: CmdStartStep, wantErr: ErrInvalid, errHas: "gpus_per_task",
			cmd: withSpec(func(sp *cluster.StepSpec) { sp.GPUsPerTask, sp.TasksPerNode = 1<<62, 4 }),
		},
		{
			name: "all gpus of the node", setup: withRunning, typ: CmdStartStep,
			cmd: withSpec(func(sp *cluster.StepSpec) { sp.GPUsPerTask, sp.TasksPerNode = 1, 2 }),
		},
		{name: "released node", setup: released, typ: CmdStartStep, cmd: stepCmd(1, 1, 0, 0), wantErr: ErrInvalid, errHas: `node "n2" (rank 1) has released`},
		{name: "released node not used", setup: released, typ: CmdStartStep, cmd: stepCmd(1, 1, 1, 0)},
		{name: "step limit", setup: full, typ: CmdStartStep, cmd: stepCmd(1, 1, 1, 0), wantErr: ErrInvalid, errHas: "10000 started, want at most 10000"},
	})
}

func TestStepExited(t *testing.T) {
	exited := func(s int, node string, code int, cause string) StepExited {
		return StepExited{Job: 1, Incarnation: 1, Step: s, Node: node, ExitCode: code, Cause: cause}
	}
	then := func(cmds ...StepExited) func(*testing.T, *harness) {
		return func(t *testing.T, h *harness) {
			withStep(t, h)
			for _, c := range cmds {
				h.must(t, CmdStepExited, c)
			}
		}
	}
	unchanged := func(t *testing.T, v *View, r Result) {
		if j := job(t, v, 1); j.ModifyIndex == v.Index {
			t.Errorf("job 1 modified by a report that must change nothing")
		}
	}
	runApplyCases(t, []applyCase{
		{
			name: "one node of two", setup: withStep, typ: CmdStepExited, cmd: exited(0, "n2", 4, CauseExit),
			check: func(t *testing.T, v *View, r Result) {
				wantStep(t, v, 0, cluster.StepRunning, 0, false)
				if sn := step(t, v, 1, 0).Nodes[1]; sn.State != cluster.TaskExited || sn.ExitCode != 4 {
					t.Errorf("n2's share = %+v; want exited with 4", sn)
				}
				wantState(t, v, 1, cluster.JobRunning) // a step's failure is not the job's
			},
		},
		{name: "all exit zero", setup: then(exited(0, "n1", 0, CauseExit)), typ: CmdStepExited, cmd: exited(0, "n2", 0, CauseExit), check: func(t *testing.T, v *View, r Result) { wantStep(t, v, 0, cluster.StepCompleted, 0, true) }},
		{name: "worst code", setup: then(exited(0, "n1", 7, CauseExit)), typ: CmdStepExited, cmd: exited(0, "n2", 3, CauseExit), check: func(t *testing.T, v *View, r Result) { wantStep(t, v, 0, cluster.StepFailed, 7, true) }},
		{name: "negative codes", setup: then(exited(0, "n1", -2, CauseExit)), typ: CmdStepExited, cmd: exited(0, "n2", -1, CauseExit), check: func(t *testing.T, v *View, r Result) { wantStep(t, v, 0, cluster.StepFailed, -1, true) }},
		{
			name: "fenced is lost", setup: then(exited(0, "n1", 0, CauseExit)), typ: CmdStepExited, cmd: exited(0, "n2", 0, CauseFenced),
			check: func(t *testing.T, v *View, r Result) {
				wantStep(t, v, 0, cluster.StepFailed, 0, true)
				if sn := step(t, v, 1, 0).Nodes[1]; sn.State != cluster.TaskLost {
					t.Errorf("n2's share = %+v; want lost", sn)
				}
				wantState(t, v, 1, cluster.JobRunning) // TaskExited or NodeDown decides the job
			},
		},
		{name: "lost", setup: then(exited(0, "n1", 0, CauseExit)), typ: CmdStepExited, cmd: exited(0, "n2", 0, CauseLost), check: func(t *testing.T, v *View, r Result) { wantStep(t, v, 0, cluster.StepFailed, 0, true) }},
		{
			name: "cancelled step ends cancelled", typ: CmdStepExited, cmd: exited(0, "n2", 0, CauseExit),
			setup: func(t *testing.T, h *harness) {
				then(exited(0, "n1", 0, CauseExit))(t, h)
				h.must(t, CmdCancelStep, CancelStep{Job: 1, Step: 0})
			},
			check: func(t *testing.T, v *View, r Result) { wantStep(t, v, 0, cluster.StepCancelled, 0, true) },
		},
		{
			name: "duplicate report", setup: then(exited(0, "n1", 0, CauseExit)), typ: CmdStepExited, cmd: exited(0, "n1", 9, CauseExit),
			check: func(t *testing.T, v *View, r Result) {
				unchanged(t, v, r)
				if code := step(t, v, 1, 0).Nodes[0].ExitCode; code != 0 {
					t.Errorf("duplicate report changed the code to %d", code)
				}
			},
		},
		{name: "report after the step ended", setup: then(exited(0, "n1", 0, CauseExit), exited(0, "n2", 0, CauseExit)), typ: CmdStepExited, cmd: exited(0, "n2", 1, CauseExit), check: unchanged},
		{name: "older incarnation", setup: withStep, typ: CmdStepExited, cmd: StepExited{Job: 1, Incarnation: 0, Step: 0, Node: "n1", ExitCode: 1}, check: unchanged},
		{name: "newer incarnation", setup: withStep, typ: CmdStepExited, cmd: StepExited{Job: 1, Incarnation: 2, Step: 0, Node: "n1"}, wantErr: ErrInvalid, errHas: "job is at incarnation 1"},
		{name: "unknown job", setup: withStep, typ: CmdStepExited, cmd: StepExited{Job: 9, Incarnation: 1, Node: "n1"}, wantErr: ErrUnknownJob},
		{name: "unknown step", setup: withStep, typ: CmdStepExited, cmd: exited(1, "n1", 0, CauseExit), wantErr: ErrUnknownStep, errHas: "has 1 steps"},
		{name: "negative step", setup: withStep, typ: CmdStepExited, cmd: exited(-1, "n1", 0, CauseExit), wantErr: ErrUnknownStep},
		{name: "node not in the step", setup: withStep, typ: CmdStepExited, cmd: exited(0, "n3", 0, CauseExit), wantErr: ErrInvalid, errHas: `node "n3" does not run the step`},
		{
			name: "node of the allocation not in the step", typ: CmdStepExited, cmd: exited(0, "n2", 0, CauseExit), wantErr: ErrInvalid, errHas: "does not run the step",
			setup: func(t *testing.T, h *harness) {
				withRunning(t, h)
				h.must(t, CmdStartStep, stepCmd(1, 1, 1, 0))
			},
		},
		{
			name: "never started job", typ: CmdStepExited, cmd: StepExited{Job: 2, Incarnation: 0, Node: "n1"}, setup: withStep,
			wantErr: ErrUnknownStep,
		},
		{
			name: "requeued incarnation's late report", typ: CmdStepExited, cmd: StepExited{Job: 1, Incarnation: 1, Node: "n2", ExitCode: 1},
			setup: func(t *testing.T, h *harness) {
				withRequeuedStep(t, h)
				h.must(t, CmdTaskExited, TaskExited{Job: 1, Incarnation: 1, Node: "n2", ExitCode: 143, Cause: CauseCancelled})
			},
			check: func(t *testing.T, v *View, r Result) {
				unchanged(t, v, r)
				if j := wantState(t, v, 1, cluster.JobPending); j.Steps != nil {
					t.Errorf("requeued job keeps steps %+v; want none", j.Steps)
				}
			},
		},
	})
}

func TestCancelStep(t *testing.T) {
	runApplyCases(t, []applyCase{
		{
			name: "running step", setup: withStep, typ: CmdCancelStep, cmd: CancelStep{Job: 1, Step: 0},
			check: func(t *testing.T, v *View, r Result) {
				// CANCELLED at once tells the nodes to stop it; it ends
				// when they report.
				wantStep(t, v, 0, cluster.StepCancelled, 0, false)
				if st := step(t, v, 1, 0); st.Nodes[0].State != cluster.TaskAssigned {
					t.Errorf("step nodes = %+v; want them live until reported", st.Nodes)
				}
				wantState(t, v, 1, cluster.JobRunning)
			},
		},
		{name: "unknown job", setup: withStep, typ: CmdCancelStep, cmd: CancelStep{Job: 9}, wantErr: ErrUnknownJob},
		{name: "unknown step", setup: withStep, typ: CmdCancelStep, cmd: CancelStep{Job: 1, Step: 1}, wantErr: ErrUnknownStep, errHas: "step 1.1"},
		{name: "negative step", setup: withStep, typ: CmdCancelStep, cmd: CancelStep{Job: 1, Step: -1}, wantErr: ErrUnknownStep},
		{name: "pending job", setup: withStep, typ: CmdCancelStep, cmd: CancelStep{Job: 2}, wantErr: ErrUnknownStep},
		{
			name: "already cancelled", typ: CmdCancelStep, cmd: CancelStep{Job: 1}, wantErr: ErrStepFinished, errHas: "step 1.0",
			setup: func(t *testing.T, h *harness) {
				withStep(t, h)
				h.must(t, CmdCancelStep, CancelStep{Job: 1})
			},
		},
		{
			name: "ended", typ: CmdCancelStep, cmd: CancelStep{Job: 1}, wantErr: ErrStepFinished, errHas: "state COMPLETED",
			setup: func(t *testing.T, h *harness) {
				withStep(t, h)
				h.must(t, CmdStepExited, StepExited{Job: 1, Incarnation: 1, Node: "n1"})
				h.must(t, CmdStepExited, StepExited{Job: 1, Incarnation: 1, Node: "n2"})
			},
		},
		{
			name: "job cancelled", typ: CmdCancelStep, cmd: CancelStep{Job: 1}, wantErr: ErrStepFinished, errHas: "state CANCELLED",
			setup: func(t *testing.T, h *harness) {
				withStep(t, h)
				h.must(t, CmdCancelJob, CancelJob{Job: 1})
			},
		},
	})
}

// TestStepsFollowTheJob: a job leaving RUNNING cancels its running steps,
// a released or lost node's share of a step is dead, and a requeue
// forgets the incarnation's steps.
func TestStepsFollowTheJob(t *testing.T) {
	runApplyCases(t, []applyCase{
		{
			name: "job cancelled", setup: withStep, typ: CmdCancelJob, cmd: CancelJob{Job: 1},
			check: func(t *testing.T, v *View, r Result) { wantStep(t, v, 0, cluster.StepCancelled, 0, false) },
		},
		{
			name: "job fails on one node, the other still runs", setup: withStep, typ: CmdTaskExited,
			cmd: TaskExited{Job: 1, Incarnation: 1, Node: "n1", ExitCode: 2, Cause: CauseExit},
			check: func(t *testing.T, v *View, r Result) {
				wantState(t, v, 1, cluster.JobFailed)
				wantStep(t, v, 0, cluster.StepCancelled, 0, false)
				if sn := step(t, v, 1, 0).Nodes; sn[0].State != cluster.TaskLost || sn[1].State != cluster.TaskAssigned {
					t.Errorf("step nodes = %+v; want n1 lost (released), n2 live", sn)
				}
			},
		},
		{
			name: "node exits 0 while its step share runs", setup: withStep, typ: CmdTaskExited,
			cmd: TaskExited{Job: 1, Incarnation: 1, Node: "n2", Cause: CauseExit},
			check: func(t *testing.T, v *View, r Result) {
				wantState(t, v, 1, cluster.JobRunning)
				wantStep(t, v, 0, cluster.StepRunning, 0, false)
				if sn := step(t, v, 1, 0).Nodes[1]; sn.State != cluster.TaskLost {
					t.Errorf("n2's share = %+v; want lost", sn)
				}
			},
		},
		{
			name: "last live node released ends the step", typ: CmdNodeDown, cmd: NodeDown{Node: "n2"},
			setup: func(t *testing.T, h *harness) {
				withStep(t, h)
				h.must(t, CmdStepExited, StepExited{Job: 1, Incarnation: 1, Node: "n1", ExitCode: 0})
			},
			check: func(t *testing.T, v *View, r Result) {
				wantState(t, v, 1, cluster.JobNodeFail)
				wantStep(t, v, 0, cluster.StepCancelled, 0, true)
			},
		},
		{
			name: "node left", typ: CmdNodeLeft, cmd: NodeLeft{Node: "n1"}, setup: withStep,
			check: func(t *testing.T, v *View, r Result) {
				if sn := step(t, v, 1, 0).Nodes; sn[0].State != cluster.TaskLost || sn[1].State != cluster.TaskAssigned {
					t.Errorf("step nodes = %+v; want n1 lost, n2 live", sn)
				}
			},
		},
		{
			name: "requeue forgets steps", typ: CmdTaskExited, cmd: TaskExited{Job: 1, Incarnation: 1, Node: "n2", ExitCode: 143, Cause: CauseCancelled},
			setup: withRequeuedStep,
			check: func(t *testing.T, v *View, r Result) {
				if j := wantState(t, v, 1, cluster.JobPending); j.Steps != nil {
					t.Errorf("Steps = %+v; want nil after the requeue", j.Steps)
				}
			},
		},
	})
}

// TestBatchJob: a batch script runs on the first node only, whose exit
// decides the job; the other nodes keep their GPUs until they report
// (DESIGN invariant 1).
func TestBatchJob(t *testing.T) {
	withBatch := func(requeue bool) func(*testing.T, *harness) {
		return func(t *testing.T, h *harness) {
			withNodes("n1", "n2", "n3")(t, h)
			h.must(t, CmdSubmitJob, SubmitJob{Spec: requeueSpec(batchSpec(3, 2), requeue)})
			h.must(t, CmdAllocate, Allocate{Decisions: []Decision{place(1, "n1", []int{0, 1}, "n2", []int{0, 1}, "n3", []int{0, 1})}})
		}
	}
	exited := func(node string, code int, cause string) TaskExited {
		return TaskExited{Job: 1, Incarnation: 1, Node: node, ExitCode: code, Cause: cause}
	}
	ends := func(state cluster.JobState, code int) func(*testing.T, *View, Result) {
		return func(t *testing.T, v *View, r Result) {
			j := wantState(t, v, 1, state)
			if j.ExitCode != code || !j.EndTime.Equal(t0.Add(time.Duration(v.Index)*time.Second)) {
				t.Errorf("job 1 exit %d end %v; want exit %d, ended now", j.ExitCode, j.EndTime, code)
			}
			wantFree(t, v, "n2", 2, 3) // still held until n2 reports
			wantFree(t, v, "n3", 2, 3)
		}
	}
	runApplyCases(t, []applyCase{
		{name: "script exits 0", setup: withBatch(false), typ: CmdTaskExited, cmd: exited("n1", 0, CauseExit), check: ends(cluster.JobCompleted, 0)},
		{name: "script fails", setup: withBatch(false), typ: CmdTaskExited, cmd: exited("n1", 3, CauseExit), check: ends(cluster.JobFailed, 3)},
		{name: "script cannot start", setup: withBatch(false), typ: CmdTaskExited, cmd: exited("n1", 0, CauseStartFail), check: ends(cluster.JobFailed, 0)},
		{name: "script times out", setup: withBatch(false), typ: CmdTaskExited, cmd: exited("n1", 137, CauseTimeout), check: ends(cluster.JobTimeout, 0)},
		{name: "script node fenced", setup: withBatch(false), typ: CmdTaskExited, cmd: exited("n1", 137, CauseFenced), check: ends(cluster.JobNodeFail, 0)},
		{name: "other node fenced", setup: withBatch(false), typ: CmdTaskExited, cmd: exited("n2", 137, CauseFenced), check: func(t *testing.T, v *View, r Result) { wantState(t, v, 1, cluster.JobNodeFail) }},
		{name: "other node lost, requeue", setup: withBatch(true), typ: CmdTaskExited, cmd: exited("n3", 0, CauseLost), check: func(t *testing.T, v *View, r Result) { wantState(t, v, 1, cluster.JobRequeued) }},
		{
			name: "other node exits while running", setup: withBatch(false), typ: CmdTaskExited, cmd: exited("n2", 1, CauseExit),
			check: func(t *testing.T, v *View, r Result) {
				if j := wantState(t, v, 1, cluster.JobRunning); j.ExitCode != 0 {
					t.Errorf("job 1 ExitCode = %d; want 0", j.ExitCode)
				}
				wantFree(t, v, "n2", 0, 1, 2, 3)
			},
		},
		{
			name: "other nodes release after the script", typ: CmdTaskExited, cmd: exited("n3", 143, CauseCancelled),
			setup: func(t *testing.T, h *harness) {
				withBatch(false)(t, h)
				h.must(t, CmdTaskExited, exited("n1", 0, CauseExit))
				h.must(t, CmdTaskExited, exited("n2", 143, CauseCancelled))
			},
			check: func(t *testing.T, v *View, r Result) {
				if j := wantState(t, v, 1, cluster.JobCompleted); j.ExitCode != 0 || j.HoldsResources() {
					t.Errorf("job 1 exit %d holds %t; want 0, nothing held", j.ExitCode, j.HoldsResources())
				}
			},
		},
		{
			name: "a job without a script needs every node", setup: withRunning, typ: CmdTaskExited, cmd: TaskExited{Job: 1, Incarnation: 1, Node: "n1", Cause: CauseExit},
			check: func(t *testing.T, v *View, r Result) { wantState(t, v, 1, cluster.JobRunning) },
		},
		{
			name: "batch spec kept canonical", typ: CmdSubmitJob, setup: withNodes("n1"),
			cmd: SubmitJob{Spec: func() cluster.Spec { s := batchSpec(1, 1); s.Batch.Args = []string{}; return s }()},
			check: func(t *testing.T, v *View, r Result) {
				if a := job(t, v, 1).Spec.Batch.Args; a != nil {
					t.Errorf("Batch.Args = %#v; want nil (canonical)", a)
				}
			},
		},
	})
}

func TestRestoreRefusesCorruptSteps(t *testing.T) {
	good := func() snapshotBody {
		h := newHarness()
		withStep(t, h)
		h.must(t, CmdStartStep, stepCmd(1, 1, 1, 0))
		h.must(t, CmdStepExited, StepExited{Job: 1, Incarnation: 1, Step: 1, Node: "n1"})
		b := snapshotBodyOf(t, h.s)
		if n := len(b.Jobs[0].Steps); n != 2 {
			t.Fatalf("fixture job 1 has %d steps; want 2", n)
		}
		return b
	}
	checkJobCorruptions(t, good, []jobCorruption{
		{"id out of order", func(j *cluster.Job) { j.Steps[1].ID = 0 }, "steps[1]: id 0, want 1"},
		{"other incarnation", func(j *cluster.Job) { j.Steps[0].Incarnation = 2 }, "incarnation 2, want the job's 1"},
		{"unknown state", func(j *cluster.Job) { j.Steps[0].State = "PAUSED" }, "known step state"},
		{"unknown node state", func(j *cluster.Job) { j.Steps[0].Nodes[0].State = "odd" }, "known task state"},
		{"node not in allocation", func(j *cluster.Job) { j.Steps[0].Nodes[1].Node = "n3" }, `node "n3", want the allocation's rank 1 node "n2"`},
		{"nodes out of rank order", func(j *cluster.Job) { j.Steps[0].Nodes[0].Node, j.Steps[0].Nodes[1].Node = "n2", "n1" }, "rank 0"},
		{"ranks", func(j *cluster.Job) { j.Steps[0].Nodes[1].FirstRank = 0 }, "tasks 1 from rank 0, want 1 from rank 1"},
		{"tasks", func(j *cluster.Job) { j.Steps[0].Nodes[1].Tasks = 3 }, "tasks 3"},
		{"node count", func(j *cluster.Job) { j.Steps[0].Nodes = j.Steps[0].Nodes[:1] }, "1 step nodes, want the spec's 2"},
		{"defaults not filled", func(j *cluster.Job) { j.Steps[0].Spec.TasksPerNode = 0 }, "defaults"},
		{"bad spec", func(j *cluster.Job) { j.Steps[0].Spec.Command = nil }, "command: empty"},
		{"too many gpus", func(j *cluster.Job) { j.Steps[0].Spec.GPUsPerTask = 3 }, "gpus_per_task 3"},
		{"running with every node done", func(j *cluster.Job) { j.Steps[1].State = cluster.StepRunning }, "RUNNING with every node done"},
		{"completed with live nodes", func(j *cluster.Job) { j.Steps[0].State = cluster.StepCompleted }, "COMPLETED with 2 nodes live"},
		{"completed with a failure", func(j *cluster.Job) { j.Steps[1].Nodes[0].ExitCode = 1 }, "did not exit 0"},
		{"live on a released node", func(j *cluster.Job) {
			j.Alloc.Nodes[1].State, j.Alloc.Nodes[1].Released = cluster.TaskExited, true
		}, "assigned on a released node"},
		{"running step in a finished job", func(j *cluster.Job) { j.State = cluster.JobCancelled }, "RUNNING in a CANCELLED job"},
		{"steps in a pending job", func(j *cluster.Job) {
			j.State, j.Alloc = cluster.JobPending, nil
		}, "without a running incarnation"},
	})
}
