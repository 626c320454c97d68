package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shoal-sched/shoal/cluster"
)

// v2 is the unified hierarchy: one tree, controllers enabled per level
// in cgroup.subtree_control.
type v2 struct {
	dir string // the agent's tree
	has Controller
}

// v2Controllers are the controllers this package enables on v2.
var v2Controllers = []struct {
	c    Controller
	name string
}{{CPUSet, "cpuset"}, {Memory, "memory"}, {Pids, "pids"}}

func openV2(r Root) (*v2, error) {
	h := &v2{dir: r.Dirs[""], has: r.Has &^ Devices} // Devices: if the probe loads
	if h.dir == "" {
		return nil, errors.New("cgroup v2: no directory")
	}
	// The agent's own cgroup must hand its controllers down: that fails
	// (EBUSY) when it holds processes and is not the root, the v2 rule
	// "no internal processes". Delegation (systemd's Delegate=yes with the
	// agent in a leaf of its own) is the way out.
	if err := h.enable(filepath.Dir(h.dir)); err != nil {
		return nil, fmt.Errorf("%w: v2: %w (run the agent in a delegated cgroup: systemd Delegate=yes, or a parent without processes)", ErrUnavailable, err)
	}
	if err := os.Mkdir(h.dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("cgroup v2: %w", err)
	}
	if err := h.enable(h.dir); err != nil {
		return nil, fmt.Errorf("cgroup v2: %w", err)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "cgroup.kill")); err == nil {
		h.has |= Kill
	}
	if probeDeviceProgs() == nil {
		h.has |= Devices
	}
	return h, nil
}

// enable turns this hierarchy's controllers on for dir's children.
func (h *v2) enable(dir string) error {
	var want []string
	for _, c := range v2Controllers {
		if h.has&c.c != 0 {
			want = append(want, "+"+c.name)
		}
	}
	if len(want) == 0 {
		return nil
	}
	return writeFile(dir, "cgroup.subtree_control", strings.Join(want, " "))
}

func (h *v2) Version() int    { return 2 }
func (h *v2) Has() Controller { return h.has }

func (h *v2) Create(path string, l Limits) error {
	if err := validPath(path); err != nil {
		return err
	}
	d := filepath.Join(h.dir, path)
	// The parent hands its controllers down (the tree's root already
	// does): a job's cgroup, which holds no process, to its tasks'.
	if parent := filepath.Dir(d); parent != h.dir && path != "" {
		if err := h.enable(parent); err != nil {
			return fmt.Errorf("cgroup %s: %w", path, err)
		}
	}
	if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create cgroup %s: %w", d, err)
	}
	if l.ConfineGPUs {
		if h.has&Devices == 0 {
			return fmt.Errorf("cgroup %s: gpus %v: this kernel or process cannot load a cgroup device program", path, l.GPUs)
		}
		if err := confineGPUs(d, l.GPUs); err != nil {
			return fmt.Errorf("cgroup %s: gpus %v: %w", path, l.GPUs, err)
		}
	}
	if len(l.CPUs) > 0 {
		if h.has&CPUSet == 0 {
			return fmt.Errorf("cgroup %s: cpus %v: no cpuset controller", path, l.CPUs)
		}
		if err := writeFile(d, "cpuset.cpus", cluster.CPUList(l.CPUs)); err != nil {
			return fmt.Errorf("cgroup %s: cpus: %w", path, err)
		}
	}
	if l.MemoryBytes > 0 {
		if h.has&Memory == 0 {
			return fmt.Errorf("cgroup %s: memory %d: no memory controller", path, l.MemoryBytes)
		}
		if err := writeFile(d, "memory.max", strconv.FormatUint(l.MemoryBytes, 10)); err != nil {
			return fmt.Errorf("cgroup %s: memory limit: %w", path, err)
		}
		if _, err := os.Stat(filepath.Join(d, "memory.swap.max")); err == nil {
			if err := writeFile(d, "memory.swap.max", "0"); err != nil {
				return fmt.Errorf("cgroup %s: swap limit: %w", path, err)
			}
		}
	}
	if l.PidsMax > 0 {
		if h.has&Pids == 0 {
			return fmt.Errorf("cgroup %s: pids max %d: no pids controller", path, l.PidsMax)
		}
		if err := writeFile(d, "pids.max", strconv.FormatInt(l.PidsMax, 10)); err != nil {
			return fmt.Errorf("cgroup %s: pids max: %w", path, err)
		}
	}
	return nil
}

// ForkIn sets attr so clone3 starts the child in path
// (CLONE_INTO_CGROUP); done closes the directory it opened.
func (h *v2) ForkIn(path string, attr *syscall.SysProcAttr) (func(), error) {
	if err := validPath(path); err != nil {
		return nil, err
	}
	if attr == nil {
		return nil, errors.New("cgroup v2: fork in: no SysProcAttr")
	}
	fd, err := unix.Open(filepath.Join(h.dir, path), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open cgroup %s: %w", path, err)
	}
	attr.UseCgroupFD = true
	attr.CgroupFD = fd
	return func() { _ = unix.Close(fd) }, nil
}

func (h *v2) Procs(path string) ([]int, error) {
	if err := validPath(path); err != nil {
		return nil, err
	}
	return readPIDs(filepath.Join(h.dir, path))
}

// Kill writes cgroup.kill (the kernel kills the whole subtree, forks in
// flight included), or without it SIGKILLs every member, until empty or
// bound.
func (h *v2) Kill(path string, bound time.Duration) error {
	if err := validPath(path); err != nil {
		return err
	}
	d := filepath.Join(h.dir, path)
	return killLoop(h, path, bound, func(pids []int) error {
		if h.has&Kill == 0 || writeFile(d, "cgroup.kill", "1") != nil {
			killAll(pids)
		}
		return nil
	})
}

func (h *v2) Stats(path string) (Stats, error) {
	if err := validPath(path); err != nil {
		return Stats{}, err
	}
	d := filepath.Join(h.dir, path)
	var s Stats
	if h.has&Memory != 0 {
		now, err := readValue(d, "memory.current")
		if err != nil {
			return s, fmt.Errorf("cgroup %s: %w", path, err)
		}
		s.MemNow = now
		if peak, err := readValue(d, "memory.peak"); err == nil { // Linux 5.19 and later
			s.MemPeak = peak
		}
		if err := readOOMKills(&s, path, d, "memory.events"); err != nil {
			return s, err
		}
	}
	err := readCPUTimes(&s, path, d, "cpu.stat", parseCPUStat)
	return s, err
}

// parseCPUStat reads v2's cpu.stat (user_usec, system_usec).
func parseCPUStat(b []byte) (user, system time.Duration, err error) {
	return parseCPUTimes(b, "user_usec", "system_usec", time.Microsecond)
}

func (h *v2) Remove(path string) error {
	if err := validPath(path); err != nil {
		return err
	}
	return removeTree(filepath.Join(h.dir, path))
}

func (h *v2) Prune(path string) error {
	if err := validPath(path); err != nil {
		return err
	}
	return pruneDir(filepath.Join(h.dir, path))
}
