package exec

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// leaseFile, in Config.DataDir, holds the node's lease deadline for the
// supervisors' fencing watchdog.
const leaseFile = "lease.json"

// leaseRecord is the node's lease as the supervisors read it. The deadline
// is on CLOCK_BOOTTIME, which every process of this machine shares, which
// never jumps with the wall clock and which keeps counting through a
// suspend (CLOCK_MONOTONIC does not, and a resumed machine must not think
// its lease still runs).
type leaseRecord struct {
	// Deadline is when the lease ends, in nanoseconds of CLOCK_BOOTTIME.
	Deadline int64 `json:"deadline_boottime_ns"`
}

// bootNow reads CLOCK_BOOTTIME. It cannot fail on the kernels Shoal
// supports (Linux 2.6.39 and later), so an error is not checked.
func bootNow() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
	return time.Duration(ts.Nano())
}

// RenewLease records that the node's lease, renewed by a heartbeat the
// leader acknowledged and that was sent at sent, runs for Config.LeaseTTL
// from then. Every supervisor reads it and fences its task (SIGTERM,
// SIGKILL after KillGrace) once the lease has ended without a renewal,
// whatever state the agent is in. With no LeaseTTL it does nothing.
func (e *Executor) RenewLease(sent time.Time) error {
	if e.cfg.LeaseTTL <= 0 {
		return nil
	}
	deadline := bootNow() - time.Since(sent) + e.cfg.LeaseTTL
	if err := writeLease(e.cfg.DataDir, leaseRecord{Deadline: int64(deadline)}); err != nil {
		return fmt.Errorf("renew lease: %w", err)
	}
	return nil
}

// LeaseLeft is how long the lease last recorded by RenewLease, perhaps by
// an earlier agent, still runs: what a restarted agent has before its
// supervisors fence their tasks. Zero when it has ended or none was
// recorded.
func (e *Executor) LeaseLeft() time.Duration {
	rec, err := readLease(filepath.Join(e.cfg.DataDir, leaseFile))
	if err != nil {
		return 0
	}
	return max(time.Duration(rec.Deadline)-bootNow(), 0)
}

// writeLease replaces the lease file atomically (temporary file and
// rename, so a reader sees the old record or the new one). It is not
// synced: the deadline means nothing after a reboot, which also ends
// every supervisor.
func writeLease(dir string, rec leaseRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+leaseFile+".tmp*")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), filepath.Join(dir, leaseFile))
	}
	if werr != nil {
		_ = os.Remove(f.Name())
	}
	return werr
}

func readLease(path string) (leaseRecord, error) {
	var rec leaseRecord
	b, err := os.ReadFile(path)
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fmt.Errorf("decode %s: %w", path, err)
	}
	if rec.Deadline <= 0 {
		return rec, errors.New("lease: no deadline")
	}
	return rec, nil
}

// leaseExpired reports whether the lease in path has ended. A missing or
// unreadable record counts as ended: the agent writes it before any task
// starts, and a supervisor that cannot prove the lease runs must fence.
func leaseExpired(path string) bool {
	rec, err := readLease(path)
	return err != nil || bootNow() >= time.Duration(rec.Deadline)
}
