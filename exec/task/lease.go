package task

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// LeaseFile, in the agent's data directory, holds the node's lease deadline for the
// supervisors' fencing watchdog.
const LeaseFile = "lease.json"

// LeaseRecord is the node's lease as the supervisors read it. The deadline
// is on CLOCK_BOOTTIME, which every process of this machine shares, which
// never jumps with the wall clock and which keeps counting through a
// suspend (CLOCK_MONOTONIC does not, and a resumed machine must not think
// its lease still runs).
type LeaseRecord struct {
	// Deadline is when the lease ends, in nanoseconds of CLOCK_BOOTTIME.
	Deadline int64 `json:"deadline_boottime_ns"`
}

// BootNow reads CLOCK_BOOTTIME. It cannot fail on the kernels Shoal
// supports (Linux 2.6.39 and later), so an error is not checked.
func BootNow() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
	return time.Duration(ts.Nano())
}

// WriteLease replaces the lease file atomically (temporary file and
// rename, so a reader sees the old record or the new one). It is not
// synced: the deadline means nothing after a reboot, which also ends
// every supervisor.
func WriteLease(dir string, rec LeaseRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+LeaseFile+".tmp*")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), filepath.Join(dir, LeaseFile))
	}
	if werr != nil {
		_ = os.Remove(f.Name())
	}
	return werr
}

func ReadLease(path string) (LeaseRecord, error) {
	var rec LeaseRecord
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

// LeaseExpired reports whether the lease in path has ended. A missing or
// unreadable record counts as ended: the agent writes it before any task
// starts, and a supervisor that cannot prove the lease runs must fence.
func LeaseExpired(path string) bool {
	rec, err := ReadLease(path)
	return err != nil || BootNow() >= time.Duration(rec.Deadline)
}
