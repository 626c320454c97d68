package fsm

import (
	"fmt"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// SignalJob asks every node running a task of the job's current
// incarnation to send it Signal, without stopping it (scancel --signal).
// It is recorded in the job as a cluster.SignalRequest whose Seq is the
// entry's index; the job keeps the latest cluster.MaxSignalRequests.
// BatchOnly sends it to a batch job's script alone; otherwise it goes to
// every step task and to the ranks of a job that has no script.
//
// RequestID (protocol 6) deduplicates client retries as SubmitJob's does:
// a second SignalJob with a RequestID already seen is answered as the
// first was (Duplicate) and records no second request.
type SignalJob struct {
	Job       cluster.JobID `msgpack:"job"`
	Signal    int           `msgpack:"signal"`
	BatchOnly bool          `msgpack:"batch_only"`
	Time      time.Time     `msgpack:"time"`
	RequestID string        `msgpack:"request_id,omitempty"`
}

func (s *State) signalJob(index uint64, c SignalJob) Result {
	if p, ok, err := s.seenRequest("signal", ridSignal, c.Job, c.RequestID); err != nil || ok {
		return Result{JobID: p.Job, Duplicate: ok, Err: err}
	}
	pos, old := s.job(c.Job)
	if old == nil {
		return Result{Err: fmt.Errorf("signal job %d: %w", c.Job, ErrUnknownJob)}
	}
	what := fmt.Sprintf("signal job %d", c.Job)
	switch {
	case old.State.Terminal():
		return Result{Err: fmt.Errorf("%s: %w (state %s)", what, ErrJobFinished, old.State)}
	case old.State != cluster.JobRunning:
		return Result{Err: fmt.Errorf("%s: %w: job is %s, want RUNNING (only running tasks can be signalled)", what, ErrInvalid, old.State)}
	case c.Signal < 1 || c.Signal > cluster.MaxSignal:
		return Result{Err: fmt.Errorf("%s: %w: signal %d: want 1 to %d", what, ErrInvalid, c.Signal, cluster.MaxSignal)}
	case c.BatchOnly && old.Spec.Batch == nil:
		return Result{Err: fmt.Errorf("%s: %w: batch_only: the job has no batch script", what, ErrInvalid)}
	}
	keep := old.Signals
	if len(keep) >= cluster.MaxSignalRequests {
		keep = keep[len(keep)-cluster.MaxSignalRequests+1:]
	}
	j := *old // shares everything but Signals, which is a fresh slice
	j.Signals = make([]cluster.SignalRequest, 0, len(keep)+1)
	j.Signals = append(append(j.Signals, keep...), cluster.SignalRequest{
		Seq: index, Incarnation: old.Incarnation, Number: c.Signal, BatchOnly: c.BatchOnly, Time: c.Time,
	})
	j.ModifyIndex = index
	s.storeJob(pos, &j)
	if c.RequestID != "" {
		s.rids.add(ridPair{RequestID: c.RequestID, Job: c.Job, Kind: ridSignal})
	}
	return Result{}
}

// validateSignals checks a restored job's --signal and signal requests as
// SubmitJob and SignalJob would have left them.
func validateSignals(j *cluster.Job) error {
	if sig := j.Spec.Signal; sig != nil {
		if err := sig.Validate(); err != nil {
			return fmt.Errorf("job %d: spec: %w", j.ID, err)
		}
		if sig.BatchOnly && j.Spec.Batch == nil {
			return fmt.Errorf("job %d: spec: signal.batch_only without a batch script", j.ID)
		}
	}
	if len(j.Signals) > cluster.MaxSignalRequests {
		return fmt.Errorf("job %d: %d signal requests, want at most %d", j.ID, len(j.Signals), cluster.MaxSignalRequests)
	}
	var last uint64
	for i, r := range j.Signals {
		what := fmt.Sprintf("job %d: signals[%d]", j.ID, i)
		switch {
		case r.Seq <= last || r.Seq > j.ModifyIndex:
			return fmt.Errorf("%s: seq %d: want more than %d and at most the job's modify index %d", what, r.Seq, last, j.ModifyIndex)
		case r.Number < 1 || r.Number > cluster.MaxSignal:
			return fmt.Errorf("%s: signal %d: want 1 to %d", what, r.Number, cluster.MaxSignal)
		case r.Incarnation == 0 || r.Incarnation > j.Incarnation:
			return fmt.Errorf("%s: incarnation %d: want 1 to the job's %d", what, r.Incarnation, j.Incarnation)
		case r.BatchOnly && r.Everywhere:
			return fmt.Errorf("%s: batch_only and everywhere both set", what)
		case r.BatchOnly && j.Spec.Batch == nil:
			return fmt.Errorf("%s: batch_only without a batch script", what)
		}
		last = r.Seq
	}
	return nil
}
