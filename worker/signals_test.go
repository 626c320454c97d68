package worker

import (
	"maps"
	"slices"
	"testing"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
)

// TestSignalTarget: which local task a signal request reaches, as
// scancel --signal [--batch] would in Slurm.
func TestSignalTarget(t *testing.T) {
	ranks := &cluster.Job{ID: 1, Incarnation: 2}
	batch := &cluster.Job{ID: 1, Incarnation: 2, Spec: cluster.Spec{Batch: &cluster.Batch{Script: "#!/bin/sh\n"}}}
	own := task.Key{Job: 1, Incarnation: 2, Step: task.NoStep}
	step := task.Key{Job: 1, Incarnation: 2, Step: 0}
	all := cluster.SignalRequest{Seq: 9, Incarnation: 2, Number: 10}
	script := cluster.SignalRequest{Seq: 9, Incarnation: 2, Number: 10, BatchOnly: true}
	stale := cluster.SignalRequest{Seq: 9, Incarnation: 1, Number: 10}
	tests := []struct {
		name               string
		j                  *cluster.Job
		key                task.Key
		r                  cluster.SignalRequest
		deliver, shellOnly bool
	}{
		{"ranks of a job without a script", ranks, own, all, true, false},
		{"step task", batch, step, all, true, false},
		{"batch script: not without --batch", batch, own, all, false, true},
		{"batch script with --batch: its shell", batch, own, script, true, true},
		{"step with --batch: no", batch, step, script, false, false},
		{"an earlier incarnation's request", ranks, own, stale, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, s := SignalTarget(tt.j, tt.key, tt.r)
			if d != tt.deliver || (d && s != tt.shellOnly) {
				t.Errorf("SignalTarget(...) = %v, %v; want %v, %v", d, s, tt.deliver, tt.shellOnly)
			}
		})
	}
}

// TestSignalsDue: which requests the driver sends, and what it remembers:
// a task seen for the first time has had every request up to the view's
// index; a request is had once, delivered or passed over; tasks gone are
// forgotten.
func TestSignalsDue(t *testing.T) {
	j := &cluster.Job{ID: 1, Incarnation: 2, Spec: cluster.Spec{Batch: &cluster.Batch{Script: "#!/bin/sh\n"}}, Signals: []cluster.SignalRequest{
		{Seq: 5, Incarnation: 2, Number: 10},
		{Seq: 8, Incarnation: 2, Number: 12, BatchOnly: true},
		{Seq: 9, Incarnation: 2, Number: 15},
	}}
	jobs := func(id cluster.JobID) (*cluster.Job, bool) { return j, id == 1 }
	shell := task.Key{Job: 1, Incarnation: 2, Step: task.NoStep}
	step := task.Key{Job: 1, Incarnation: 2, Step: 0}
	newStep := task.Key{Job: 1, Incarnation: 2, Step: 1}
	gone := task.Key{Job: 1, Incarnation: 2, Step: 7}
	other := task.Key{Job: 3, Incarnation: 1, Step: task.NoStep} // a job not in the view

	due, next := SignalsDue(9, jobs, []task.Key{shell, step, newStep, other},
		map[task.Key]uint64{shell: 4, step: 8, gone: 1, other: 2})
	want := []Delivery{
		{Key: shell, Number: 12, Seq: 8, ShellOnly: true}, // --batch: the script's shell; 10 and 15 not to a script
		{Key: step, Number: 15, Seq: 9},                   // after 8, which it had
	}
	if !slices.Equal(due, want) {
		t.Errorf("due = %+v; want %+v", due, want)
	}
	wantNext := map[task.Key]uint64{shell: 9, step: 9, newStep: 9, other: 2}
	if !maps.Equal(next, wantNext) {
		t.Errorf("next = %v; want %v", next, wantNext)
	}
	if due, again := SignalsDue(9, jobs, []task.Key{shell, step, newStep}, next); len(due) != 0 || again[shell] != 9 {
		t.Errorf("a second drive sends %+v; want nothing", due)
	}
}
