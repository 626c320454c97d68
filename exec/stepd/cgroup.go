package stepd

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/shoal-sched/shoal/cgroup"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
)

// Cgroups: with a cgroup tree in stepd.json (exec.Config.Cgroup), every
// task's processes live in a cgroup of their own from birth (the rank is
// forked into it, see cgroup.Hierarchy.ForkIn), under a cgroup of the job
// incarnation that holds the node's share of the allocation as limits:
// its CPUs (mapped to host CPUs through exec.Config.HostCPUs), its
// memory, its GPUs (the devices controller, v1), and, per task,
// exec.Config.TaskPidsMax. At the task's end everything left in the
// task's cgroup is killed — a daemon that left the ranks' process groups
// included — before the exit is recorded; the kernel's OOM kills turn an
// exit into cause "oom"; and the cgroup's usage goes into the exit
// record. The agent's recovery kills what is left in a lost task's cgroup
// (package exec).

const (
	// rssSample is how often a supervisor samples its task's memory for
	// AveRSS: cheap (one small file read), and often enough for jobs of
	// a few seconds.
	rssSample = 500 * time.Millisecond
	// minMemoryMiB is the least memory limit a job's cgroup gets, as
	// Slurm's MinRAMSpace (30 MB): a smaller one (--mem 1M) would have
	// the rank killed before its first instruction (the task namespace
	// helper alone needs a few MiB), not bound what the job uses.
	minMemoryMiB = 30
)

// taskLimits are the limits of l's job cgroup and task cgroup on a
// hierarchy that has has, from this node's share of the allocation:
// its CPUs mapped through hostCPUs (Canonical order; approximate when the
// node claims more CPUs than the host has), its memory, and its GPUs as
// device minors where the devices controller is there; pidsMax per task.
// A task of a step that holds its GPUs and CPUs (Spec.Exclusive) is
// confined to those in its task cgroup.
// A resource the hierarchy lacks is left out: the agent said so at start.
// It is pure.
func taskLimits(l task.Launch, hostCPUs []int, has cgroup.Controller, pidsMax int64) (job, task cgroup.Limits, approximate bool, err error) {
	if l.NodeIndex < 0 || l.NodeIndex >= len(l.Alloc.Nodes) {
		return job, task, false, fmt.Errorf("node index %d: want 0 to %d", l.NodeIndex, len(l.Alloc.Nodes)-1)
	}
	na := l.Alloc.Nodes[l.NodeIndex]
	if has&cgroup.CPUSet != 0 && len(na.CPUs) > 0 {
		job.CPUs, approximate, err = cgroup.MapCPUs(na.CPUs, hostCPUs)
		if err != nil {
			return job, task, false, fmt.Errorf("cpus: %w", err)
		}
	}
	if has&cgroup.Memory != 0 && na.MemMiB > 0 {
		if na.MemMiB > (1<<63-1)>>20 {
			return job, task, false, fmt.Errorf("memory %d MiB: too large", na.MemMiB)
		}
		job.MemoryBytes = max(na.MemMiB, minMemoryMiB) << 20
	}
	if has&cgroup.Devices != 0 {
		job.ConfineGPUs = true
		job.GPUs = append([]int(nil), na.GPUs...)
	}
	if has&cgroup.Pids != 0 && pidsMax > 0 {
		task.PidsMax = pidsMax
	}
	if l.Step != nil && l.Step.Spec.Exclusive {
		// A step that holds its GPUs and CPUs (not --overlap): its
		// task's cgroup, under the job's, has only those.
		_, sn, ok := l.StepShare()
		if !ok {
			return job, task, false, fmt.Errorf("step %d: node %.64q runs none of its tasks", l.Step.ID, na.Node)
		}
		if has&cgroup.CPUSet != 0 && len(sn.CPUs) > 0 {
			cpus, approx, err := cgroup.MapCPUs(sn.CPUs, hostCPUs)
			if err != nil {
				return job, task, false, fmt.Errorf("step cpus: %w", err)
			}
			task.CPUs, approximate = cpus, approximate || approx
		}
		if has&cgroup.Devices != 0 {
			task.ConfineGPUs = true
			task.GPUs = append([]int(nil), sn.GPUs...)
		}
	}
	return job, task, approximate, nil
}

// taskCgroup is a running task's cgroups, in its supervisor.
type taskCgroup struct {
	h         cgroup.Hierarchy
	job, path string
	// The AveRSS samples, written by the sampler only, read after it
	// stopped.
	rssSum, rssN uint64
}

// setupCgroup creates the task's cgroups with their limits.
func (s *supervisor) setupCgroup(log *slog.Logger) (*taskCgroup, error) {
	h, err := cgroup.Attach(*s.cfg.Cgroup)
	if err != nil {
		return nil, err
	}
	jl, tl, approx, err := taskLimits(s.cfg.Launch, s.cfg.HostCPUs, h.Has(), s.cfg.TaskPidsMax)
	if err != nil {
		return nil, err
	}
	if approx {
		log.Debug("cpuset approximate: the node claims more CPUs than the host has", "host_cpus", jl.CPUs)
	}
	job, path := task.CgroupPaths(s.key)
	// A sibling task of the same job may remove the job's cgroup as it
	// ends, between the two creates: try once more.
	for try := 0; ; try++ {
		err = h.Create(job, jl)
		if err == nil {
			err = h.Create(path, tl)
		}
		if err == nil || try == 1 || !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	log.Debug("task cgroup", "path", path, "cpus", cluster.CPUList(jl.CPUs), "memory", jl.MemoryBytes,
		"gpus", jl.GPUs, "pids_max", tl.PidsMax)
	return &taskCgroup{h: h, job: job, path: path}, nil
}

// signalOutside sends sig to every process in the task's cgroup that is
// in none of the process groups pgids (those were signalled by group,
// and must not get the signal twice).
func (c *taskCgroup) signalOutside(sig syscall.Signal, pgids []int) {
	pids, _ := c.h.Procs(c.path)
	for _, pid := range pids {
		if st, err := task.ReadStat(pid); err == nil && slices.Contains(pgids, st.PGrp) {
			continue
		}
		_ = syscall.Kill(pid, sig)
	}
}

// sample adds the task's memory now to the AveRSS samples every
// rssSample until stop is closed.
func (c *taskCgroup) sample(stop <-chan struct{}) {
	if c.h.Has()&cgroup.Memory == 0 {
		return
	}
	tick := time.NewTicker(rssSample)
	defer tick.Stop()
	for {
		if s, err := c.h.Stats(c.path); err == nil && s.MemNow > 0 {
			c.rssSum += s.MemNow
			c.rssN++
		}
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

// end kills whatever is left in the task's cgroup, reads its usage and
// removes it (and the job's, once no other task of the job has one). It
// returns the usage (nil when none could be read) and whether the kernel
// OOM-killed one of its processes.
func (c *taskCgroup) end(log *slog.Logger) (*cluster.Usage, bool) {
	if err := c.h.Kill(c.path, task.GoneWait); err != nil {
		log.Error("kill the task's cgroup", "err", err)
	}
	var u *cluster.Usage
	s, err := c.h.Stats(c.path)
	if err != nil {
		log.Warn("task usage", "err", err)
	} else if c.h.Has()&(cgroup.Memory|cgroup.CPUAcct) != 0 {
		u = &cluster.Usage{MaxRSS: s.MemPeak, UserCPU: s.UserCPU, SystemCPU: s.SystemCPU}
		if c.rssN > 0 {
			u.AveRSS = c.rssSum / c.rssN
		}
	}
	if err := c.h.Remove(c.path); err != nil {
		log.Warn("remove the task's cgroup", "err", err)
	}
	// Kept while another task of the job has a cgroup here: the last removes it.
	_ = c.h.Prune(c.job)
	return u, s.OOMKills > 0
}

// enterForFork is called on the locked OS thread that forks a rank,
// just before the fork: the child is born in the task's cgroup (when
// there is one) with oom_score_adj 0, whatever protects the supervisor.
// The returned function undoes both once the child is forked.
func enterForFork(c *taskCgroup, attr *syscall.SysProcAttr) (func(), error) {
	var undo []func()
	done := func() {
		for _, u := range undo {
			u()
		}
	}
	if c != nil {
		leave, err := c.h.ForkIn(c.path, attr)
		if err != nil {
			return nil, err
		}
		undo = append(undo, leave)
	}
	if restore, err := resetOOMScore(); err != nil {
		done()
		return nil, err
	} else if restore != nil {
		undo = append(undo, restore)
	}
	return done, nil
}

const oomScoreFile = "/proc/self/oom_score_adj"

// resetOOMScore sets this process's oom_score_adj to 0 while a rank is
// forked, so the rank starts with the default (it is inherited at fork),
// and returns what puts the supervisor's back. oom_score_adj belongs to
// the process, not the thread; a supervisor forks one rank at a time, and
// the kernel's memory-cgroup OOM killer never looks outside the task's
// cgroup, so the moment unprotected is only exposed to a global OOM.
func resetOOMScore() (restore func(), err error) {
	b, err := os.ReadFile(oomScoreFile)
	if err != nil {
		return nil, nil // no procfs knob: nothing to reset
	}
	old := strings.TrimSpace(string(b))
	if old == "0" {
		return nil, nil
	}
	if err := os.WriteFile(oomScoreFile, []byte("0"), 0); err != nil {
		return nil, fmt.Errorf("oom_score_adj 0 for the rank: %w", err)
	}
	return func() { _ = os.WriteFile(oomScoreFile, []byte(old), 0) }, nil
}
