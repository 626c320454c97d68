package node

import (
	"context"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/leader"
)

// archiver is the leader's archive loop (leader.Archiver) over this agent.
func (a *Agent) archiver() leader.Archiver {
	return leader.Archiver{State: a.state, Propose: agentLeader{a}, Clock: wallClock{}, Log: a.log}
}

// Bounds of the output cleanup loop.
const (
	cleanupIntervalMax = 10 * time.Minute
	cleanupIntervalMin = time.Second
)

// outputsToForget is the cleanup loop's pure decision: of the jobs with
// task directories on this node, those to remove at now. A live job keeps
// them; an archived one keeps them for the policy's OutputRetention after
// it ended; one the cluster no longer knows (dropped from a full archive)
// loses them. The caller runs it only on a replica that has caught up, so
// "unknown" cannot mean "not replicated here yet".
func outputsToForget(v *fsm.View, stored []cluster.JobID, now time.Time) []cluster.JobID {
	keep := v.Policy().Retention()
	var out []cluster.JobID
	for _, id := range stored {
		if _, live := v.Job(id); live {
			continue
		}
		if j, archived := v.ArchivedJob(id); archived && now.Sub(j.EndTime) < keep {
			continue
		}
		out = append(out, id)
	}
	return out
}

// workerOutputsToForget is outputsToForget on a worker, whose view (from
// its server, follow.go) holds only the jobs that still hold this node
// and no archive: a job's directories go once it has been out of that
// view for the policy's OutputRetention. gone remembers since when each
// stored job was out of it, and is updated in place; it lives in memory,
// so after a restart the retention counts again from the restart (later,
// never sooner).
func workerOutputsToForget(v *fsm.View, stored []cluster.JobID, gone map[cluster.JobID]time.Time, now time.Time) []cluster.JobID {
	keep := v.Policy().Retention()
	var out []cluster.JobID
	seen := make(map[cluster.JobID]bool, len(stored))
	for _, id := range stored {
		seen[id] = true
		if _, live := v.Job(id); live {
			delete(gone, id)
			continue
		}
		since, ok := gone[id]
		if !ok {
			gone[id] = now
			continue
		}
		if now.Sub(since) >= keep {
			out = append(out, id)
		}
	}
	for id := range gone {
		if !seen[id] {
			delete(gone, id)
		}
	}
	return out
}

// cleanupLoop removes the task directories of jobs past their output
// retention, so a node's disk and its restart scan stay bounded. It scans
// at most every tenth of the retention (between a second and ten
// minutes), and wakes on state changes so a new policy takes effect at
// once.
func (a *Agent) cleanupLoop(ctx context.Context) {
	var lastScan time.Time
	gone := map[cluster.JobID]time.Time{} // a worker's (workerOutputsToForget)
	for {
		v := a.state.View()
		worker := a.outside(ctx)
		if worker {
			// A worker's replica is not kept current: its jobs come from a
			// server, with no archive (follow.go).
			v = a.remote.current()
		}
		if v == nil {
			v = a.state.View() // nothing followed yet: wait
		}
		every := min(max(v.Policy().Retention()/10, cleanupIntervalMin), cleanupIntervalMax)
		now := time.Now()
		switch {
		case now.Sub(lastScan) < every:
		case worker && a.remote.current() != nil:
			lastScan = now
			stored, err := a.exec.StoredJobs()
			if err != nil {
				a.log.Warn("list task directories", "err", err)
				break
			}
			a.forget(workerOutputsToForget(v, stored, gone, now))
		case !worker && a.caughtUp() && a.state.Diverged() == nil:
			lastScan = now
			clear(gone)
			a.forgetOutputs(v, now)
		}
		select {
		case <-ctx.Done():
			return
		case <-v.Changed():
		case <-time.After(max(time.Until(lastScan.Add(every)), cleanupIntervalMin)):
		}
	}
}

func (a *Agent) forgetOutputs(v *fsm.View, now time.Time) {
	stored, err := a.exec.StoredJobs()
	if err != nil {
		a.log.Warn("list task directories", "err", err)
		return
	}
	a.forget(outputsToForget(v, stored, now))
}

// forget removes the task directories of jobs ids.
func (a *Agent) forget(ids []cluster.JobID) {
	for _, id := range ids {
		if n, err := a.exec.Forget(id); err != nil {
			a.log.Debug("remove a finished job's task directories", "job", uint64(id), "err", err)
		} else if n > 0 {
			a.log.Info("removed a finished job's task directories", "job", uint64(id), "dirs", n)
		}
	}
}
