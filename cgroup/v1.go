package cgroup

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shoal-sched/shoal/cluster"
)

// v1 is the cgroup v1 hierarchy: one directory tree per controller.
type v1 struct {
	root Root
}

func openV1(r Root) (*v1, error) {
	h := &v1{root: r}
	for _, name := range h.controllers() {
		dir := r.Dirs[name]
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("cgroup v1 %s: %w", name, err)
		}
		if name == "cpuset" {
			if err := inheritCpuset(dir, nil); err != nil {
				return nil, err
			}
		}
	}
	return h, nil
}

func (h *v1) Version() int    { return 1 }
func (h *v1) Has() Controller { return h.root.Has }

// controllers are the names of the mounted controllers, sorted.
func (h *v1) controllers() []string {
	names := make([]string, 0, len(h.root.Dirs))
	for n := range h.root.Dirs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// dirs are the distinct directories of path, one per mount (co-mounted
// controllers share one).
func (h *v1) dirs(path string) []string {
	var out []string
	for _, n := range h.controllers() {
		d := filepath.Join(h.root.Dirs[n], path)
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

func (h *v1) dir(controller, path string) (string, bool) {
	d, ok := h.root.Dirs[controller]
	if !ok {
		return "", false
	}
	return filepath.Join(d, path), true
}

// inheritCpuset sets a new cpuset's cpus (cpus, or the parent's when
// empty) and always its mems from the parent's: a v1 cpuset with either
// empty accepts no task.
func inheritCpuset(dir string, cpus []int) error {
	parent := filepath.Dir(dir)
	val := cluster.CPUList(cpus)
	if len(cpus) == 0 {
		b, err := readFile(parent, "cpuset.cpus")
		if err != nil {
			return fmt.Errorf("cgroup cpuset: %w", err)
		}
		val = strings.TrimSpace(string(b))
	}
	mems, err := readFile(parent, "cpuset.mems")
	if err != nil {
		return fmt.Errorf("cgroup cpuset: %w", err)
	}
	if err := writeFile(dir, "cpuset.cpus", val); err != nil {
		return fmt.Errorf("cgroup cpuset: %w", err)
	}
	if err := writeFile(dir, "cpuset.mems", strings.TrimSpace(string(mems))); err != nil {
		return fmt.Errorf("cgroup cpuset: %w", err)
	}
	return nil
}

func (h *v1) Create(path string, l Limits) error {
	if err := validPath(path); err != nil {
		return err
	}
	for _, n := range h.controllers() {
		d, _ := h.dir(n, path)
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("create cgroup %s: %w", d, err)
		}
	}
	if d, ok := h.dir("cpuset", path); ok {
		if err := inheritCpuset(d, l.CPUs); err != nil {
			return fmt.Errorf("cgroup %s: cpus %v: %w", path, l.CPUs, err)
		}
	} else if len(l.CPUs) > 0 {
		return fmt.Errorf("cgroup %s: cpus %v: no cpuset controller", path, l.CPUs)
	}
	if l.MemoryBytes > 0 {
		d, ok := h.dir("memory", path)
		if !ok {
			return fmt.Errorf("cgroup %s: memory %d: no memory controller", path, l.MemoryBytes)
		}
		v := strconv.FormatUint(l.MemoryBytes, 10)
		// memsw (memory+swap, when swap accounting is on) must stay at or
		// above the memory limit, and equal to it allows no swap.
		_, statErr := os.Stat(filepath.Join(d, "memory.memsw.limit_in_bytes"))
		memsw := statErr == nil
		if err := writeFile(d, "memory.limit_in_bytes", v); err != nil {
			// Raising the limit above an earlier memsw limit: memsw first.
			if !memsw || writeFile(d, "memory.memsw.limit_in_bytes", v) != nil {
				return fmt.Errorf("cgroup %s: memory limit: %w", path, err)
			}
			if err := writeFile(d, "memory.limit_in_bytes", v); err != nil {
				return fmt.Errorf("cgroup %s: memory limit: %w", path, err)
			}
		}
		if memsw {
			if err := writeFile(d, "memory.memsw.limit_in_bytes", v); err != nil {
				return fmt.Errorf("cgroup %s: memory+swap limit: %w", path, err)
			}
		}
	}
	if l.PidsMax > 0 {
		d, ok := h.dir("pids", path)
		if !ok {
			return fmt.Errorf("cgroup %s: pids max %d: no pids controller", path, l.PidsMax)
		}
		if err := writeFile(d, "pids.max", strconv.FormatInt(l.PidsMax, 10)); err != nil {
			return fmt.Errorf("cgroup %s: pids max: %w", path, err)
		}
	}
	if l.ConfineGPUs {
		d, ok := h.dir("devices", path)
		if !ok {
			return fmt.Errorf("cgroup %s: gpus %v: no devices controller", path, l.GPUs)
		}
		// With the parent's default of "allow all", a deny list is what
		// confines: one entry per GPU minor not given (an allow cannot
		// carve an exception out of a wildcard deny).
		// One open for all of them: each write is one rule to the kernel,
		// and the opens were most of a task's cgroup setup.
		var deny []string
		for m := 0; m <= nvidiaMaxMinor; m++ {
			if !slices.Contains(l.GPUs, m) {
				deny = append(deny, fmt.Sprintf("c %d:%d rwm", nvidiaMajor, m))
			}
		}
		if err := writeEach(d, "devices.deny", deny); err != nil {
			return fmt.Errorf("cgroup %s: deny GPUs: %w", path, err)
		}
	}
	return nil
}

// ForkIn moves the calling thread into path in every controller; done
// moves it back to the agent's own cgroups (the tree's parents). A child
// forked meanwhile is born in path.
func (h *v1) ForkIn(path string, _ *syscall.SysProcAttr) (func(), error) {
	if err := validPath(path); err != nil {
		return nil, err
	}
	tid := strconv.Itoa(unix.Gettid())
	back := func(dirs []string) {
		for _, d := range dirs {
			// The thread must leave, or its cgroup's kill would reach the
			// supervisor; it can fail only if the agent's own cgroup went.
			_ = writeFile(filepath.Dir(d), "tasks", tid)
		}
	}
	var joined []string
	for _, n := range h.controllers() {
		root := h.root.Dirs[n]
		d := filepath.Join(root, path)
		if slices.Contains(joined, root) {
			continue
		}
		if err := writeFile(d, "tasks", tid); err != nil {
			back(joined)
			return nil, fmt.Errorf("join cgroup %s: %w", path, err)
		}
		joined = append(joined, root)
	}
	return func() { back(joined) }, nil
}

func (h *v1) Procs(path string) ([]int, error) {
	if err := validPath(path); err != nil {
		return nil, err
	}
	// Every controller holds the same processes; the first will do.
	return readPIDs(h.dirs(path)[0])
}

// Kill freezes path (when the freezer is mounted), so nothing in it can
// fork while it is being killed, SIGKILLs every member, thaws it so the
// signals are delivered, and repeats until it is empty or bound passes.
func (h *v1) Kill(path string, bound time.Duration) error {
	if err := validPath(path); err != nil {
		return err
	}
	fz, hasFreezer := h.dir("freezer", path)
	return killLoop(h, path, bound, func(pids []int) error {
		if hasFreezer {
			var err error
			if err = freeze(fz); err != nil {
				hasFreezer = false // kill unfrozen: still bounded by the loop
			} else if pids, err = h.Procs(path); err != nil {
				return err
			}
		}
		killAll(pids)
		if hasFreezer {
			if err := writeFile(fz, "freezer.state", "THAWED"); err != nil {
				return fmt.Errorf("thaw: %w", err)
			}
		}
		return nil
	})
}

// killLoop is Kill's bounded loop on either hierarchy: while path has
// members, and until bound has passed, one round of kill on them, then a
// pause for the kernel to reap them.
func killLoop(h Hierarchy, path string, bound time.Duration, kill func(pids []int) error) error {
	deadline := time.Now().Add(bound)
	for {
		pids, err := h.Procs(path)
		if err != nil {
			return fmt.Errorf("kill cgroup %s: %w", path, err)
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kill cgroup %s: %d processes left after %s: %v", path, len(pids), bound, pids)
		}
		if err := kill(pids); err != nil {
			return fmt.Errorf("kill cgroup %s: %w", path, err)
		}
		time.Sleep(pollPeriod)
	}
}

// freeze freezes the v1 freezer cgroup dir and waits, up to freezeBound,
// for the kernel to say FROZEN.
func freeze(dir string) error {
	if err := writeFile(dir, "freezer.state", "FROZEN"); err != nil {
		return err
	}
	deadline := time.Now().Add(freezeBound)
	for {
		b, err := readFile(dir, "freezer.state")
		if err != nil {
			return err
		}
		if strings.TrimSpace(string(b)) == "FROZEN" {
			return nil
		}
		if time.Now().After(deadline) {
			_ = writeFile(dir, "freezer.state", "THAWED")
			return fmt.Errorf("freeze %s: not frozen after %s", dir, freezeBound)
		}
		time.Sleep(pollPeriod)
	}
}

func (h *v1) Stats(path string) (Stats, error) {
	if err := validPath(path); err != nil {
		return Stats{}, err
	}
	var s Stats
	if d, ok := h.dir("memory", path); ok {
		peak, err1 := readValue(d, "memory.max_usage_in_bytes")
		now, err2 := readValue(d, "memory.usage_in_bytes")
		if err := errors.Join(err1, err2); err != nil {
			return s, fmt.Errorf("cgroup %s: %w", path, err)
		}
		s.MemPeak, s.MemNow = peak, now
		// Kernels before 4.13 have no oom_kill line: unknown.
		if err := readOOMKills(&s, path, d, "memory.oom_control"); err != nil {
			return s, err
		}
	}
	if d, ok := h.dir("cpuacct", path); ok {
		u, err1 := readValue(d, "cpuacct.usage_user")
		sy, err2 := readValue(d, "cpuacct.usage_sys")
		if errors.Join(err1, err2) == nil {
			s.UserCPU, s.SystemCPU = time.Duration(u), time.Duration(sy)
		} else if err := readCPUTimes(&s, path, d, "cpuacct.stat", parseCPUAcctStat); err != nil {
			return s, err
		}
		// That split is sampled at the scheduler's tick, not measured:
		// whatever runs when a tick fires is charged the whole tick, so
		// a task sharing a CPU is counted short or long (412 ms for 500
		// ms burned at load 15). cpuacct.usage is the tasks' run time as
		// the scheduler measured it, in ns: scale the split to it, as
		// the kernel does for getrusage and v2's cpu.stat.
		total, err := readValue(d, "cpuacct.usage")
		if err != nil {
			return s, fmt.Errorf("cgroup %s: %w", path, err)
		}
		s.UserCPU, s.SystemCPU = scaleCPUTimes(time.Duration(total), s.UserCPU, s.SystemCPU)
	}
	return s, nil
}

// scaleCPUTimes splits total (measured) in the ratio of user to system
// (sampled), as the kernel's cputime_adjust does: all of it to user when
// system is 0, all to system when user is 0.
func scaleCPUTimes(total, user, system time.Duration) (time.Duration, time.Duration) {
	switch {
	case total <= 0:
		return 0, 0
	case system <= 0:
		return total, 0
	case user <= 0:
		return 0, total
	}
	// total*system fits 128 bits and the quotient is at most total, so
	// Div64 cannot overflow.
	hi, lo := bits.Mul64(uint64(total), uint64(system))
	sys, _ := bits.Div64(hi, lo, uint64(user)+uint64(system))
	return total - time.Duration(sys), time.Duration(sys)
}

// userHZ is the unit of cpuacct.stat: USER_HZ, 100 on every Linux ABI.
const userHZ = 100

// parseCPUAcctStat reads v1's cpuacct.stat ("user N\nsystem N" in USER_HZ
// ticks).
func parseCPUAcctStat(b []byte) (user, system time.Duration, err error) {
	return parseCPUTimes(b, "user", "system", time.Second/userHZ)
}

func readValue(dir, name string) (uint64, error) {
	b, err := readFile(dir, name)
	if err != nil {
		return 0, err
	}
	v, err := parseValue(b)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
	}
	return v, nil
}

func (h *v1) Remove(path string) error { return h.eachDir(path, removeTree) }

func (h *v1) Prune(path string) error { return h.eachDir(path, pruneDir) }

// eachDir calls f on path's directory in every controller's tree, once
// a directory, and joins the errors; path is checked first.
func (h *v1) eachDir(path string, f func(dir string) error) error {
	if err := validPath(path); err != nil {
		return err
	}
	var errs []error
	for _, d := range h.dirs(path) {
		errs = append(errs, f(d))
	}
	return errors.Join(errs...)
}
