package cluster

import (
	"fmt"
	"time"
)

// MaxSignal is the highest signal number a job may ask for (SIGRTMAX on
// Linux).
const MaxSignal = 64

// JobSignal is sbatch's and srun's --signal=[B:]SIG[@SECONDS]: the signal
// Number is sent Before the job's time limit, once, so a training script
// can checkpoint. Without BatchOnly it goes to every task of the job's
// steps and to the ranks of a job that is not a batch job, but not to a
// batch script (Slurm's default); with BatchOnly ("B:") only to the batch
// script's shell. A job without a time limit never gets it.
type JobSignal struct {
	Number    int           `msgpack:"number" json:"number"`
	Before    time.Duration `msgpack:"before" json:"before"` // nanoseconds in JSON
	BatchOnly bool          `msgpack:"batch_only" json:"batch_only,omitempty"`
}

// Validate checks the signal and names the first bad field.
func (s *JobSignal) Validate() error {
	switch {
	case s.Number < 1 || s.Number > MaxSignal:
		return fmt.Errorf("signal.number %d: want a Linux signal, 1 to %d", s.Number, MaxSignal)
	case s.Before < 0:
		return fmt.Errorf("signal.before %s: want 0 or more", s.Before)
	}
	return nil
}

// MaxSignalRequests bounds the signal requests a job keeps (the most
// recent ones): agents deliver each one once, shortly after it is
// committed, so older ones are of no use.
const MaxSignalRequests = 16

// SignalRequest is one `shoal cancel --signal` (scancel --signal) of a
// running job, recorded in the job for every node to deliver to its tasks
// of that incarnation. Seq is the raft index of the command, so requests
// are ordered and a node can tell which it has delivered.
type SignalRequest struct {
	Seq         uint64 `msgpack:"seq" json:"seq"`
	Incarnation uint64 `msgpack:"incarnation" json:"incarnation"`
	Number      int    `msgpack:"number" json:"number"`
	// BatchOnly sends it to the batch script's shell only; otherwise to
	// every step task and the ranks of a job that is not a batch job.
	BatchOnly bool `msgpack:"batch_only" json:"batch_only,omitempty"`
	// Everywhere sends it to every task: the step tasks, a plain job's
	// ranks and a batch job's script (its shell), as a preemption's
	// SIGTERM does.
	Everywhere bool      `msgpack:"everywhere,omitempty" json:"everywhere,omitempty"`
	Time       time.Time `msgpack:"time" json:"time"`
}
