package leader

import (
	"errors"
	"fmt"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
)

// The leader's side of a node's task reports (POST /v1/internal/task-event):
// which commands a report becomes (PlanTaskReport), what the state
// machine's refusal of one means (ReportRefusal), and, after a prolog
// failed, whether the job is requeued (RequeueAfterProlog). The agent
// proposes.

// Task report kinds.
const (
	ReportStarted      = "started"
	ReportExited       = "exited"
	ReportStepExited   = "step-exited"
	ReportGPUUsage     = "gpu-usage"
	ReportPrologFailed = "prolog-failed"
	ReportEpilogFailed = "epilog-failed"
)

// TaskReport is a node's report of its tasks as the leader reads it
// (api.TaskEvent, field for field).
type TaskReport struct {
	Kind        string
	Step        int
	Job         cluster.JobID
	Incarnation uint64
	Node        string
	Join        int
	ExitCode    int
	Cause       string
	Usage       *cluster.Usage
	GPUUsage    *cluster.GPUUsage
}

// ReportPlan is what to propose for a task report: Cmd of type Type
// first (Type zero: none), then, once it is accepted, GPUUsage (nil:
// none); a cluster that does not speak GPU usage's protocol yet records
// the rest without it.
type ReportPlan struct {
	Type     fsm.CmdType
	Cmd      any
	GPUUsage *fsm.RecordGPUUsage
}

// PlanTaskReport turns report r into commands, stamped now: a task
// started, exited (with its GPU usage) or a step exited, or a running
// job's GPU usage alone. A prolog or epilog failure is not planned here
// (the node is drained: see RequeueAfterProlog); an unknown kind is
// refused. It is pure.
func PlanTaskReport(r TaskReport, now time.Time) (ReportPlan, error) {
	var p ReportPlan
	switch r.Kind {
	case ReportStarted:
		p.Type, p.Cmd = fsm.CmdTaskStarted, fsm.TaskStarted{Job: r.Job, Incarnation: r.Incarnation, Node: r.Node, Join: r.Join, Time: now}
	case ReportExited:
		p.Type, p.Cmd = fsm.CmdTaskExited, fsm.TaskExited{Job: r.Job, Incarnation: r.Incarnation, Node: r.Node, Join: r.Join,
			ExitCode: r.ExitCode, Cause: r.Cause, Usage: r.Usage, Time: now}
	case ReportGPUUsage:
		// Applied alone, it changes nothing else.
	case ReportStepExited:
		p.Type, p.Cmd = fsm.CmdStepExited, fsm.StepExited{Job: r.Job, Incarnation: r.Incarnation, Step: r.Step, Node: r.Node,
			ExitCode: r.ExitCode, Cause: r.Cause, Usage: r.Usage, Time: now}
	default:
		return ReportPlan{}, invalid(fmt.Errorf("kind %q: want started, exited, step-exited, gpu-usage, prolog-failed or epilog-failed", r.Kind))
	}
	if r.GPUUsage != nil && (r.Kind == ReportExited || r.Kind == ReportGPUUsage) {
		p.GPUUsage = &fsm.RecordGPUUsage{Job: r.Job, Incarnation: r.Incarnation, Node: r.Node, Join: r.Join, Usage: *r.GPUUsage}
	}
	return p, nil
}

// ReportRefusal is what the state machine's refusal err of a report's
// command means: nothing (nil: the job or step is gone, so there is
// nothing to report to; the node is acknowledged so that it stops
// retrying), or an invalid report.
func ReportRefusal(err error) error {
	if err == nil || errors.Is(err, fsm.ErrUnknownJob) || errors.Is(err, fsm.ErrUnknownStep) {
		return nil
	}
	return invalid(err)
}

// RequeueAfterProlog says whether job's run incarnation, whose prolog
// failed, is requeued (held) now: not once the job moved on (gone,
// another run, ended, or already requeued). It is pure.
func RequeueAfterProlog(v *fsm.View, job cluster.JobID, incarnation uint64) bool {
	j, ok := v.Job(job)
	return ok && j.Incarnation == incarnation && !j.State.Terminal() && j.State != cluster.JobRequeued
}
