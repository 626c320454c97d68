package task

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

const (
	// GoneWait bounds how long the agent or a supervisor waits for
	// SIGKILLed processes (a rank's group, orphaned group members, a
	// crashed agent's ranks, a task's cgroup) to vanish from /proc before
	// it reports them dead.
	GoneWait = 5 * time.Second
	// GonePoll is the period of that wait.
	GonePoll = 20 * time.Millisecond
)

// ProcStat is what the agent and the supervisors read from /proc/<pid>/stat.
type ProcStat struct {
	State      byte   // R, S, D, Z, ...
	PGrp       int    // process group
	StartTicks uint64 // start time in clock ticks since boot
}

// dead reports whether the process no longer runs: a zombie holds no
// memory and no device.
func (s ProcStat) Dead() bool { return s.State == 'Z' || s.State == 'X' || s.State == 'x' }

// ReadStat parses /proc/<pid>/stat. The command name (field 2) may contain
// spaces and parentheses, so parsing starts after its last ')'.
func ReadStat(pid int) (ProcStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ProcStat{}, err
	}
	return parseStat(b)
}

func parseStat(b []byte) (ProcStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ProcStat{}, errors.New("stat: no command name")
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state), f[2] field 5 (pgrp), f[19] field 22 (starttime).
	if len(f) < 20 || len(f[0]) != 1 {
		return ProcStat{}, fmt.Errorf("stat: %d fields after the name, want at least 20", len(f))
	}
	pgrp, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return ProcStat{}, fmt.Errorf("stat pgrp: %w", err)
	}
	start, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return ProcStat{}, fmt.Errorf("stat starttime: %w", err)
	}
	return ProcStat{State: f[0][0], PGrp: pgrp, StartTicks: start}, nil
}

// ListPIDs returns the pids in /proc.
func ListPIDs() ([]int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list /proc: %w", err)
	}
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// GroupAlive reports whether any live (non-zombie) process is in process
// group pgid.
func GroupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	pids, err := ListPIDs()
	if err != nil {
		return true // cannot tell: assume the worst
	}
	for _, pid := range pids {
		st, err := ReadStat(pid)
		if err == nil && st.PGrp == pgid && !st.Dead() {
			return true
		}
	}
	return false
}

// SameProcessAlive reports whether pid still runs and is the process that
// started at startTicks (not a later one that reused the pid).
func SameProcessAlive(pid int, startTicks uint64) bool {
	st, err := ReadStat(pid)
	return err == nil && st.StartTicks == startTicks && !st.Dead()
}

// EnvironMarks reports whether the environment of pid carries the markers
// of task key on node: SHOAL_JOB_ID, SHOAL_INCARNATION, SHOAL_NODE_NAME and,
// in a step's ranks, SHOAL_STEP_ID.
func EnvironMarks(pid int) (key Key, node string, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return Key{}, "", false
	}
	var job, inc, step []byte
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		k, v, found := bytes.Cut(kv, []byte{'='})
		if !found {
			continue
		}
		switch string(k) {
		case "SHOAL_JOB_ID":
			job = v
		case "SHOAL_INCARNATION":
			inc = v
		case "SHOAL_NODE_NAME":
			node = string(v)
		case "SHOAL_STEP_ID":
			step = v
		}
	}
	if job == nil || inc == nil || node == "" {
		return Key{}, "", false
	}
	key, ok = parseKey(string(job), string(inc), string(step))
	return key, node, ok
}
