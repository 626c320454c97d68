package exec

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/shoal-sched/shoal/exec/task"
)

// RenewLease records that the node's lease, renewed by a heartbeat the
// leader acknowledged and that was sent at sent, runs for Config.LeaseTTL
// from then. Every supervisor reads it and fences its task (SIGTERM,
// SIGKILL after KillGrace) once the lease has ended without a renewal,
// whatever state the agent is in. With no LeaseTTL it does nothing.
func (e *Executor) RenewLease(sent time.Time) error {
	if e.cfg.LeaseTTL <= 0 {
		return nil
	}
	deadline := task.BootNow() - time.Since(sent) + e.cfg.LeaseTTL
	if err := task.WriteLease(e.cfg.DataDir, task.LeaseRecord{Deadline: int64(deadline)}); err != nil {
		return fmt.Errorf("renew lease: %w", err)
	}
	return nil
}

// LeaseLeft is how long the lease last recorded by RenewLease, perhaps by
// an earlier agent, still runs: what a restarted agent has before its
// supervisors fence their tasks. Zero when it has ended or none was
// recorded.
func (e *Executor) LeaseLeft() time.Duration {
	rec, err := task.ReadLease(filepath.Join(e.cfg.DataDir, task.LeaseFile))
	if err != nil {
		return 0
	}
	return max(time.Duration(rec.Deadline)-task.BootNow(), 0)
}
