package fsm

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

func TestSignalJob(t *testing.T) {
	at := t0.Add(time.Hour)
	withBatchRunning := func(t *testing.T, h *harness) {
		withNodes("n1", "n2")(t, h)
		h.must(t, CmdSubmitJob, SubmitJob{Spec: batchSpec(2, 1)})
		h.must(t, CmdAllocate, Allocate{Decisions: []Decision{place(1, "n1", []int{0}, "n2", []int{0})}})
	}
	tests := []struct {
		name    string
		setup   func(t *testing.T, h *harness)
		cmd     SignalJob
		wantErr error  // nil: accepted
		errHas  string // in the error
	}{
		{"running job", withRunning, SignalJob{Job: 1, Signal: 10}, nil, ""},
		{"batch script only", withBatchRunning, SignalJob{Job: 1, Signal: 12, BatchOnly: true}, nil, ""},
		{"unknown job", withRunning, SignalJob{Job: 9, Signal: 10}, ErrUnknownJob, "signal job 9"},
		{"pending job", withRunning, SignalJob{Job: 2, Signal: 10}, ErrInvalid, "job is PENDING, want RUNNING"},
		{"finished job", func(t *testing.T, h *harness) {
			withRunning(t, h)
			h.must(t, CmdCancelJob, CancelJob{Job: 1})
		}, SignalJob{Job: 1, Signal: 10}, ErrJobFinished, "state CANCELLED"},
		{"signal 0", withRunning, SignalJob{Job: 1, Signal: 0}, ErrInvalid, "signal 0: want 1 to 64"},
		{"signal 65", withRunning, SignalJob{Job: 1, Signal: 65}, ErrInvalid, "signal 65"},
		{"batch only without a script", withRunning, SignalJob{Job: 1, Signal: 10, BatchOnly: true}, ErrInvalid, "batch_only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness()
			tt.setup(t, h)
			before := h.s.View().Jobs()
			c := tt.cmd
			c.Time = at
			r := h.apply(t, CmdSignalJob, c)
			if tt.wantErr != nil {
				if !errors.Is(r.Err, tt.wantErr) || !strings.Contains(r.Err.Error(), tt.errHas) {
					t.Fatalf("SignalJob = %v; want %v mentioning %q", r.Err, tt.wantErr, tt.errHas)
				}
				for i, j := range h.s.View().Jobs() {
					if j.ModifyIndex != before[i].ModifyIndex || len(j.Signals) != 0 {
						t.Errorf("a refused SignalJob changed job %d", j.ID)
					}
				}
				return
			}
			if r.Err != nil {
				t.Fatalf("SignalJob = %v; want nil", r.Err)
			}
			j := job(t, h.s.View(), 1)
			want := []cluster.SignalRequest{{Seq: h.index, Incarnation: 1, Number: c.Signal, BatchOnly: c.BatchOnly, Time: at}}
			got := j.Signals
			if len(got) == 1 && got[0].Time.Equal(at) {
				got[0].Time = at // same instant, compared as values below
			}
			if len(got) != 1 || got[0] != want[0] || j.ModifyIndex != h.index || j.State != cluster.JobRunning {
				t.Errorf("job 1 = signals %+v, modify %d, %s; want %+v, %d, RUNNING", j.Signals, j.ModifyIndex, j.State, want, h.index)
			}
		})
	}
}

// TestSignalJobKeepsTheLatest: a job keeps only the latest
// MaxSignalRequests requests, in order, and views handed out before are
// not changed (views are immutable, STYLE §3).
func TestSignalJobKeepsTheLatest(t *testing.T) {
	h := newHarness()
	withRunning(t, h)
	var old *cluster.Job
	var seqs []uint64
	for i := range cluster.MaxSignalRequests + 5 {
		h.must(t, CmdSignalJob, SignalJob{Job: 1, Signal: 1 + i%31, Time: t0})
		seqs = append(seqs, h.index)
		if i == 2 {
			old = job(t, h.s.View(), 1)
		}
	}
	j := job(t, h.s.View(), 1)
	if len(j.Signals) != cluster.MaxSignalRequests {
		t.Fatalf("job 1 keeps %d signal requests; want %d", len(j.Signals), cluster.MaxSignalRequests)
	}
	for i, r := range j.Signals {
		if want := seqs[len(seqs)-cluster.MaxSignalRequests+i]; r.Seq != want {
			t.Errorf("signals[%d].seq = %d; want %d", i, r.Seq, want)
		}
	}
	if len(old.Signals) != 3 || old.Signals[2].Seq != seqs[2] {
		t.Errorf("a view taken after 3 requests now shows %+v", old.Signals)
	}
	// The state restores, and snapshots the same bytes again.
	restored(t, h.s)
}

func TestRestoreRefusesCorruptSignals(t *testing.T) {
	good := func() snapshotBody {
		h := newHarness()
		withRunning(t, h)
		h.must(t, CmdSignalJob, SignalJob{Job: 1, Signal: 10, Time: t0})
		h.must(t, CmdSignalJob, SignalJob{Job: 1, Signal: 12, Time: t0})
		return snapshotBodyOf(t, h.s)
	}
	checkJobCorruptions(t, good, []jobCorruption{
		{"seq out of order", func(j *cluster.Job) { j.Signals[1].Seq = j.Signals[0].Seq }, "signals[1]: seq"},
		{"seq past the job", func(j *cluster.Job) { j.Signals[1].Seq = j.ModifyIndex + 1 }, "modify index"},
		{"signal out of range", func(j *cluster.Job) { j.Signals[0].Number = 99 }, "signals[0]: signal 99"},
		{"future incarnation", func(j *cluster.Job) { j.Signals[0].Incarnation = 2 }, "incarnation 2"},
		{"batch only without a script", func(j *cluster.Job) { j.Signals[0].BatchOnly = true }, "batch_only"},
		{"too many", func(j *cluster.Job) {
			for len(j.Signals) <= cluster.MaxSignalRequests {
				j.Signals = append(j.Signals, j.Signals[len(j.Signals)-1])
			}
		}, "signal requests, want at most 16"},
		{"bad --signal in the spec", func(j *cluster.Job) { j.Spec.Signal = &cluster.JobSignal{Number: 10, Before: -time.Second} }, "signal.before"},
		{"--signal B: without a script", func(j *cluster.Job) { j.Spec.Signal = &cluster.JobSignal{Number: 10, BatchOnly: true} }, "batch_only"},
	})
}

// TestSubmitValidatesSignal: a --signal SubmitJob would refuse.
func TestSubmitValidatesSignal(t *testing.T) {
	tests := []struct {
		name   string
		spec   func() cluster.Spec
		errHas string
	}{
		{"ok", func() cluster.Spec {
			s := spec(1, 0)
			s.Signal = &cluster.JobSignal{Number: 10, Before: time.Minute}
			return s
		}, ""},
		{"B: on a batch job", func() cluster.Spec {
			s := batchSpec(1, 0)
			s.Signal = &cluster.JobSignal{Number: 10, Before: time.Minute, BatchOnly: true}
			return s
		}, ""},
		{"B: without a script", func() cluster.Spec {
			s := spec(1, 0)
			s.Signal = &cluster.JobSignal{Number: 10, BatchOnly: true}
			return s
		}, "signal.batch_only"},
		{"number", func() cluster.Spec {
			s := spec(1, 0)
			s.Signal = &cluster.JobSignal{Number: 0}
			return s
		}, "signal.number 0"},
		{"before", func() cluster.Spec {
			s := spec(1, 0)
			s.Signal = &cluster.JobSignal{Number: 10, Before: -1}
			return s
		}, "signal.before"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness()
			r := h.apply(t, CmdSubmitJob, SubmitJob{Spec: tt.spec()})
			if tt.errHas == "" {
				if r.Err != nil {
					t.Fatalf("SubmitJob = %v; want nil", r.Err)
				}
				j := job(t, h.s.View(), r.JobID)
				if j.Spec.Signal == nil || *j.Spec.Signal != *tt.spec().Signal {
					t.Errorf("stored signal = %+v; want %+v", j.Spec.Signal, tt.spec().Signal)
				}
				return
			}
			if !errors.Is(r.Err, ErrInvalid) || !strings.Contains(r.Err.Error(), tt.errHas) {
				t.Fatalf("SubmitJob = %v; want ErrInvalid mentioning %q", r.Err, tt.errHas)
			}
		})
	}
}
