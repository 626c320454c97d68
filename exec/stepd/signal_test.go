package stepd

import (
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
)

// TestEarlySignalDelay checks when each kind of task gets the job's
// --signal warning.
func TestEarlySignalDelay(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	usr1 := func(before time.Duration, batchOnly bool) *cluster.JobSignal {
		return &cluster.JobSignal{Number: int(syscall.SIGUSR1), Before: before, BatchOnly: batchOnly}
	}
	launch := func(limit time.Duration, sig *cluster.JobSignal, batch bool, step bool, jobStart time.Time) task.Launch {
		l := task.Launch{JobStart: jobStart}
		l.Spec.Request.TimeLimit = limit
		l.Spec.Signal = sig
		if batch {
			l.Spec.Batch = &cluster.Batch{Script: "#!/bin/sh\n"}
		}
		if step {
			l.Step = &cluster.Step{ID: 0}
		}
		return l
	}
	usr2 := func(before time.Duration) *cluster.JobSignal {
		return &cluster.JobSignal{Number: int(syscall.SIGUSR2), Before: before}
	}
	// ownStep is a step of a batch job with a --signal of its own.
	ownStep := func(limit time.Duration, jobSig, stepSig *cluster.JobSignal, jobStart time.Time) task.Launch {
		l := launch(limit, jobSig, true, true, jobStart)
		l.Step.Spec.Signal = stepSig
		return l
	}
	ranks, script := task.Plan{Ranks: 1}, task.Plan{Ranks: 1, Script: true}
	tests := []struct {
		name       string
		l          task.Launch
		p          task.Plan
		start, now time.Time
		want       time.Duration
		wantOK     bool
	}{
		{"no signal", launch(time.Hour, nil, false, false, t0), ranks, t0, t0, 0, false},
		{"no time limit", launch(0, usr1(time.Minute, false), false, false, t0), ranks, t0, t0, 0, false},
		{"ranks: limit - before", launch(time.Hour, usr1(time.Minute, false), false, false, t0), ranks, t0, t0, 59 * time.Minute, true},
		{"ranks: counted from the task's start", launch(time.Hour, usr1(time.Minute, false), false, false, t0),
			ranks, t0.Add(10 * time.Second), t0.Add(20 * time.Second), 59*time.Minute - 10*time.Second, true},
		{"ranks: before 0 is at the limit", launch(time.Hour, usr1(0, false), false, false, t0), ranks, t0, t0, time.Hour, true},
		{"ranks: before past the limit is at once", launch(time.Minute, usr1(time.Hour, false), false, false, t0), ranks, t0, t0.Add(time.Second), 0, true},
		{"ranks: overdue after a late start is at once", launch(time.Minute, usr1(30*time.Second, false), false, false, t0),
			ranks, t0, t0.Add(45 * time.Second), 0, true},
		{"batch script without B: not signalled", launch(time.Hour, usr1(time.Minute, false), true, false, t0), script, t0, t0, 0, false},
		{"batch script with B:", launch(time.Hour, usr1(90*time.Second, true), true, false, t0), script, t0, t0, 58*time.Minute + 30*time.Second, true},
		{"step: from the job's start", launch(time.Hour, usr1(time.Minute, false), true, true, t0),
			ranks, t0.Add(5 * time.Minute), t0.Add(5 * time.Minute), 54 * time.Minute, true},
		{"step with B: not signalled", launch(time.Hour, usr1(time.Minute, true), true, true, t0),
			ranks, t0.Add(time.Minute), t0.Add(time.Minute), 0, false},
		{"step started after the moment: sent once, not again", launch(time.Hour, usr1(time.Minute, false), true, true, t0),
			ranks, t0.Add(59*time.Minute + time.Second), t0.Add(59*time.Minute + time.Second), 0, false},
		{"step without the job's start time", launch(time.Hour, usr1(time.Minute, false), true, true, time.Time{}),
			ranks, t0, t0, 0, false},
		{"srun --signal: the step's own, from the job's start", ownStep(time.Hour, nil, usr2(2*time.Minute), t0),
			ranks, t0.Add(5 * time.Minute), t0.Add(5 * time.Minute), 53 * time.Minute, true},
		{"srun --signal: in place of the job's", ownStep(time.Hour, usr1(time.Minute, false), usr2(2*time.Minute), t0),
			ranks, t0.Add(5 * time.Minute), t0.Add(6 * time.Minute), 52 * time.Minute, true},
		{"srun --signal: a step started after the moment gets it at once", ownStep(time.Hour, nil, usr2(2*time.Minute), t0),
			ranks, t0.Add(59 * time.Minute), t0.Add(59 * time.Minute), 0, true},
		{"srun --signal: no time limit, none", ownStep(0, nil, usr2(2*time.Minute), t0), ranks, t0, t0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sig, got, ok := earlySignalDelay(tt.l, tt.p, tt.start, tt.now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("earlySignalDelay(...) = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
			want := tt.l.Spec.Signal
			if tt.l.Step != nil && tt.l.Step.Spec.Signal != nil {
				want = tt.l.Step.Spec.Signal
			}
			if ok && sig != want {
				t.Errorf("earlySignalDelay(...) sends %+v; want %+v", sig, want)
			}
		})
	}
}

// TestSuperviseKillWaitAndWarning drives the kill-wait, the shorter
// fencing grace and the --signal warning on fake time. A fenced node's
// ranks must be dead within the fencing grace even when they were already
// stopping with the longer kill-wait: the leader's lease expiry counts on
// it (DESIGN invariant 1).
func TestSuperviseKillWaitAndWarning(t *testing.T) {
	const wait, fence = 30 * time.Second, 5 * time.Second
	tests := []struct {
		name    string
		limit   time.Duration
		early   time.Duration // <0: no warning
		act     func(f *fakeRanks, stop chan string)
		want    outcome
		signals []string
	}{
		{"time limit: TERM, KILL after the kill-wait", time.Minute, -1, func(*fakeRanks, chan string) {},
			outcome{code: 137, cause: task.CauseTimeout}, []string{"terminated@1m0s", "killed@1m30s"}},
		{"cancel: the kill-wait", 0, -1, func(_ *fakeRanks, stop chan string) {
			time.Sleep(time.Second)
			stop <- task.CauseCancelled
		}, outcome{code: 137, cause: task.CauseCancelled}, []string{"terminated@1s", "killed@31s"}},
		{"fenced: the fencing grace", 0, -1, func(_ *fakeRanks, stop chan string) {
			time.Sleep(time.Second)
			stop <- task.CauseFenced
		}, outcome{code: 137, cause: task.CauseFenced}, []string{"terminated@1s", "killed@6s"}},
		{"fenced while in the kill-wait: KILL moves earlier", time.Minute, -1, func(_ *fakeRanks, stop chan string) {
			time.Sleep(time.Minute + 2*time.Second)
			stop <- task.CauseFenced
		}, outcome{code: 137, cause: task.CauseTimeout}, []string{"terminated@1m0s", "killed@1m7s"}},
		{"fenced late in the kill-wait: KILL stays", time.Minute, -1, func(_ *fakeRanks, stop chan string) {
			time.Sleep(time.Minute + 28*time.Second)
			stop <- task.CauseFenced
		}, outcome{code: 137, cause: task.CauseTimeout}, []string{"terminated@1m0s", "killed@1m30s"}},
		{"warning before the limit, once", time.Minute, 50 * time.Second, func(*fakeRanks, chan string) {},
			outcome{code: 137, cause: task.CauseTimeout}, []string{"user defined signal 1@50s", "terminated@1m0s", "killed@1m30s"}},
		{"no warning once stopping", time.Minute, 50 * time.Second, func(_ *fakeRanks, stop chan string) {
			time.Sleep(10 * time.Second)
			stop <- task.CauseCancelled
		}, outcome{code: 137, cause: task.CauseCancelled}, []string{"terminated@10s", "killed@40s"}},
		{"warning at once", time.Minute, 0, func(*fakeRanks, chan string) {},
			outcome{code: 137, cause: task.CauseTimeout}, []string{"user defined signal 1@0s", "terminated@1m0s", "killed@1m30s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeRanks(false)
				stop := make(chan string, 1)
				s := supervision{stop: stop, timeLimit: tt.limit, grace: wait, fenceGrace: fence}
				if tt.early >= 0 {
					s.early = tt.early
					s.earlySignal = func() { f.signal(syscall.SIGUSR1) }
				}
				checkSupervise(t, f, s, func() { tt.act(f, stop) }, tt.want, tt.signals)
			})
		})
	}
}
