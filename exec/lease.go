package exec

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/shoal-sched/shoal/exec/task"
)

// RenewLease records that the node's lease, renewed by a heartbeat the
// leader acknowledged and that was sent at sent, runs for ttl (what the
// leader granted: Config.LeaseTTL or longer) from then. Every supervisor
// reads its deadline and fences its task (SIGTERM, SIGKILL after
// KillGrace) once the lease has ended without a renewal, whatever state
// the agent is in; the record is a deadline alone, as supervisors of
// every release read it. With no Config.LeaseTTL (no watchdog) it does
// nothing.
func (e *Executor) RenewLease(sent time.Time, ttl time.Duration) error {
	if e.cfg.LeaseTTL <= 0 {
		return nil
	}
	deadline := task.BootNow() - time.Since(sent) + ttl
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
