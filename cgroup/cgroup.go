package cgroup

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Controller is a set of the abilities a Hierarchy has.
type Controller uint

// Abilities. On v1 each is a mounted controller (Kill is the freezer's
// clean kill, CPUAcct the cpuacct controller); on v2 CPUSet, Memory and
// Pids are controllers the agent's cgroup may use, Kill is cgroup.kill,
// CPUAcct is cpu.stat (always there), Devices a cgroup device program
// this process could load.
const (
	CPUSet Controller = 1 << iota
	Memory
	Pids
	Devices
	Kill
	CPUAcct
)

// All is every ability a v1 host can give.
const All = CPUSet | Memory | Pids | Devices | Kill | CPUAcct

var controllerNames = []struct {
	c    Controller
	name string
}{{CPUSet, "cpuset"}, {Memory, "memory"}, {Pids, "pids"}, {Devices, "devices"}, {Kill, "freezer"}, {CPUAcct, "cpuacct"}}

// String lists the abilities by their v1 controller names ("freezer" for
// Kill), comma-separated.
func (c Controller) String() string {
	var names []string
	for _, n := range controllerNames {
		if c&n.c != 0 {
			names = append(names, n.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

// NVIDIA character devices: every GPU is major 195 with its index as
// minor (/dev/nvidiaN); minors 254 (nvidia-modeset) and 255 (nvidiactl)
// are control devices every CUDA process opens, and stay allowed, as does
// nvidia-uvm (a major of its own, never denied).
const (
	nvidiaMajor    = 195
	nvidiaMaxMinor = 253 // GPUs are minors 0 to 253
)

// Limits are what a cgroup confines its processes to. A zero field sets
// nothing: that resource is limited only by the parent.
type Limits struct {
	// CPUs are host CPU ids (cpuset.cpus); empty: the parent's.
	CPUs []int
	// MemoryBytes is the memory limit, swap included (no swap beyond it).
	MemoryBytes uint64
	// PidsMax bounds the processes and threads in the cgroup.
	PidsMax int64
	// ConfineGPUs denies every NVIDIA GPU device but GPUs (minors, the
	// /dev/nvidiaN numbers), where Hierarchy.Has reports Devices.
	ConfineGPUs bool
	GPUs        []int
}

// Stats is a cgroup's usage as the kernel counts it, for the processes
// that were in it, dead ones included.
type Stats struct {
	MemPeak   uint64 // bytes; the most the cgroup held at once
	MemNow    uint64 // bytes, now
	UserCPU   time.Duration
	SystemCPU time.Duration
	// OOMKills counts processes the kernel killed for the memory limit;
	// OOMKnown says whether the kernel reports it.
	OOMKills uint64
	OOMKnown bool
}

// Hierarchy is the host's cgroup hierarchy, rooted at one agent's tree.
// Paths are slash-separated, relative to that root ("job_5.0/task").
type Hierarchy interface {
	// Version is 1 or 2.
	Version() int
	// Has is what this hierarchy can enforce and report.
	Has() Controller
	// Create makes the cgroup at path (its parent must exist) and applies
	// l to it; an existing cgroup gets l again.
	Create(path string, l Limits) error
	// ForkIn makes the next process the calling OS thread forks with
	// attr be born in path. The caller has locked the thread
	// (runtime.LockOSThread), forks once, then calls done.
	ForkIn(path string, attr *syscall.SysProcAttr) (done func(), err error)
	// Procs lists the processes in path and its descendants.
	Procs(path string) ([]int, error)
	// Kill SIGKILLs every process in path and its descendants and waits,
	// up to bound, until none is left.
	Kill(path string, bound time.Duration) error
	// Stats reads path's usage.
	Stats(path string) (Stats, error)
	// Remove removes path and its descendants; they must hold no process.
	// A path that does not exist is no error.
	Remove(path string) error
	// Prune removes path if it has no child cgroup and no process, in one
	// attempt: how the last task of a job removes the job's cgroup
	// without racing a sibling task that is creating its own.
	Prune(path string) error
}

// Root is an agent's cgroup tree as Detect found it: plain data, so the
// agent can hand it to the task supervisors it starts.
type Root struct {
	Version int `json:"version"`
	// Dirs are the tree's directories: on v1 one per controller (by the
	// v1 name, co-mounted controllers share one), on v2 one, under "".
	Dirs map[string]string `json:"dirs"`
	// Has is what the tree can enforce.
	Has Controller `json:"has"`
}

// ErrUnavailable is wrapped by Detect's error when the host offers no
// usable hierarchy (not root, nothing mounted, v2 without delegation).
var ErrUnavailable = errors.New("cgroups unavailable")

// TreeName is the name of the agent's tree for key (AgentKey), under the
// agent's own cgroup in every controller.
func TreeName(key string) string { return "shoal_" + key }

// AgentKey names an agent's tree: its node's name and a hash of its data
// directory, so two agents on one machine (tests, shoal dev), even of two
// clusters with the same node names, never share one, while a restarted
// agent finds its own again.
func AgentKey(node, dataDir string) string {
	if abs, err := filepath.Abs(dataDir); err == nil {
		dataDir = abs
	}
	h := fnv.New32a()
	h.Write([]byte(dataDir))
	return fmt.Sprintf("%s_%08x", node, h.Sum32())
}

// RemoveIdle removes the tree of key (AgentKey) when no process is left
// in it: what an agent that stopped without removing its own (killed, or
// its tasks kept for a restart that did not come) leaves behind. A tree
// that is not there, or a host without cgroups, is no error.
func RemoveIdle(key string) error {
	r, err := Detect(key)
	if err != nil {
		return nil
	}
	for _, d := range r.Dirs {
		if _, err := os.Stat(d); err != nil {
			return nil
		}
	}
	h, err := Attach(r)
	if err != nil {
		return err
	}
	if procs, err := h.Procs(""); err != nil || len(procs) > 0 {
		return err
	}
	return h.Remove("")
}

// Detect finds the host's hierarchy from /proc/self/mountinfo and
// /proc/self/cgroup and names the agent's tree for node (TreeName) under
// the cgroup this process runs in. It creates nothing: Open does.
func Detect(node string) (Root, error) {
	if os.Geteuid() != 0 {
		return Root{}, fmt.Errorf("%w: the agent is not root", ErrUnavailable)
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return Root{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return Root{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	mounts, err := parseMountinfo(mi)
	if err != nil {
		return Root{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	cgs, err := parseProcCgroup(own)
	if err != nil {
		return Root{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	r, err := plan(mounts, cgs, TreeName(node))
	if err != nil {
		return Root{}, err
	}
	if r.Version == 2 {
		dir := r.Dirs[""]
		parent := filepath.Dir(dir)
		ctrl, err := os.ReadFile(filepath.Join(parent, "cgroup.controllers"))
		if err != nil {
			return Root{}, fmt.Errorf("%w: v2: %w", ErrUnavailable, err)
		}
		for f := range strings.FieldsSeq(string(ctrl)) {
			switch f {
			case "cpuset":
				r.Has |= CPUSet
			case "memory":
				r.Has |= Memory
			case "pids":
				r.Has |= Pids
			}
		}
		r.Has |= CPUAcct // cpu.stat is there without the cpu controller
	}
	return r, nil
}

// plan chooses the hierarchy from parsed mountinfo and /proc/self/cgroup:
// v1 when any controller this package uses is mounted as v1 (a hybrid
// host has an empty cgroup2 beside them), else v2 when cgroup2 is mounted.
// It is pure.
func plan(mounts []mount, own []procCgroup, tree string) (Root, error) {
	v1 := Root{Version: 1, Dirs: map[string]string{}}
	var v2mount string
	for _, m := range mounts {
		switch m.fsType {
		case "cgroup2":
			if v2mount == "" {
				v2mount = m.point
			}
		case "cgroup":
			for _, n := range controllerNames {
				if !slices.Contains(m.options, n.name) {
					continue
				}
				if _, dup := v1.Dirs[n.name]; dup {
					continue
				}
				rel, ok := ownPath(own, n.name)
				if !ok {
					continue
				}
				// m.root is the part of the hierarchy the mount shows (a
				// container sees its own cgroup as "/").
				sub, ok := strings.CutPrefix(rel, m.root)
				if !ok {
					continue
				}
				v1.Dirs[n.name] = filepath.Join(m.point, sub, tree)
				v1.Has |= n.c
			}
		}
	}
	if len(v1.Dirs) > 0 {
		return v1, nil
	}
	if v2mount == "" {
		return Root{}, fmt.Errorf("%w: no cgroup v1 controller and no cgroup2 mounted", ErrUnavailable)
	}
	rel, ok := ownPath(own, "")
	if !ok {
		return Root{}, fmt.Errorf("%w: /proc/self/cgroup has no v2 line", ErrUnavailable)
	}
	return Root{Version: 2, Dirs: map[string]string{"": filepath.Join(v2mount, rel, tree)}}, nil
}

// ownPath is this process's cgroup in the v1 hierarchy of controller, or
// in v2 for controller "".
func ownPath(own []procCgroup, controller string) (string, bool) {
	for _, c := range own {
		if controller == "" && c.id == 0 && len(c.controllers) == 0 {
			return c.path, true
		}
		if controller != "" && slices.Contains(c.controllers, controller) {
			return c.path, true
		}
	}
	return "", false
}

// Open makes the agent's tree of r (every directory, and on v2 the
// controllers enabled down to it) and returns the Hierarchy over it.
func Open(r Root) (Hierarchy, error) {
	switch r.Version {
	case 1:
		return openV1(r)
	case 2:
		return openV2(r)
	}
	return nil, fmt.Errorf("cgroup version %d: want 1 or 2", r.Version)
}

// Attach returns the Hierarchy over r's existing tree, creating nothing:
// what a task supervisor uses with the Root its agent opened.
func Attach(r Root) (Hierarchy, error) {
	switch r.Version {
	case 1:
		if len(r.Dirs) == 0 {
			return nil, errors.New("cgroup v1: no controller directories")
		}
		return &v1{root: r}, nil
	case 2:
		if r.Dirs[""] == "" {
			return nil, errors.New("cgroup v2: no directory")
		}
		return &v2{dir: r.Dirs[""], has: r.Has}, nil
	}
	return nil, fmt.Errorf("cgroup version %d: want 1 or 2", r.Version)
}

// validPath refuses a path that would leave the tree.
func validPath(p string) error {
	if p == "" {
		return nil
	}
	if filepath.IsAbs(p) || p != filepath.Clean(p) || p == ".." || strings.HasPrefix(p, "../") {
		return fmt.Errorf("cgroup path %q: want a clean relative path inside the tree", p)
	}
	return nil
}

// writeFile writes one value to a cgroup file, as the kernel wants it:
// one write, no truncation.
func writeFile(dir, name, value string) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %q to %s: %w", value, filepath.Join(dir, name), err)
	}
	return nil
}

// writeEach writes each of values to the file name in dir with a write
// of its own, on one open file: a cgroup v1 file takes one rule per
// write (devices.deny), and an open costs more than a write.
func writeEach(dir, name string, values []string) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	for _, v := range values {
		if _, err = f.WriteString(v); err != nil {
			f.Close()
			return fmt.Errorf("write %q to %s: %w", v, filepath.Join(dir, name), err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}

func readFile(dir, name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(dir, name))
}

// readPIDs reads the cgroup.procs of dir and of every directory below it.
func readPIDs(dir string) ([]int, error) {
	var pids []int
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil // removed meanwhile
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		b, err := readFile(p, "cgroup.procs")
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		ps, err := parsePIDs(b)
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(p, "cgroup.procs"), err)
		}
		pids = append(pids, ps...)
		return nil
	})
	return pids, err
}

// removeTree removes dir and its descendants, deepest first. A cgroup
// whose last process just died may still be busy for a moment: each
// rmdir is retried up to removeBound.
func removeTree(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.Reverse(dirs)
	for _, d := range dirs {
		deadline := time.Now().Add(removeBound)
		for {
			err := syscall.Rmdir(d)
			if err == nil || errors.Is(err, syscall.ENOENT) {
				break
			}
			if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
				return fmt.Errorf("remove cgroup %s: %w", d, err)
			}
			time.Sleep(pollPeriod)
		}
	}
	return nil
}

const (
	// removeBound bounds the wait for a just-emptied cgroup to be removable.
	removeBound = 2 * time.Second
	// pollPeriod is how often waits look again.
	pollPeriod = 10 * time.Millisecond
	// freezeBound bounds one wait for the v1 freezer to reach FROZEN.
	freezeBound = time.Second
)

// killAll SIGKILLs pids, ignoring those already gone.
func killAll(pids []int) {
	for _, pid := range pids {
		if pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// pruneDir removes dir if it is an empty cgroup with no children.
func pruneDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			return fmt.Errorf("prune cgroup %s: has child %s", dir, e.Name())
		}
	}
	if err := syscall.Rmdir(dir); err != nil && !errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("prune cgroup %s: %w", dir, err)
	}
	return nil
}

// readOOMKills reads the oom_kill count of cgroup path's flat-keyed file
// name in d (v2's memory.events, v1's memory.oom_control) into s: unknown
// when the file cannot be read or has no such line.
func readOOMKills(s *Stats, path, d, name string) error {
	b, err := readFile(d, name)
	if err != nil {
		return nil
	}
	m, err := parseFlatKeyed(b)
	if err != nil {
		return fmt.Errorf("cgroup %s: %s: %w", path, name, err)
	}
	s.OOMKills, s.OOMKnown = m["oom_kill"]
	return nil
}

// readCPUTimes reads cgroup path's CPU time file name in d (v2's
// cpu.stat, v1's cpuacct.stat) into s through parse.
func readCPUTimes(s *Stats, path, d, name string, parse func([]byte) (user, system time.Duration, err error)) error {
	b, err := readFile(d, name)
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", path, err)
	}
	s.UserCPU, s.SystemCPU, err = parse(b)
	if err != nil {
		return fmt.Errorf("cgroup %s: %s: %w", path, name, err)
	}
	return nil
}
