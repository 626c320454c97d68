package exec

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/shoal-sched/shoal/exec/task"
)

// orphan is a task a previous agent started and never recorded the end of.
type orphan struct {
	key   TaskKey
	dir   string
	start time.Time
	procs []task.ProcRecord
}

// recover loads the pending exits, reattaches to the tasks whose
// supervisors still run, and turns every orphaned task into a lost one,
// after killing what is left of it.
func (e *Executor) recover(ctx context.Context) error {
	entries, err := os.ReadDir(e.jobs)
	if err != nil {
		return err
	}
	var orphans []orphan
	var reattached []*tracked
	for _, d := range entries {
		key, ok := task.ParseDirName(d.Name())
		if !ok || !d.IsDir() {
			continue
		}
		dir := filepath.Join(e.jobs, d.Name())
		log := e.log.With("task", key)

		var rec task.ExitRecord
		err := task.ReadJSON(dir, task.ExitFile, &rec)
		switch {
		case err == nil:
			acked, err := task.Exists(filepath.Join(dir, task.AckFile))
			if err != nil {
				return err
			}
			if !acked {
				e.pending[key] = exitOf(rec, key)
			}
			continue
		case !errors.Is(err, fs.ErrNotExist):
			// Atomic writes make this disk damage: count the task lost.
			log.Error("unreadable exit record, recording the task as lost", "err", err)
		}

		var start task.StartRecord
		if err := task.ReadJSON(dir, task.StartFile, &start); errors.Is(err, fs.ErrNotExist) {
			continue // crashed before the start record: nothing was forked
		} else if err != nil {
			log.Error("unreadable start record", "err", err)
		}
		if t, ok := e.reattach(key, dir); ok {
			log.Info("reattached to the supervisor of a running task")
			e.running[key] = t
			reattached = append(reattached, t)
			continue
		}
		// The supervisor is gone; perhaps it recorded the exit just now.
		if err := task.ReadJSON(dir, task.ExitFile, &rec); err == nil {
			e.pending[key] = exitOf(rec, key)
			continue
		}
		procs, errs := task.ReadProcs(dir)
		for _, err := range errs {
			log.Error("unreadable proc record", "err", err)
		}
		orphans = append(orphans, orphan{key: key, dir: dir, start: start.Start, procs: procs})
	}
	for _, t := range reattached {
		e.wg.Go(func() { e.watch(t, outcome{code: task.CodeLost, cause: task.CauseLost}) })
	}
	if len(orphans) == 0 {
		return nil
	}

	killed, err := e.killOrphans(orphans)
	if err != nil {
		return err
	}
	if alive := waitPIDsGone(ctx, killed, task.GoneWait); len(alive) > 0 {
		e.log.Error("processes of lost tasks survived SIGKILL", "pids", alive)
	}
	for _, o := range orphans {
		// What escaped the groups and rewrote its environment is still in
		// the task's cgroup.
		e.killLostCgroup(o)
	}
	now := time.Now()
	for _, o := range orphans {
		rec := task.ExitRecord{Job: o.key.Job, Incarnation: o.key.Incarnation, Step: task.StepField(o.key.Step),
			Node: e.cfg.NodeName, ExitCode: task.CodeLost, Cause: task.CauseLost, Start: o.start, End: now}
		if err := task.WriteJSON(o.dir, task.ExitFile, rec); err != nil {
			return fmt.Errorf("job %s: %w", o.key, err)
		}
		e.log.Warn("task lost across an agent restart", "task", o.key)
		e.pending[o.key] = exitOf(rec, o.key)
	}
	return nil
}

// reattach returns the task of dir, key, when its supervisor still
// listens.
func (e *Executor) reattach(key TaskKey, dir string) (*tracked, bool) {
	var sc task.StepdConfig
	if err := task.ReadJSON(dir, task.StepdFile, &sc); err != nil || sc.Launch.Key() != key {
		return nil, false // started before supervisors, or never spawned
	}
	if !supervisorListens(dir) {
		return nil, false
	}
	return &tracked{key: key, dir: dir, start: sc.Start, script: sc.Launch.BatchScript(),
		done: make(chan struct{}), launched: true}, true
}

// killOrphans sends SIGKILL to every live process that belongs to an
// orphaned task and returns them with their start times. A process belongs
// to one when
//   - it is a recorded rank leader: same pid and same start time, so a
//     recycled pid is never killed;
//   - it is in the process group of such a verified leader; or
//   - its environment carries the task's markers (SHOAL_JOB_ID,
//     SHOAL_INCARNATION, SHOAL_STEP_ID for a step, SHOAL_NODE_NAME = this
//     node), which finds ranks' children after their leader died
//     (Pdeathsig kills only the leader), and a supervisor that never
//     began to listen (its agent died while starting it).
func (e *Executor) killOrphans(orphans []orphan) (map[int]uint64, error) {
	leaders := make(map[int]uint64)
	tasks := make(map[TaskKey]bool)
	for _, o := range orphans {
		tasks[o.key] = true
		for _, p := range o.procs {
			leaders[p.PID] = p.StartTicks
		}
	}
	pids, err := task.ListPIDs()
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	stats := make(map[int]task.ProcStat, len(pids))
	groups := make(map[int]bool) // verified leaders' groups
	for _, pid := range pids {
		if pid == self {
			continue
		}
		st, err := task.ReadStat(pid)
		if err != nil || st.Dead() {
			continue
		}
		stats[pid] = st
		if ticks, ok := leaders[pid]; ok && ticks == st.StartTicks {
			groups[pid] = true
		}
	}
	killed := make(map[int]uint64)
	for pid, st := range stats {
		mine := groups[st.PGrp]
		if !mine {
			key, node, ok := task.EnvironMarks(pid)
			mine = ok && node == e.cfg.NodeName && tasks[key]
		}
		if !mine {
			continue
		}
		// The pidfd behind os.FindProcess pins this process: if the start
		// time still matches after opening it, the signal reaches it and
		// no other.
		p, err := os.FindProcess(pid)
		if err != nil {
			continue
		}
		if task.SameProcessAlive(pid, st.StartTicks) {
			if err := p.Signal(syscall.SIGKILL); err == nil {
				killed[pid] = st.StartTicks
				e.log.Warn("killed process of a lost task", "pid", pid)
			}
		}
		p.Release()
	}
	// Members forked between the scan and the kills.
	for pg := range groups {
		_ = syscall.Kill(-pg, syscall.SIGKILL)
	}
	return killed, nil
}

// waitPIDsGone waits up to bound (or ctx) until none of the processes is
// alive and returns those still alive.
func waitPIDsGone(ctx context.Context, procs map[int]uint64, bound time.Duration) []int {
	t := time.NewTimer(bound)
	defer t.Stop()
	tick := time.NewTicker(task.GonePoll)
	defer tick.Stop()
	for {
		var alive []int
		for pid, ticks := range procs {
			if task.SameProcessAlive(pid, ticks) {
				alive = append(alive, pid)
			}
		}
		if len(alive) == 0 {
			return nil
		}
		select {
		case <-tick.C:
		case <-t.C:
			return alive
		case <-ctx.Done():
			return alive
		}
	}
}
