package exec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/shoal-sched/shoal/cgroup"
	"github.com/shoal-sched/shoal/exec/task"
)

// oomScoreFile is this process's OOM killer adjustment.
const oomScoreFile = "/proc/self/oom_score_adj"

// ProtectFromOOM sets this process's oom_score_adj to -1000, so the
// kernel's OOM killer never picks the agent or a supervisor (which
// inherits it) over a job's processes; ranks get 0 back (enterForFork).
// It needs root (CAP_SYS_RESOURCE).
func ProtectFromOOM() error {
	if err := os.WriteFile(oomScoreFile, []byte("-1000"), 0); err != nil {
		return fmt.Errorf("oom_score_adj -1000: %w", err)
	}
	return nil
}

// killLostCgroup kills what is left in the cgroup of a task whose
// supervisor died (its stepd.json names the tree it used) and removes it.
func (e *Executor) killLostCgroup(o orphan) {
	var sc task.StepdConfig
	if err := task.ReadJSON(o.dir, task.StepdFile, &sc); err != nil || sc.Cgroup == nil {
		return
	}
	h, err := cgroup.Attach(*sc.Cgroup)
	if err != nil {
		return
	}
	job, path := task.CgroupPaths(o.key)
	if err := h.Kill(path, task.GoneWait); err != nil && !errors.Is(err, fs.ErrNotExist) {
		e.log.Error("kill the cgroup of a lost task", "task", o.key, "err", err)
	}
	_ = h.Remove(path)
	_ = h.Prune(job)
}
