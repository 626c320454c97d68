package exec

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
)

// StoredJobs returns, in ascending order, the jobs that have task
// directories on this node.
func (e *Executor) StoredJobs() ([]cluster.JobID, error) {
	entries, err := os.ReadDir(e.jobs)
	if err != nil {
		return nil, fmt.Errorf("stored jobs: %w", err)
	}
	var out []cluster.JobID
	for _, d := range entries {
		if key, ok := task.ParseDirName(d.Name()); ok && d.IsDir() && !slices.Contains(out, key.Job) {
			out = append(out, key.Job)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Forget removes job's task directories — records, scripts and rank
// output — on this node, once every task of it has ended and its exit was
// acknowledged by the leader; a task still running or with an exit not yet
// acknowledged keeps its directory (and Forget says so). It returns how
// many directories it removed.
func (e *Executor) Forget(job cluster.JobID) (int, error) {
	entries, err := os.ReadDir(e.jobs)
	if err != nil {
		return 0, fmt.Errorf("forget job %s: %w", job, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	removed := 0
	for _, d := range entries {
		key, ok := task.ParseDirName(d.Name())
		if !ok || key.Job != job || !d.IsDir() {
			continue
		}
		if _, running := e.running[key]; running {
			return removed, fmt.Errorf("forget job %s: task %s still runs here", job, key)
		}
		if _, pending := e.pending[key]; pending {
			return removed, fmt.Errorf("forget job %s: task %s's exit is not acknowledged yet", job, key)
		}
		dir := filepath.Join(e.jobs, d.Name())
		acked, err := task.Exists(filepath.Join(dir, task.AckFile))
		if err != nil {
			return removed, fmt.Errorf("forget job %s: %w", job, err)
		}
		started, err := task.Exists(filepath.Join(dir, task.StartFile))
		if err != nil {
			return removed, fmt.Errorf("forget job %s: %w", job, err)
		}
		if started && !acked {
			return removed, fmt.Errorf("forget job %s: task %s has no acknowledged exit", job, key)
		}
		if err := os.RemoveAll(dir); err != nil {
			return removed, fmt.Errorf("forget job %s: %w", job, err)
		}
		removed++
	}
	return removed, nil
}
