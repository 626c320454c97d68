package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/shoal-sched/shoal/cgroup"
	"github.com/shoal-sched/shoal/exec"
)

// Values of Config.Cgroups (--cgroups), as Slurm's task/cgroup is on,
// or not.
const (
	// CgroupsAuto confines tasks with what the host has and says once at
	// start what it falls back to.
	CgroupsAuto = "auto"
	// CgroupsRequired refuses to start without root and every controller
	// the hierarchy can have (v2: all but device confinement, which it
	// cannot give; the agent says so).
	CgroupsRequired = "required"
	// CgroupsOff confines nothing.
	CgroupsOff = "off"
)

// cgroupSetup is what the agent hands exec for confinement.
type cgroupSetup struct {
	root     *cgroup.Root // nil: none
	hostCPUs []int        // cgroup.Canonical order
}

// wantControllers are what a hierarchy must have for --cgroups=required:
// on v1 all of them, on v2 all but Devices (a BPF program some kernels
// and containers refuse; the agent says so).
func wantControllers(version int) cgroup.Controller {
	if version == 2 {
		return cgroup.All &^ cgroup.Devices
	}
	return cgroup.All
}

// protectFromOOM keeps the kernel's OOM killer off the agent and the
// supervisors it starts (they inherit it); ranks get the default back.
func protectFromOOM(log *slog.Logger) {
	if os.Geteuid() != 0 {
		return
	}
	if err := exec.ProtectFromOOM(); err != nil {
		log.Warn("the agent and its task supervisors are not protected from the OOM killer", "err", err)
	}
}

// cgroups decides from Config.Cgroups whether this node's tasks run in
// cgroups, creates the agent's tree (under the agent's own cgroup, named
// after the node and its data directory) and says once at start what is
// not enforced.
func (c *Config) cgroups(log *slog.Logger) (cgroupSetup, error) {
	if c.Cgroups == CgroupsOff {
		log.Info("cgroups off: tasks are not confined to their CPUs, memory and GPUs (--cgroups)")
		return cgroupSetup{}, nil
	}
	required := c.Cgroups == CgroupsRequired
	fallBack := func(err error) (cgroupSetup, error) {
		if required {
			return cgroupSetup{}, fmt.Errorf("--cgroups=required: %w", err)
		}
		log.Warn("cgroups unavailable: tasks are not confined to their CPUs, memory and GPUs, a task's processes that leave its process groups are not killed with it, and usage is not accounted (--cgroups)",
			"why", err.Error())
		return cgroupSetup{}, nil
	}
	host, err := cgroup.HostCPUs()
	if err != nil {
		return fallBack(err)
	}
	r, err := cgroup.Detect(c.treeKey())
	if err != nil {
		return fallBack(err)
	}
	h, err := cgroup.Open(r)
	if err != nil {
		return fallBack(err)
	}
	r.Has = h.Has() // Open learns what the kernel has (cgroup.kill)
	if missing := wantControllers(h.Version()) &^ r.Has; missing != 0 {
		if required {
			return cgroupSetup{}, fmt.Errorf("--cgroups=required: cgroup v%d lacks %s", h.Version(), missing)
		}
		log.Warn("cgroup controllers missing: what they enforce is not (--cgroups)", "version", h.Version(),
			"missing", missing.String(), "fallback", fallbackOf(missing))
	}
	if h.Version() == 2 && r.Has&cgroup.Devices == 0 {
		log.Warn("cgroup v2: GPU device confinement is not enforced (the BPF device program could not be loaded: it needs CAP_BPF or CAP_SYS_ADMIN and CONFIG_CGROUP_BPF); jobs can open every GPU of the node, CUDA_VISIBLE_DEVICES only steers them")
	}
	canon := cgroup.Canonical(host)
	if c.CPUs > len(canon) {
		log.Warn("the node claims more CPUs than the host has: cpusets map CPU positions modulo the host's and are approximate",
			"cpus", c.CPUs, "host_cpus", len(canon))
	}
	log.Info("tasks run in cgroups", "version", h.Version(), "controllers", r.Has.String(), "tree", r.Dirs)
	return cgroupSetup{root: &r, hostCPUs: canon}, nil
}

// fallbackOf says what the agent does without the missing controllers.
func fallbackOf(missing cgroup.Controller) string {
	var s string
	add := func(c cgroup.Controller, what string) {
		if missing&c != 0 {
			if s != "" {
				s += "; "
			}
			s += what
		}
	}
	add(cgroup.CPUSet, "no cpuset: tasks may run on every CPU")
	add(cgroup.Memory, "no memory limit, no OOM detection, no MaxRSS/AveRSS")
	add(cgroup.Pids, "no --task-pids-max")
	add(cgroup.Devices, "no GPU device confinement")
	add(cgroup.Kill, "the end of a task kills its cgroup without freezing it first")
	add(cgroup.CPUAcct, "no CPU time accounting")
	return s
}

// removeCgroupTree removes the agent's tree once its tasks are gone (a
// graceful stop); a tree still in use (tasks kept for a restart) stays.
func removeCgroupTree(r *cgroup.Root, log *slog.Logger) {
	if r == nil {
		return
	}
	h, err := cgroup.Attach(*r)
	if err != nil {
		return
	}
	if procs, err := h.Procs(""); err != nil || len(procs) > 0 {
		return
	}
	if err := h.Remove(""); err != nil && !errors.Is(err, os.ErrNotExist) {
		log.Warn("remove the agent's cgroup tree", "err", err)
	}
}

// treeKey names the agent's cgroup tree (cgroup.AgentKey).
func (c *Config) treeKey() string { return cgroup.AgentKey(c.Name, c.DataDir) }
