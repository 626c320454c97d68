package node

import (
	"testing"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec"
)

// TestSignalTarget: which local task a signal request reaches, as
// scancel --signal [--batch] would in Slurm.
func TestSignalTarget(t *testing.T) {
	ranks := &cluster.Job{ID: 1, Incarnation: 2}
	batch := &cluster.Job{ID: 1, Incarnation: 2, Spec: cluster.Spec{Batch: &cluster.Batch{Script: "#!/bin/sh\n"}}}
	own := exec.TaskKey{Job: 1, Incarnation: 2, Step: exec.NoStep}
	step := exec.TaskKey{Job: 1, Incarnation: 2, Step: 0}
	all := cluster.SignalRequest{Seq: 9, Incarnation: 2, Number: 10}
	script := cluster.SignalRequest{Seq: 9, Incarnation: 2, Number: 10, BatchOnly: true}
	stale := cluster.SignalRequest{Seq: 9, Incarnation: 1, Number: 10}
	tests := []struct {
		name               string
		j                  *cluster.Job
		key                exec.TaskKey
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
			d, s := signalTarget(tt.j, tt.key, tt.r)
			if d != tt.deliver || (d && s != tt.shellOnly) {
				t.Errorf("signalTarget(...) = %v, %v; want %v, %v", d, s, tt.deliver, tt.shellOnly)
			}
		})
	}
}
