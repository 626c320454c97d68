package leader

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
)

// TestPlanTaskReport: each report kind becomes its command, stamped with
// the leader's time; GPU usage is recorded after an exit or alone, never
// with a start; an unknown kind is refused naming the kinds (DESIGN "The
// flow of a job", 5: exits are reported through the leader until
// acknowledged).
func TestPlanTaskReport(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	usage := &cluster.GPUUsage{}
	base := TaskReport{Job: 4, Incarnation: 2, Node: "n1", Join: 1, ExitCode: 3, Cause: "exit", Step: 5}
	with := func(kind string, gpu *cluster.GPUUsage) TaskReport {
		r := base
		r.Kind, r.GPUUsage = kind, gpu
		return r
	}
	gpu := &fsm.RecordGPUUsage{Job: 4, Incarnation: 2, Node: "n1", Join: 1, Usage: *usage}
	tests := []struct {
		name string
		r    TaskReport
		want ReportPlan
		bad  bool
	}{
		{"started", with(ReportStarted, usage), ReportPlan{Type: fsm.CmdTaskStarted, Cmd: fsm.TaskStarted{Job: 4, Incarnation: 2, Node: "n1", Join: 1, Time: now}}, false},
		{"exited", with(ReportExited, nil), ReportPlan{Type: fsm.CmdTaskExited, Cmd: fsm.TaskExited{Job: 4, Incarnation: 2, Node: "n1", Join: 1, ExitCode: 3, Cause: "exit", Time: now}}, false},
		{"exited with GPU usage", with(ReportExited, usage), ReportPlan{Type: fsm.CmdTaskExited, Cmd: fsm.TaskExited{Job: 4, Incarnation: 2, Node: "n1", Join: 1, ExitCode: 3, Cause: "exit", Time: now}, GPUUsage: gpu}, false},
		{"GPU usage alone", with(ReportGPUUsage, usage), ReportPlan{GPUUsage: gpu}, false},
		{"GPU usage without any", with(ReportGPUUsage, nil), ReportPlan{}, false},
		{"step exited", with(ReportStepExited, usage), ReportPlan{Type: fsm.CmdStepExited, Cmd: fsm.StepExited{Job: 4, Incarnation: 2, Step: 5, Node: "n1", ExitCode: 3, Cause: "exit", Time: now}}, false},
		{"unknown kind", with("finished", nil), ReportPlan{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PlanTaskReport(tt.r, now)
			if tt.bad {
				if !errors.Is(err, cluster.ErrInvalid) {
					t.Errorf("PlanTaskReport = %+v, %v; want invalid", got, err)
				}
				return
			}
			if err != nil || got.Type != tt.want.Type || fmt.Sprint(got.Cmd) != fmt.Sprint(tt.want.Cmd) || fmt.Sprint(got.GPUUsage) != fmt.Sprint(tt.want.GPUUsage) {
				t.Errorf("PlanTaskReport = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// TestReportRefusal: a report about a job or step gone is acknowledged
// (the node stops retrying); any other refusal is an invalid report.
func TestReportRefusal(t *testing.T) {
	for _, tt := range []struct {
		err     error
		invalid bool
	}{
		{nil, false},
		{fmt.Errorf("job 4: %w", fsm.ErrUnknownJob), false},
		{fmt.Errorf("step 4.1: %w", fsm.ErrUnknownStep), false},
		{fmt.Errorf("job 4: %w", fsm.ErrWrongState), true},
	} {
		got := ReportRefusal(tt.err)
		if errors.Is(got, cluster.ErrInvalid) != tt.invalid || (!tt.invalid && got != nil) {
			t.Errorf("ReportRefusal(%v) = %v; want invalid %v", tt.err, got, tt.invalid)
		}
	}
}

// TestRequeueAfterProlog: a failed prolog requeues the run it ran for,
// unless the job moved on meanwhile.
func TestRequeueAfterProlog(t *testing.T) {
	job := func(state cluster.JobState, inc uint64) *cluster.Job {
		return &cluster.Job{ID: 4, State: state, Incarnation: inc}
	}
	for _, tt := range []struct {
		name string
		jobs []*cluster.Job
		want bool
	}{
		{"running that run", []*cluster.Job{job(cluster.JobRunning, 2)}, true},
		{"gone", nil, false},
		{"another run", []*cluster.Job{job(cluster.JobRunning, 3)}, false},
		{"ended", []*cluster.Job{job(cluster.JobCompleted, 2)}, false},
		{"requeued already", []*cluster.Job{job(cluster.JobRequeued, 2)}, false},
	} {
		v := fsm.PartialView(9, tt.jobs, nil, nil, nil, nil)
		if got := RequeueAfterProlog(v, 4, 2); got != tt.want {
			t.Errorf("%s: RequeueAfterProlog = %v; want %v", tt.name, got, tt.want)
		}
	}
}
